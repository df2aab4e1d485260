// axl_level_zero_probe PLUGIN: loads the level_zero plugin the way the core
// does (dlopen + axl_plugin_negotiate, against plugin.h alone), with host
// services that record every log line and error report, then calls
// backend_device_count and backend_init and prints key=value lines:
//   count.status / count.value       backend_device_count
//   count.native_code / .native_name / .message   its report_error
//   init.status / init.native_code / init.native_name / init.message
//   log.N.level / log.N.message      every host->log call, in order
// The environment (AXL_LEVEL_ZERO_LOADER_PATH) is the caller's.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "axl/plugin.h"

namespace {

struct Report {
  axl_status status = AXL_SUCCESS;
  int64_t native_code = 0;
  std::string native_name, message;
};

std::mutex g_mu;
std::vector<std::pair<int32_t, std::string>> g_logs;
Report g_last;

void on_log(void*, int32_t level, const char* message) {
  std::lock_guard<std::mutex> lk(g_mu);
  g_logs.emplace_back(level, message ? message : "");
}

void on_error(void*, axl_status status, int64_t code, const char* name, const char* message) {
  std::lock_guard<std::mutex> lk(g_mu);
  g_last = Report{status, code, name ? name : "", message ? message : ""};
}

void on_trace(void*, const axl_trace_record*) {}

void kv(const std::string& k, const std::string& v) {
  std::string line;
  for (char c : v) line += c == '\n' ? std::string("\\n") : std::string(1, c);
  std::printf("%s=%s\n", k.c_str(), line.c_str());
}

void print_call(const std::string& prefix, axl_status s) {
  kv(prefix + ".status", std::to_string(static_cast<int>(s)));
  if (s == AXL_SUCCESS) return;
  std::lock_guard<std::mutex> lk(g_mu);
  kv(prefix + ".native_code", std::to_string(g_last.native_code));
  kv(prefix + ".native_name", g_last.native_name);
  kv(prefix + ".message", g_last.message);
  g_last = Report{};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PLUGIN\n", argv[0]);
    return 2;
  }
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    kv("load", dlerror());
    return 1;
  }
  auto negotiate = reinterpret_cast<axl_plugin_negotiate_fn>(dlsym(h, AXL_PLUGIN_ENTRY_SYMBOL));
  static const axl_host_services host = {sizeof(axl_host_services), nullptr, on_log, on_error,
                                         on_trace};
  axl_negotiate_args args{};
  args.struct_size = sizeof args;
  args.core_abi_major = AXL_PLUGIN_ABI_MAJOR;
  args.core_abi_minor = AXL_PLUGIN_ABI_MINOR;
  args.host = &host;
  if (negotiate == nullptr || negotiate(&args) != AXL_SUCCESS || args.table == nullptr) {
    kv("negotiate", "failed");
    return 1;
  }
  kv("negotiate", "ok");
  kv("name", args.info->name);
  uint32_t n = 12345;
  axl_status s = args.table->backend_device_count(&n);
  print_call("count", s);
  if (s == AXL_SUCCESS) kv("count.value", std::to_string(n));
  print_call("init", args.table->backend_init());
  std::lock_guard<std::mutex> lk(g_mu);
  kv("logs", std::to_string(g_logs.size()));
  for (size_t i = 0; i < g_logs.size(); ++i) {
    kv("log." + std::to_string(i) + ".level", std::to_string(g_logs[i].first));
    kv("log." + std::to_string(i) + ".message", g_logs[i].second);
  }
  return 0;
}
