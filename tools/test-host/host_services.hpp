// Fake host services: the axl_host_services table the core hands a plugin at
// negotiate, with a recorder behind it, for programs that drive a plugin
// without the core (plugin-level tests, the benchmarks' direct path, the
// CTS's negotiation probe). Every log line, error report and trace record is
// kept, with the thread it came from, so a test can assert what the plugin
// said; and the last report is kept per thread, as the core keeps its last
// error (plugin.h: report_error is called on the thread that returns).
//
// Depends on plugin.h alone, so it can travel with a copy of axl-cts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "axl/plugin.h"

namespace axl_test {

struct LogLine {
  int32_t level = 0;
  std::string message;  // "(null)" for a NULL message
  std::thread::id thread;
};

struct ErrorReport {
  axl_status status = AXL_SUCCESS;
  int64_t native_code = 0;
  std::string native_name;  // "" for NULL
  std::string message;      // "" for NULL
  std::thread::id thread;
};

struct TraceEntry {
  axl_trace_record record{};  // record.name is NULL: the plugin's string may not outlive the call
  std::string name;           // "" for NULL
  std::thread::id thread;
  // The size of the operation: memset_bytes for a fill, memcpy_bytes otherwise.
  uint64_t bytes() const;
};

// A plugin keeps the host pointer for the life of the process (plugin.h), so
// a FakeHost must outlive every call the plugin may make: use new_host(), or
// a static one in a program that ends with exit().
class FakeHost {
 public:
  FakeHost();
  FakeHost(const FakeHost&) = delete;
  FakeHost& operator=(const FakeHost&) = delete;

  // What axl_negotiate_args.host points to; its ctx is this object.
  const axl_host_services* services() const { return &services_; }

  // Snapshots, safe while plugin threads keep calling.
  std::vector<LogLine> logs() const;
  std::vector<ErrorReport> reports() const;
  std::vector<TraceEntry> traces() const;
  size_t log_count() const;
  size_t report_count() const;
  size_t trace_count() const;
  // Every log message, one a line.
  std::string all_logs() const;
  // The last report made on the calling thread since the last clear; a
  // default ErrorReport (AXL_SUCCESS, empty strings) if none.
  ErrorReport last_report() const;
  // Forgets the calling thread's last report only.
  void clear_last_report();
  // Forgets everything recorded so far.
  void clear();

 private:
  static void on_log(void* ctx, int32_t level, const char* message);
  static void on_report_error(void* ctx, axl_status status, int64_t native_code,
                              const char* native_name, const char* message);
  static void on_trace_record(void* ctx, const axl_trace_record* record);

  axl_host_services services_{};
  mutable std::mutex mu_;
  std::vector<LogLine> logs_;
  std::vector<ErrorReport> reports_;
  std::vector<TraceEntry> traces_;
  std::map<std::thread::id, ErrorReport> last_;
};

// A host that is never destroyed, at a stable address: safe to hand to a
// plugin that keeps it for the process's life (its threads may still log
// during exit). Each call makes a fresh one.
FakeHost& new_host();

// axl_negotiate_args as the core fills them: this header's ABI, `host`.
axl_negotiate_args negotiate_args(const FakeHost& host, uint32_t major = AXL_PLUGIN_ABI_MAJOR,
                                  uint32_t minor = AXL_PLUGIN_ABI_MINOR);

// A plugin file loaded the way the core loads one (dlopen RTLD_NOW |
// RTLD_LOCAL, never closed) and negotiated with a host.
struct LoadedPlugin {
  void* library = nullptr;  // NULL when the file could not be loaded
  axl_plugin_negotiate_fn entry = nullptr;
  const axl_plugin_info* info = nullptr;
  const axl_plugin_table* table = nullptr;
  uint32_t plugin_abi_minor = 0;
  std::string error;  // why it failed; "" on success
  bool ok() const { return error.empty(); }
};

// Loads `path` and negotiates with `host` at this header's ABI. On failure
// `error` says which step failed (dlopen's own text included).
LoadedPlugin load_plugin(const std::string& path, const FakeHost& host);

}  // namespace axl_test
