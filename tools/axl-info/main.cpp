// axl-info: lists what plugin discovery considered and every device it found.
//
// Written against the C header alone (plugin records and the discovery trace
// have no C++ wrapper, and the C calls report a failed backend without
// exceptions), so whatever this tool can show, any language binding can.
// Everything is gathered first and printed afterwards: initialising a
// backend while listing devices can turn its plugin record from "loaded"
// into "unavailable", and the report must show the final state.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "axl/axl.h"

namespace {

// ---------------------------------------------------------------------------
// What was found
// ---------------------------------------------------------------------------

struct ErrorDetail {
  axl_status status = AXL_SUCCESS;
  std::string backend;
  int64_t native_code = 0;
  std::string native_name;
  std::string message;
};

// Copies the thread's last-error record at once: its strings only live until
// the next failing axl call.
ErrorDetail last_error(axl_status status) {
  ErrorDetail d;
  d.status = status;
  axl_error_info e{};
  e.struct_size = sizeof e;
  if (axl_last_error(&e) == AXL_SUCCESS && e.status != AXL_SUCCESS) {
    d.backend = e.backend ? e.backend : "";
    d.native_code = e.native_code;
    d.native_name = e.native_name ? e.native_name : "";
    d.message = e.message ? e.message : "";
  }
  if (d.message.empty()) d.message = axl_status_name(status);
  return d;
}

struct PluginView {
  std::string path, name, api, version, reason;
  uint32_t abi_major = 0, abi_minor = 0, device_count = 0, flags = 0;
  int32_t state = AXL_PLUGIN_STATE_SKIPPED;
  axl_status status = AXL_SUCCESS;
};

struct DeviceView {
  // A device that could be opened...
  std::string backend, label, api, architecture, model;
  uint32_t id = 0, backend_index = 0;
  uint64_t total_memory = 0, max_single_alloc = 0;
  std::optional<uint64_t> free_memory;  // empty when the backend cannot say
  std::string free_memory_error;
  bool is_host = false, is_host_unified = false, is_compatible = false;
  // ...or the devices of a backend that failed to initialise.
  std::optional<ErrorDetail> error;
  uint32_t failed_devices = 0;
};

struct Report {
  std::string version;
  uint32_t abi = 0;
  std::optional<ErrorDetail> init_error;
  std::optional<ErrorDetail> device_list_error;
  std::vector<PluginView> plugins;
  std::vector<DeviceView> devices;
  std::string discovery_log;
};

void fill_device(axl_device_t d, DeviceView& v) {
  axl_device_info i{};
  i.struct_size = sizeof i;
  if (axl_status s = axl_device_get_info(d, &i)) {
    v.error = last_error(s);
    v.failed_devices = 1;
    return;
  }
  v.backend = i.backend ? i.backend : "";
  v.label = i.label ? i.label : "";
  v.api = i.api ? i.api : "";
  v.architecture = i.architecture_name ? i.architecture_name : "";
  v.model = i.model_name ? i.model_name : "";
  v.id = i.id;
  v.backend_index = i.backend_index;
  v.total_memory = i.total_memory_bytes;
  v.max_single_alloc = i.max_single_alloc_bytes;
  v.is_host = i.is_host != 0;
  v.is_host_unified = i.is_host_unified != 0;
  v.is_compatible = i.is_compatible != 0;
  uint64_t free_bytes = 0, total_bytes = 0;
  if (axl_status s = axl_device_get_memory_info(d, &free_bytes, &total_bytes)) {
    ErrorDetail e = last_error(s);
    v.free_memory_error = std::string(axl_status_name(s)) + ": " + e.message;
  } else {
    v.free_memory = free_bytes;
  }
}

void collect_devices(Report& r) {
  uint32_t count = 0;
  if (axl_status s = axl_device_count(nullptr, &count)) {
    r.device_list_error = last_error(s);
    return;
  }
  for (uint32_t i = 0; i < count;) {
    axl_device_t d = nullptr;
    axl_status s = axl_device_get(nullptr, i, &d);
    if (s == AXL_SUCCESS) {
      DeviceView v;
      fill_device(d, v);
      axl_device_release(d);
      r.devices.push_back(std::move(v));
      ++i;
      continue;
    }
    DeviceView v;
    v.error = last_error(s);
    v.backend = v.error->backend;
    // A backend whose initialisation failed stops contributing devices, so
    // the count shrinks and index i now names the next backend's first
    // device. If the count did not shrink the failure was this device's
    // alone; step over it so the loop always ends.
    uint32_t now = 0;
    if (axl_device_count(nullptr, &now) == AXL_SUCCESS && now < count) {
      v.failed_devices = count - now;
      count = now;
    } else {
      v.failed_devices = 1;
      ++i;
    }
    r.devices.push_back(std::move(v));
  }
}

void collect_plugins(Report& r) {
  uint32_t n = 0;
  if (axl_plugin_count(&n) != AXL_SUCCESS) return;
  for (uint32_t i = 0; i < n; ++i) {
    axl_plugin_record rec{};
    rec.struct_size = sizeof rec;
    if (axl_plugin_get_record(i, &rec) != AXL_SUCCESS) continue;
    PluginView p;
    p.path = rec.path ? rec.path : "";
    p.name = rec.name ? rec.name : "";
    p.api = rec.api ? rec.api : "";
    p.version = rec.version ? rec.version : "";
    p.reason = rec.reason ? rec.reason : "";
    p.abi_major = rec.abi_major;
    p.abi_minor = rec.abi_minor;
    p.device_count = rec.device_count;
    p.flags = rec.flags;
    p.state = rec.state;
    p.status = rec.status;
    r.plugins.push_back(std::move(p));
  }
}

std::string read_discovery_log() {
  size_t need = 0;
  if (axl_discovery_log(nullptr, 0, &need) != AXL_SUCCESS || need == 0) return {};
  std::string buf(need, '\0');
  if (axl_discovery_log(buf.data(), buf.size(), &need) != AXL_SUCCESS) return {};
  buf.resize(strnlen(buf.c_str(), buf.size()));
  return buf;
}

Report collect(bool with_discovery_log) {
  Report r;
  r.version = axl_version_string();
  r.abi = axl_abi_version();
  // Once axl_init has failed every device call answers with the same error,
  // so the devices are left unlisted rather than reported twice.
  if (axl_status s = axl_init()) r.init_error = last_error(s);
  else collect_devices(r);
  collect_plugins(r);
  if (with_discovery_log) r.discovery_log = read_discovery_log();
  return r;
}

// ---------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------


std::vector<std::string> flag_names(uint32_t flags) {
  static const struct {
    uint32_t bit;
    const char* name;
  } kFlags[] = {{AXL_PLUGIN_FLAG_HOST, "host"},
                {AXL_PLUGIN_FLAG_FORK_SAFE, "fork_safe"},
                {AXL_PLUGIN_FLAG_VIRTUAL, "virtual"},
                {AXL_PLUGIN_FLAG_EXPERIMENTAL, "experimental"}};
  std::vector<std::string> out;
  for (const auto& f : kFlags)
    if (flags & f.bit) {
      out.emplace_back(f.name);
      flags &= ~f.bit;
    }
  // A newer plugin may declare bits this tool does not know; show them raw
  // rather than hiding them.
  if (flags) {
    char hex[32];
    snprintf(hex, sizeof hex, "0x%" PRIx32, flags);
    out.emplace_back(hex);
  }
  return out;
}

std::string gib(uint64_t bytes) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
  return buf;
}

std::string abi_string(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t nl = s.find('\n', start);
    if (nl == std::string::npos) nl = s.size();
    out.push_back(s.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

// ---------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------

// Appends `s` as the body of a JSON string. JSON text must be valid UTF-8,
// but paths and dlerror() messages are arbitrary bytes; an invalid sequence
// becomes U+FFFD so one odd file name cannot make a whole bug report
// unparsable.
void json_escape(std::string_view s, std::string& out) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          if (c < 0x20) {
            char u[8];
            snprintf(u, sizeof u, "\\u%04x", c);
            out += u;
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    // Length and the allowed range of the second byte (RFC 3629 table),
    // which rules out overlong forms, surrogates and values past U+10FFFF.
    size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) { len = 3; lo = 0xA0; }
    else if (c >= 0xE1 && c <= 0xEC) len = 3;
    else if (c == 0xED) { len = 3; hi = 0x9F; }
    else if (c >= 0xEE && c <= 0xEF) len = 3;
    else if (c == 0xF0) { len = 4; lo = 0x90; }
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else if (c == 0xF4) { len = 4; hi = 0x8F; }
    bool ok = len != 0 && i + len <= n && p[i + 1] >= lo && p[i + 1] <= hi;
    for (size_t k = 2; ok && k < len; ++k) ok = p[i + k] >= 0x80 && p[i + k] <= 0xBF;
    if (ok) {
      out.append(s.data() + i, len);
      i += len;
    } else {
      out += "\\ufffd";
      ++i;
    }
  }
}

// A pretty-printing writer that tracks commas and nesting, so the report
// code reads as the document's shape.
class JsonWriter {
 public:
  void begin_object() { open('{'); }
  void end_object() { close('}'); }
  void begin_array() { open('['); }
  void end_array() { close(']'); }
  void key(std::string_view k) {
    separate();
    out_ += '"';
    json_escape(k, out_);
    out_ += "\": ";
    after_key_ = true;
  }
  void str(std::string_view v) {
    separate();
    out_ += '"';
    json_escape(v, out_);
    out_ += '"';
  }
  void num(uint64_t v) {
    separate();
    out_ += std::to_string(v);
  }
  void num_signed(int64_t v) {
    separate();
    out_ += std::to_string(v);
  }
  void boolean(bool v) {
    separate();
    out_ += v ? "true" : "false";
  }
  void null() {
    separate();
    out_ += "null";
  }
  // Shorthands for "key": value.
  void field(std::string_view k, std::string_view v) { key(k); str(v); }
  void field_num(std::string_view k, uint64_t v) { key(k); num(v); }
  void field_bool(std::string_view k, bool v) { key(k); boolean(v); }
  const std::string& text() const { return out_; }

 private:
  void open(char c) {
    separate();
    out_ += c;
    first_.push_back(true);
  }
  void close(char c) {
    const bool empty = first_.back();
    first_.pop_back();
    if (!empty) newline();
    out_ += c;
  }
  // Before any value or key: a comma unless first in its container, then a
  // new line; a value right after its key stays on the key's line.
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (first_.empty()) return;
    if (!first_.back()) out_ += ',';
    first_.back() = false;
    newline();
  }
  void newline() {
    out_ += '\n';
    out_.append(2 * first_.size(), ' ');
  }

  std::string out_;
  std::vector<bool> first_;  // per open container: nothing written yet
  bool after_key_ = false;
};

void json_error(JsonWriter& j, const ErrorDetail& e) {
  j.begin_object();
  j.field("status", axl_status_name(e.status));
  j.field_num("status_code", static_cast<uint64_t>(e.status));
  j.field("backend", e.backend);
  j.key("native_code");
  j.num_signed(e.native_code);
  j.field("native_name", e.native_name);
  j.field("message", e.message);
  j.end_object();
}

std::string to_json(const Report& r, bool verbose) {
  JsonWriter j;
  j.begin_object();

  j.key("core");
  j.begin_object();
  j.field("version", r.version);
  j.field("abi", abi_string(r.abi >> 16, r.abi & 0xffffu));
  j.key("init_error");
  if (r.init_error) json_error(j, *r.init_error); else j.null();
  j.end_object();

  j.key("plugins");
  j.begin_array();
  for (const PluginView& p : r.plugins) {
    j.begin_object();
    j.field("path", p.path);
    j.field("name", p.name);
    j.field("api", p.api);
    j.field("version", p.version);
    j.field("abi", p.abi_major ? abi_string(p.abi_major, p.abi_minor) : "");
    j.field("state", axl_plugin_state_name(p.state));
    j.field("status", axl_status_name(p.status));
    j.field("reason", p.reason);
    j.field_num("device_count", p.device_count);
    j.key("flags");
    j.begin_array();
    for (const std::string& f : flag_names(p.flags)) j.str(f);
    j.end_array();
    j.end_object();
  }
  j.end_array();

  j.key("devices");
  j.begin_array();
  for (const DeviceView& d : r.devices) {
    j.begin_object();
    j.field_bool("ok", !d.error);
    j.field("backend", d.backend);
    if (d.error) {
      j.field_num("device_count", d.failed_devices);
      j.key("error");
      json_error(j, *d.error);
    } else {
      j.field("device", d.label + ":" + std::to_string(d.id));
      j.field("label", d.label);
      j.field_num("id", d.id);
      j.field_num("backend_index", d.backend_index);
      j.field("api", d.api);
      j.field("architecture", d.architecture);
      j.field("model", d.model);
      j.field_num("total_memory_bytes", d.total_memory);
      j.key("free_memory_bytes");
      if (d.free_memory) j.num(*d.free_memory); else j.null();
      if (!d.free_memory) j.field("free_memory_error", d.free_memory_error);
      j.field_num("max_single_alloc_bytes", d.max_single_alloc);
      j.field_bool("is_host", d.is_host);
      j.field_bool("is_host_unified", d.is_host_unified);
      j.field_bool("is_compatible", d.is_compatible);
    }
    j.end_object();
  }
  j.end_array();
  if (r.device_list_error) {
    j.key("device_list_error");
    json_error(j, *r.device_list_error);
  }

  if (verbose) {
    j.key("discovery_log");
    j.begin_array();
    for (const std::string& line : split_lines(r.discovery_log)) j.str(line);
    j.end_array();
  }
  j.end_object();
  return j.text() + "\n";
}

// ---------------------------------------------------------------------------
// Text
// ---------------------------------------------------------------------------

std::string describe(const ErrorDetail& e) {
  std::string s = axl_status_name(e.status);
  if (!e.native_name.empty() || e.native_code != 0) {
    s += " (";
    s += e.native_name.empty() ? "native" : e.native_name;
    s += " " + std::to_string(e.native_code) + ")";
  }
  return s + ": " + e.message;
}

std::string yes_no(bool b) { return b ? "yes" : "no"; }

void print_text(const Report& r, bool verbose) {
  printf("axl %s (application ABI %s)\n", r.version.c_str(),
         abi_string(r.abi >> 16, r.abi & 0xffffu).c_str());
  if (r.init_error) printf("\nINIT FAILED: %s\n", describe(*r.init_error).c_str());

  printf("\nPlugins: %zu file(s) considered\n", r.plugins.size());
  if (r.plugins.empty())
    printf("  none found (axl-info --verbose shows the folders searched)\n");
  // Names are padded to the longest (within reason) so states line up.
  int width = 12;
  for (const PluginView& p : r.plugins)
    width = std::max(width, std::min(static_cast<int>(p.name.size()), 24));
  for (const PluginView& p : r.plugins) {
    const std::string name = p.name.empty() ? "(unnamed)" : p.name;
    printf("  %-*s %-11s", width, name.c_str(), axl_plugin_state_name(p.state));
    if (p.state == AXL_PLUGIN_STATE_LOADED) {
      printf(" api %s, version %s, ABI %s, %u device(s)", p.api.c_str(), p.version.c_str(),
             abi_string(p.abi_major, p.abi_minor).c_str(), p.device_count);
      const auto flags = flag_names(p.flags);
      if (!flags.empty()) {
        std::string joined;
        for (const auto& f : flags) joined += (joined.empty() ? "" : ",") + f;
        printf(", flags %s", joined.c_str());
      }
    } else {
      if (p.status != AXL_SUCCESS) printf(" %s:", axl_status_name(p.status));
      printf(" %s", p.reason.empty() ? "(no reason given)" : p.reason.c_str());
      // Whatever negotiation did learn helps tell a stale build from a
      // foreign file.
      if (!p.api.empty() || !p.version.empty() || p.abi_major)
        printf(" [api %s, version %s, ABI %s]", p.api.empty() ? "?" : p.api.c_str(),
               p.version.empty() ? "?" : p.version.c_str(),
               p.abi_major ? abi_string(p.abi_major, p.abi_minor).c_str() : "?");
    }
    printf("\n  %-*s %s\n", width, "", p.path.c_str());
  }

  size_t usable = 0;
  for (const DeviceView& d : r.devices) usable += d.error ? 0 : 1;
  printf("\nDevices: %zu\n", usable);
  if (r.init_error)
    printf("  not listed: initialisation failed (above)\n");
  else if (r.device_list_error)
    printf("  cannot list devices: %s\n", describe(*r.device_list_error).c_str());
  else if (r.devices.empty())
    printf("  none (no plugin reported a device)\n");
  for (const DeviceView& d : r.devices) {
    if (d.error) {
      printf("  backend %s: %u device(s) not usable: %s\n",
             d.backend.empty() ? "?" : d.backend.c_str(), d.failed_devices,
             describe(*d.error).c_str());
      continue;
    }
    printf("  %s:%u  %s (backend %s, index %u)\n", d.label.c_str(), d.id, d.model.c_str(),
           d.backend.c_str(), d.backend_index);
    printf("    %-18s %s\n", "api", d.api.c_str());
    printf("    %-18s %s\n", "architecture", d.architecture.empty() ? "-" : d.architecture.c_str());
    printf("    %-18s %s\n", "model", d.model.c_str());
    printf("    %-18s %" PRIu64 " bytes (%s)\n", "total memory", d.total_memory,
           gib(d.total_memory).c_str());
    if (d.free_memory)
      printf("    %-18s %" PRIu64 " bytes (%s)\n", "free memory", *d.free_memory,
             gib(*d.free_memory).c_str());
    else
      printf("    %-18s unknown (%s)\n", "free memory", d.free_memory_error.c_str());
    printf("    %-18s %" PRIu64 " bytes (%s)\n", "max allocation", d.max_single_alloc,
           gib(d.max_single_alloc).c_str());
    printf("    %-18s %s\n", "is_host", yes_no(d.is_host).c_str());
    printf("    %-18s %s\n", "is_host_unified", yes_no(d.is_host_unified).c_str());
    printf("    %-18s %s\n", "is_compatible", yes_no(d.is_compatible).c_str());
  }

  if (verbose) {
    printf("\nDiscovery trace:\n");
    for (const std::string& line : split_lines(r.discovery_log)) printf("  %s\n", line.c_str());
  }
}

void usage(FILE* f) {
  fputs(
      "usage: axl-info [--json] [--verbose] [--help]\n"
      "\n"
      "Lists every plugin file axl's discovery considered (loaded, skipped,\n"
      "shadowed, disabled or unavailable, with the reason) and every device\n"
      "with its properties.\n"
      "\n"
      "  --json     print one JSON object {core, plugins, devices} (for bug reports)\n"
      "  --verbose  also print the discovery trace (folders searched, files\n"
      "             tried) and log at level info, unless AXL_LOG_LEVEL is set\n"
      "  --help     show this help\n"
      "\n"
      "Environment: AXL_PLUGINS, AXL_PLUGIN_PATH, AXL_PLUGINS_DISABLE,\n"
      "AXL_LOG_LEVEL, AXL_LOG_FILE (see docs/).\n"
      "\n"
      "Exit status: 0, or 1 if axl_init failed (e.g. AXL_PLUGINS names a file\n"
      "that does not load); what could be learnt is printed either way.\n",
      f);
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false, verbose = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--json") json = true;
    else if (a == "--verbose" || a == "-v") verbose = true;
    else if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "axl-info: unknown argument '%s'\n\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  try {
    // Logging starts before discovery so the loader's info lines show; an
    // explicit AXL_LOG_LEVEL wins because the user asked for it by name.
    if (verbose && !getenv("AXL_LOG_LEVEL")) axl_set_log_level(AXL_LOG_INFO);
    const Report r = collect(verbose);
    if (json) {
      fputs(to_json(r, verbose).c_str(), stdout);
      if (r.init_error)
        fprintf(stderr, "axl-info: axl_init failed: %s\n", describe(*r.init_error).c_str());
    } else {
      print_text(r, verbose);
    }
    fflush(stdout);
    return r.init_error ? 1 : 0;
  } catch (const std::exception& e) {
    fprintf(stderr, "axl-info: %s\n", e.what());
    return 1;
  }
}
