// axl/report.hpp: the device and plugin report of `axl-info` (and of
// `python -m axl info`), header-only over axl.hpp.
//
// One implementation, so the tool and every binding print the same bytes:
// collect_report() gathers everything first and the formatters print it
// afterwards, because initialising a backend while listing devices can turn
// its plugin record from "loaded" into "unavailable" and the report must show
// the final state. Nothing here throws for what it reports on: a backend that
// fails to initialise, a device that cannot describe itself or a failed
// axl_init become entries of the report.
#pragma once

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "axl/axl.hpp"

namespace axl {

// One entry of the device list: a device that opened, or the devices of a
// backend (or one device) that could not be used.
struct ReportDevice {
  DeviceInfo info;                       // when !error
  std::optional<uint64_t> free_memory;   // empty when the backend cannot say
  std::string free_memory_error;         // "STATUS: message" then
  std::optional<Error> error;            // why the device(s) are not usable
  std::string backend;                   // the failing backend ("" if unknown)
  uint32_t failed_devices = 0;           // how many, when error
};

struct Report {
  std::string version;
  std::pair<uint32_t, uint32_t> abi{0, 0};
  std::optional<Error> init_error;         // axl_init failed: no devices listed
  std::optional<Error> device_list_error;  // the device count failed
  std::vector<PluginRecord> plugins;
  std::vector<ReportDevice> devices;
  std::string discovery_log;               // only when asked for
};

struct ReportOptions {
  bool json = false;     // one JSON object {core, plugins, devices}
  bool verbose = false;  // also the discovery trace (collect it: with_discovery_log)
};

namespace detail {

inline void report_device(const Device& d, ReportDevice& v) {
  try {
    v.info = d.info();
  } catch (const Error& e) {
    v.error = e;
    v.failed_devices = 1;
    return;
  }
  v.backend = v.info.backend;
  try {
    v.free_memory = d.memory_info().first;
  } catch (const Error& e) {
    v.free_memory_error = std::string(e.status_name()) + ": " + e.what();
  }
}

inline void report_devices(Report& r) {
  uint32_t count = 0;
  try {
    count = Device::count(nullptr);
  } catch (const Error& e) {
    r.device_list_error = e;
    return;
  }
  for (uint32_t i = 0; i < count;) {
    ReportDevice v;
    try {
      report_device(Device::get(nullptr, i), v);
      r.devices.push_back(std::move(v));
      ++i;
      continue;
    } catch (const Error& e) {
      v.error = e;
      v.backend = e.backend();
    }
    // A backend whose initialisation failed stops contributing devices, so
    // the count shrinks and index i now names the next backend's first
    // device. If the count did not shrink the failure was this device's
    // alone; step over it so the loop always ends.
    uint32_t now = count;
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

inline std::string printf_string(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
inline std::string printf_string(const char* fmt, ...) {
  va_list ap, again;
  va_start(ap, fmt);
  va_copy(again, ap);
  const int n = vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  std::string s(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) vsnprintf(s.data(), s.size() + 1, fmt, again);
  va_end(again);
  return s;
}

inline std::string gib(uint64_t bytes) {
  return printf_string("%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
}

inline std::string abi_string(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

inline std::vector<std::string> split_lines(const std::string& s) {
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

// Appends `s` as the body of a JSON string. JSON text must be valid UTF-8,
// but paths and dlerror() messages are arbitrary bytes; an invalid sequence
// becomes U+FFFD so one odd file name cannot make a whole bug report
// unparsable.
inline void json_escape(std::string_view s, std::string& out) {
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
            static const char kHex[] = "0123456789abcdef";
            out += "\\u00";
            out += kHex[c >> 4];
            out += kHex[c & 0xf];
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

inline void json_error(JsonWriter& j, const Error& e) {
  j.begin_object();
  j.field("status", e.status_name());
  j.field_num("status_code", static_cast<uint64_t>(e.status()));
  j.field("backend", e.backend());
  j.key("native_code");
  j.num_signed(e.native_code());
  j.field("native_name", e.native_name());
  j.field("message", e.what());
  j.end_object();
}

}  // namespace detail

// `s` as a JSON string literal, quotes included, escaped as the report
// escapes (invalid UTF-8 becomes U+FFFD): for tools that write JSON reports
// of their own (axl-cts).
inline std::string json_quote(std::string_view s) {
  std::string out = "\"";
  detail::json_escape(s, out);
  out += '"';
  return out;
}

// Everything the report shows. with_discovery_log: also read the discovery
// trace (the verbose report prints it).
inline Report collect_report(bool with_discovery_log) {
  Report r;
  r.version = version_string();
  r.abi = abi_version();
  // Once axl_init has failed every device call answers with the same error,
  // so the devices are left unlisted rather than reported twice.
  try {
    init();
    detail::report_devices(r);
  } catch (const Error& e) {
    r.init_error = e;
  }
  r.plugins = plugin_records();
  if (with_discovery_log) {
    try {
      r.discovery_log = discovery_log();
    } catch (const Error&) {
      // The report shows what it can; an empty trace says enough.
    }
  }
  return r;
}

// "STATUS (NATIVE_NAME code): message", the native part only when known.
inline std::string describe(const Error& e) {
  std::string s = e.status_name();
  if (!e.native_name().empty() || e.native_code() != 0) {
    s += " (";
    s += e.native_name().empty() ? "native" : e.native_name();
    s += " " + std::to_string(e.native_code()) + ")";
  }
  return s + ": " + e.what();
}

inline std::string report_json(const Report& r, bool verbose) {
  using detail::abi_string;
  detail::JsonWriter j;
  j.begin_object();

  j.key("core");
  j.begin_object();
  j.field("version", r.version);
  j.field("abi", abi_string(r.abi.first, r.abi.second));
  j.key("init_error");
  if (r.init_error) detail::json_error(j, *r.init_error); else j.null();
  j.end_object();

  j.key("plugins");
  j.begin_array();
  for (const PluginRecord& p : r.plugins) {
    j.begin_object();
    j.field("path", p.path);
    j.field("name", p.name);
    j.field("api", p.api);
    j.field("version", p.version);
    j.field("abi", p.abi_major ? abi_string(p.abi_major, p.abi_minor) : "");
    j.field("state", p.state_name());
    j.field("status", axl_status_name(p.status));
    j.field("reason", p.reason);
    j.field_num("device_count", p.device_count);
    j.key("flags");
    j.begin_array();
    for (const std::string& f : plugin_flag_names(p.flags)) j.str(f);
    j.end_array();
    j.end_object();
  }
  j.end_array();

  j.key("devices");
  j.begin_array();
  for (const ReportDevice& d : r.devices) {
    j.begin_object();
    j.field_bool("ok", !d.error);
    j.field("backend", d.backend);
    if (d.error) {
      j.field_num("device_count", d.failed_devices);
      j.key("error");
      detail::json_error(j, *d.error);
    } else {
      const DeviceInfo& i = d.info;
      j.field("device", i.label + ":" + std::to_string(i.id));
      j.field("label", i.label);
      j.field_num("id", i.id);
      j.field_num("backend_index", i.backend_index);
      j.field("api", i.api);
      j.field("architecture", i.architecture_name);
      j.field("model", i.model_name);
      j.field_num("total_memory_bytes", i.total_memory_bytes);
      j.key("free_memory_bytes");
      if (d.free_memory) j.num(*d.free_memory); else j.null();
      if (!d.free_memory) j.field("free_memory_error", d.free_memory_error);
      j.field_num("max_single_alloc_bytes", i.max_single_alloc_bytes);
      j.field_bool("is_host", i.is_host);
      j.field_bool("is_host_unified", i.is_host_unified);
      j.field_bool("is_compatible", i.is_compatible);
    }
    j.end_object();
  }
  j.end_array();
  if (r.device_list_error) {
    j.key("device_list_error");
    detail::json_error(j, *r.device_list_error);
  }

  if (verbose) {
    j.key("discovery_log");
    j.begin_array();
    for (const std::string& line : detail::split_lines(r.discovery_log)) j.str(line);
    j.end_array();
  }
  j.end_object();
  return j.text() + "\n";
}

inline std::string report_text(const Report& r, bool verbose) {
  using detail::abi_string;
  using detail::gib;
  using detail::printf_string;
  const auto yes_no = [](bool b) { return b ? "yes" : "no"; };
  std::string out = printf_string("axl %s (application ABI %s)\n", r.version.c_str(),
                                  abi_string(r.abi.first, r.abi.second).c_str());
  if (r.init_error) out += "\nINIT FAILED: " + describe(*r.init_error) + "\n";

  out += printf_string("\nPlugins: %zu file(s) considered\n", r.plugins.size());
  if (r.plugins.empty()) out += "  none found (axl-info --verbose shows the folders searched)\n";
  // Names are padded to the longest (within reason) so states line up.
  int width = 12;
  for (const PluginRecord& p : r.plugins)
    width = std::max(width, std::min(static_cast<int>(p.name.size()), 24));
  for (const PluginRecord& p : r.plugins) {
    const std::string name = p.name.empty() ? "(unnamed)" : p.name;
    out += printf_string("  %-*s %-11s", width, name.c_str(), p.state_name());
    if (p.loaded()) {
      out += printf_string(" api %s, version %s, ABI %s, %u device(s)", p.api.c_str(), p.version.c_str(),
                           abi_string(p.abi_major, p.abi_minor).c_str(), p.device_count);
      const auto flags = plugin_flag_names(p.flags);
      if (!flags.empty()) {
        std::string joined;
        for (const auto& f : flags) joined += (joined.empty() ? "" : ",") + f;
        out += ", flags " + joined;
      }
    } else {
      if (p.status != AXL_SUCCESS) out += printf_string(" %s:", axl_status_name(p.status));
      out += " " + (p.reason.empty() ? std::string("(no reason given)") : p.reason);
      // Whatever negotiation did learn helps tell a stale build from a
      // foreign file.
      if (!p.api.empty() || !p.version.empty() || p.abi_major)
        out += printf_string(" [api %s, version %s, ABI %s]", p.api.empty() ? "?" : p.api.c_str(),
                             p.version.empty() ? "?" : p.version.c_str(),
                             p.abi_major ? abi_string(p.abi_major, p.abi_minor).c_str() : "?");
    }
    out += printf_string("\n  %-*s ", width, "") + p.path + "\n";
  }

  size_t usable = 0;
  for (const ReportDevice& d : r.devices) usable += d.error ? 0 : 1;
  out += printf_string("\nDevices: %zu\n", usable);
  if (r.init_error)
    out += "  not listed: initialisation failed (above)\n";
  else if (r.device_list_error)
    out += "  cannot list devices: " + describe(*r.device_list_error) + "\n";
  else if (r.devices.empty())
    out += "  none (no plugin reported a device)\n";
  for (const ReportDevice& d : r.devices) {
    if (d.error) {
      out += printf_string("  backend %s: %u device(s) not usable: ", d.backend.empty() ? "?" : d.backend.c_str(),
                           d.failed_devices) +
             describe(*d.error) + "\n";
      continue;
    }
    const DeviceInfo& i = d.info;
    out += printf_string("  %s:%u  %s (backend %s, index %u)\n", i.label.c_str(), i.id, i.model_name.c_str(),
                         i.backend.c_str(), i.backend_index);
    out += printf_string("    %-18s %s\n", "api", i.api.c_str());
    out += printf_string("    %-18s %s\n", "architecture",
                         i.architecture_name.empty() ? "-" : i.architecture_name.c_str());
    out += printf_string("    %-18s %s\n", "model", i.model_name.c_str());
    out += printf_string("    %-18s %" PRIu64 " bytes (%s)\n", "total memory", i.total_memory_bytes,
                         gib(i.total_memory_bytes).c_str());
    if (d.free_memory)
      out += printf_string("    %-18s %" PRIu64 " bytes (%s)\n", "free memory", *d.free_memory,
                           gib(*d.free_memory).c_str());
    else
      out += printf_string("    %-18s unknown (%s)\n", "free memory", d.free_memory_error.c_str());
    out += printf_string("    %-18s %" PRIu64 " bytes (%s)\n", "max allocation", i.max_single_alloc_bytes,
                         gib(i.max_single_alloc_bytes).c_str());
    out += printf_string("    %-18s %s\n", "is_host", yes_no(i.is_host));
    out += printf_string("    %-18s %s\n", "is_host_unified", yes_no(i.is_host_unified));
    out += printf_string("    %-18s %s\n", "is_compatible", yes_no(i.is_compatible));
  }

  if (verbose) {
    out += "\nDiscovery trace:\n";
    for (const std::string& line : detail::split_lines(r.discovery_log)) out += "  " + line + "\n";
  }
  return out;
}

// The report as `axl-info` prints it (text, or JSON with options.json).
inline std::string format_report(const Report& r, const ReportOptions& options) {
  return options.json ? report_json(r, options.verbose) : report_text(r, options.verbose);
}

}  // namespace axl
