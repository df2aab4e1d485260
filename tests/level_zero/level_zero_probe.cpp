// axl_level_zero_probe PLUGIN: loads the level_zero plugin the way the core
// does (dlopen + axl_plugin_negotiate, against plugin.h alone), with the
// shared fake host services (tools/test-host), which record every log line
// and error report, then calls backend_device_count and backend_init and
// prints key=value lines:
//   count.status / count.value       backend_device_count
//   count.native_code / .native_name / .message   its report_error
//   init.status / init.native_code / init.native_name / init.message
//   log.N.level / log.N.message      every host->log call, in order
// The environment (AXL_LEVEL_ZERO_LOADER_PATH) is the caller's.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "axl/plugin.h"
#include "host_services.hpp"

namespace {

// The shared fake host services (tools/test-host): every log line and report.
axl_test::FakeHost& host() {
  static axl_test::FakeHost& h = axl_test::new_host();
  return h;
}

void kv(const std::string& k, const std::string& v) {
  std::string line;
  for (char c : v) line += c == '\n' ? std::string("\\n") : std::string(1, c);
  std::printf("%s=%s\n", k.c_str(), line.c_str());
}

void print_call(const std::string& prefix, axl_status s) {
  kv(prefix + ".status", std::to_string(static_cast<int>(s)));
  if (s == AXL_SUCCESS) return;
  const axl_test::ErrorReport last = host().last_report();
  kv(prefix + ".native_code", std::to_string(last.native_code));
  kv(prefix + ".native_name", last.native_name);
  kv(prefix + ".message", last.message);
  host().clear_last_report();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PLUGIN\n", argv[0]);
    return 2;
  }
  const axl_test::LoadedPlugin p = axl_test::load_plugin(argv[1], host());
  if (p.library == nullptr) {
    kv("load", p.error);
    return 1;
  }
  if (!p.ok()) {
    kv("negotiate", "failed");
    return 1;
  }
  kv("negotiate", "ok");
  kv("name", p.info->name);
  uint32_t n = 12345;
  axl_status s = p.table->backend_device_count(&n);
  print_call("count", s);
  if (s == AXL_SUCCESS) kv("count.value", std::to_string(n));
  print_call("init", p.table->backend_init());
  const std::vector<axl_test::LogLine> logs = host().logs();
  kv("logs", std::to_string(logs.size()));
  for (size_t i = 0; i < logs.size(); ++i) {
    kv("log." + std::to_string(i) + ".level", std::to_string(logs[i].level));
    kv("log." + std::to_string(i) + ".message", logs[i].message);
  }
  return 0;
}
