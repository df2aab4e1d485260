// The virtual plugin without the core: dlopen it, negotiate with host
// services that record what it logs, reports and traces, and call its table
// directly. For what the core never lets through (an out-of-bounds copy, an
// address of another device, backend_set_option), so the plugin's own checks
// can be tested.
#pragma once

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "axl/plugin.h"

namespace vd {

struct Report {
  axl_status status;
  int64_t native_code;
  std::string native_name;
  std::string message;
};

struct TraceEntry {
  int32_t kind, memcpy_kind;
  std::string name;
  uint64_t bytes;
};

// One per process: the plugin keeps the host pointer for the process's life.
struct Host {
  axl_host_services services{};
  std::mutex mu;
  std::vector<std::string> logs;
  std::vector<Report> reports;
  std::vector<TraceEntry> traces;

  Host() {
    services.struct_size = sizeof services;
    services.ctx = this;
    services.log = [](void* ctx, int32_t, const char* message) {
      auto* h = static_cast<Host*>(ctx);
      std::lock_guard<std::mutex> lk(h->mu);
      h->logs.emplace_back(message ? message : "");
    };
    services.report_error = [](void* ctx, axl_status s, int64_t code, const char* name, const char* message) {
      auto* h = static_cast<Host*>(ctx);
      std::lock_guard<std::mutex> lk(h->mu);
      h->reports.push_back({s, code, name ? name : "", message ? message : ""});
    };
    services.trace_record = [](void* ctx, const axl_trace_record* r) {
      auto* h = static_cast<Host*>(ctx);
      std::lock_guard<std::mutex> lk(h->mu);
      h->traces.push_back({r->kind, r->memcpy_kind, r->name ? r->name : "",
                           r->kind == AXL_TRACE_MEMSET ? r->memset_bytes : r->memcpy_bytes});
    };
  }
  Report last_report() {
    std::lock_guard<std::mutex> lk(mu);
    return reports.empty() ? Report{AXL_SUCCESS, 0, "", ""} : reports.back();
  }
  std::string all_logs() {
    std::lock_guard<std::mutex> lk(mu);
    std::string out;
    for (const auto& l : logs) out += l + "\n";
    return out;
  }
};

struct Plugin {
  Host* host = nullptr;
  const axl_plugin_info* info = nullptr;
  const axl_plugin_table* t = nullptr;
  std::string error;  // why loading failed, if it did
};

// Loads AXL_VIRTUAL_PLUGIN_PATH once and negotiates; `error` is set on failure.
inline Plugin& plugin() {
  static Plugin p = [] {
    Plugin out;
    void* dl = dlopen(AXL_VIRTUAL_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
      out.error = std::string("dlopen failed: ") + dlerror();
      return out;
    }
    auto entry = reinterpret_cast<axl_plugin_negotiate_fn>(dlsym(dl, AXL_PLUGIN_ENTRY_SYMBOL));
    if (!entry) {
      out.error = "no axl_plugin_negotiate";
      return out;
    }
    out.host = new Host();  // never freed: the plugin keeps the pointer
    axl_negotiate_args args{};
    args.struct_size = sizeof args;
    args.core_abi_major = AXL_PLUGIN_ABI_MAJOR;
    args.core_abi_minor = AXL_PLUGIN_ABI_MINOR;
    args.host = &out.host->services;
    if (axl_status s = entry(&args)) {
      out.error = "negotiate failed with status " + std::to_string(s);
      return out;
    }
    out.info = args.info;
    out.t = args.table;
    return out;
  }();
  return p;
}

}  // namespace vd
