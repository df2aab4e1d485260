// axl-cts: the conformance suite every axl backend runs.
//
//   axl-cts [--plugin PATH] [--backend NAME[,NAME...]] [--report FILE]
//           [--run-known-failures] [--case-timeout SECONDS] [--quiet]
//           [Catch2 options and test specs, e.g. "cts.queue.*" or [memory]]
//
// It discovers backends the way any application does (or loads exactly one
// file with --plugin), opens every device, checks each plugin file's
// negotiation in a child process, then runs the CTS cases over every backend
// and device. Results per backend: pass, skip (with reasons), unsupported
// and fail; --report writes them as JSON for certification. The exit status
// is 0 when nothing failed, 1 otherwise, 2 for a usage error.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <limits.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "cts.hpp"
#include "slot_cases.hpp"

namespace {

void usage(FILE* f) {
  std::fprintf(f,
      "usage: axl-cts [options] [Catch2 options] [case name or [tag] ...]\n"
      "\n"
      "Runs the axl conformance suite against every backend discovery finds, or the ones\n"
      "selected below, on every device they report.\n"
      "\n"
      "  --plugin PATH            load only this plugin file (sets AXL_PLUGINS=PATH before any\n"
      "                           axl call, so nothing else loads)\n"
      "  --backend NAME[,NAME]    test only these backends (others still load); repeatable\n"
      "  --report FILE            write the certification report (JSON) to FILE\n"
      "  --module NAME=FILE       the module the module cases load on backend NAME; it has the\n"
      "                           kernel axl_cts_increment_u32 (data, n): data[i] += 1 for i < n\n"
      "                           (built in for api cpu and virtual backends); repeatable\n"
      "  --run-known-failures     also run cases known_failures.hpp lists as failing; an\n"
      "                           unexpected pass then counts as a failure\n"
      "  --case-timeout SECONDS   a case running longer is a failure and stops the run\n"
      "                           (default 300; 0 disables)\n"
      "  --quiet                  print only results that are not a pass\n"
      "  --list-slots             print which cases exercise each plugin.h slot, then exit\n"
      "  -h, --help               this text, then Catch2's options\n"
      "\n"
      "Examples:\n"
      "  axl-cts --backend cpu --report cpu.json\n"
      "  axl-cts --plugin $PWD/build/libaxl_plugin_acme.so --report acme.json\n"
      "  axl-cts \"cts.queue.*\"          (Catch2 test spec: only the queue cases)\n"
      "  axl-cts --list-tests\n"
      "\n"
      "Exit status: 0 nothing failed, 1 a case failed, 2 usage error.\n\n");
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

std::string self_exe() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  buf[n] = '\0';
  return buf;
}

// slot_cases.hpp names cases by string; a renamed or missing case would
// leave its slot uncertified without anyone noticing, so every run checks.
bool slot_cases_exist() {
  std::set<std::string> registered;
  for (const Catch::TestCase& t : Catch::getRegistryHub().getTestCaseRegistry().getAllTests())
    registered.insert(t.name);
  bool ok = true;
  for (const cts::SlotCases& r : cts::kSlotCases)
    for (std::string_view c : r.cases)
      if (!c.empty() && !registered.count(std::string(c))) {
        std::fprintf(stderr, "axl-cts: slot_cases.hpp names case '%.*s' for slot %.*s; no such case\n",
                     int(c.size()), c.data(), int(r.slot.size()), r.slot.data());
        ok = false;
      }
  return ok;
}

void list_slots() {
  for (const cts::SlotCases& r : cts::kSlotCases) {
    std::printf("%-26.*s", int(r.slot.size()), r.slot.data());
    for (std::string_view c : r.cases)
      if (!c.empty()) std::printf(" %.*s", int(c.size()), c.data());
    std::printf("\n");
  }
}

// The name a backend goes by in the report: the plugin's own, else the one
// discovery reads from the file name, else the file (not a plugin's name).
std::string backend_name(const axl::PluginRecord& r) {
  if (!r.name.empty()) return r.name;
  if (std::string n = cts::plugin_file_name(r.path); !n.empty()) return n;
  return r.path.substr(r.path.find_last_of('/') + 1);
}

std::string cat_status(axl_status s, const std::string& message) {
  return cts::cat(axl::status_name(s), ": ", message);
}

// Opens every device the process sees. Opening a device initialises its
// backend; a backend that fails drops out of enumeration, so the same index
// is tried again rather than skipping a device of the next backend.
void open_devices(std::vector<cts::BackendUnderTest>& under_test) {
  // A count that cannot be read ends the enumeration.
  auto count_now = []() -> uint32_t {
    try {
      return axl::Device::count();
    } catch (const axl::Error&) {
      return 0;
    }
  };
  uint32_t index = 0;
  for (int attempts = 0; attempts < 4096; ++attempts) {
    const uint32_t count = count_now();
    if (index >= count) break;
    try {
      axl::Device d = axl::Device::get(nullptr, index);
      axl::DeviceInfo info = d.info();
      for (auto& b : under_test)
        if (b.name == info.backend) b.devices.push_back({info.backend_index, d, info});
      ++index;
    } catch (const axl::Error& e) {
      for (auto& b : under_test)
        if (b.name == e.backend() && b.device_error.empty()) b.device_error = cat_status(e.status(), e.what());
      if (count_now() >= count) ++index;  // this device failed; its backend stays
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--probe-negotiate") == 0)
    return cts::run_probe_child(argc >= 3 ? argv[2] : "");
  if (argc >= 2 && std::strcmp(argv[1], "--fault-child") == 0) return cts::run_fault_child(argc, argv);
  if (argc == 3 && std::strcmp(argv[1], "--lifecycle-child") == 0) return cts::run_lifecycle_child(argv[2]);

  std::string plugin, report;
  std::set<std::string> wanted;
  bool help = false;
  std::vector<std::string> catch_args = {argv[0]};
  std::vector<std::string> all_args(argv, argv + argc);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    // Both "--opt value" and "--opt=value".
    auto value = [&](const char* opt, std::string& out) -> int {
      const size_t n = std::strlen(opt);
      if (a == opt) {
        if (i + 1 >= argc) {
          std::fprintf(stderr, "axl-cts: %s needs a value\n", opt);
          return -1;
        }
        out = argv[++i];
        return 1;
      }
      if (a.compare(0, n, opt) == 0 && a.size() > n && a[n] == '=') {
        out = a.substr(n + 1);
        return 1;
      }
      return 0;
    };
    std::string v;
    int r;
    if ((r = value("--plugin", plugin)) != 0) {
      if (r < 0) return 2;
    } else if ((r = value("--report", report)) != 0) {
      if (r < 0) return 2;
      struct stat st {};
      if (::stat(report.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
        std::fprintf(stderr, "axl-cts: --report expects a file path, got the folder '%s'\n", report.c_str());
        return 2;
      }
    } else if ((r = value("--backend", v)) != 0) {
      if (r < 0) return 2;
      for (auto& n : split_commas(v)) wanted.insert(n);
    } else if ((r = value("--module", v)) != 0) {
      if (r < 0) return 2;
      const size_t eq = v.find('=');
      if (eq == 0 || eq == std::string::npos || eq + 1 == v.size()) {
        std::fprintf(stderr, "axl-cts: --module expects NAME=FILE, got '%s'\n", v.c_str());
        return 2;
      }
      char real[PATH_MAX];
      const std::string file = v.substr(eq + 1);
      if (!realpath(file.c_str(), real)) {
        std::fprintf(stderr, "axl-cts: --module %s: %s\n", v.c_str(), std::strerror(errno));
        return 2;
      }
      cts::options().modules[v.substr(0, eq)] = real;
    } else if ((r = value("--case-timeout", v)) != 0) {
      if (r < 0) return 2;
      char* end = nullptr;
      const double t = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || t < 0) {
        std::fprintf(stderr, "axl-cts: --case-timeout expects seconds >= 0, got '%s'\n", v.c_str());
        return 2;
      }
      cts::options().case_timeout_s = t;
    } else if (a == "--run-known-failures") {
      cts::options().run_known_failures = true;
    } else if (a == "--quiet") {
      cts::options().quiet = true;
    } else if (a == "--list-slots") {
      if (!slot_cases_exist()) return 2;
      list_slots();
      return 0;
    } else {
      if (a == "-h" || a == "--help" || a == "-?") help = true;
      catch_args.push_back(a);
    }
  }
  if (help) usage(stdout);
  if (!slot_cases_exist()) return 2;

  Catch::Session session;
  {
    std::vector<const char*> cargv;
    for (auto& s : catch_args) cargv.push_back(s.c_str());
    const int rc = session.applyCommandLine(static_cast<int>(cargv.size()), cargv.data());
    if (rc != 0) return 2;
  }
  const Catch::ConfigData& cfg = session.configData();
  if (cfg.showHelp || cfg.listTests || cfg.listTestNamesOnly || cfg.listTags || cfg.listReporters)
    return session.run();

  cts::options().self_exe = self_exe();
  if (cts::options().self_exe.empty()) {
    std::fprintf(stderr, "axl-cts: cannot find its own executable (/proc/self/exe)\n");
    return 2;
  }
  {
    // Beside this executable as the build installs it; absent is no error
    // (the module cases then skip on cpu, saying so).
    const std::string& exe = cts::options().self_exe;
    const std::string module = exe.substr(0, exe.find_last_of('/') + 1) + AXL_CTS_CPU_MODULE;
    char real[PATH_MAX];
    if (realpath(module.c_str(), real)) cts::options().cpu_module = real;
  }
  if (!plugin.empty()) {
    char real[PATH_MAX];
    if (!realpath(plugin.c_str(), real)) {
      std::fprintf(stderr, "axl-cts: --plugin %s: %s\n", plugin.c_str(), std::strerror(errno));
      return 2;
    }
    // Before the first axl call: discovery reads it once.
    setenv("AXL_PLUGINS", real, 1);
  }

  const auto [abi_major, abi_minor] = axl::abi_version();
  std::printf("axl-cts: core %s (application ABI %u.%u, plugin ABI %d.%d)\n", axl::version_string().c_str(),
              abi_major, abi_minor, AXL_PLUGIN_ABI_MAJOR, AXL_PLUGIN_ABI_MINOR);
  try {
    axl::init();
  } catch (const axl::Error& e) {
    std::printf("  discovery: %s\n", e.what());  // e.g. AXL_PLUGINS failed
  }

  // Every file discovery considered, then the ones under test.
  auto& under_test = cts::backends();
  for (const axl::PluginRecord& r : axl::plugin_records()) {
    if (r.state == AXL_PLUGIN_STATE_SHADOWED || r.state == AXL_PLUGIN_STATE_DISABLED) continue;
    const std::string name = backend_name(r);
    if (!wanted.empty() && !wanted.count(name)) continue;
    cts::BackendUnderTest b;
    b.name = name;
    b.path = r.path;
    under_test.push_back(b);
  }
  for (const auto& w : wanted) {
    bool found = false;
    for (auto& b : under_test) found = found || b.name == w;
    if (!found) {
      std::fprintf(stderr, "axl-cts: --backend %s: no such backend was discovered. Found:",
                   w.c_str());
      const std::vector<axl::PluginRecord> found_records = axl::plugin_records();
      for (const axl::PluginRecord& r : found_records)
        std::fprintf(stderr, " %s (%s)", backend_name(r).c_str(), r.state_name());
      std::fprintf(stderr, "%s\n", found_records.empty() ? " nothing" : "");
      return 2;
    }
  }

  open_devices(under_test);
  // Records last: opening devices can turn "loaded" into "unavailable".
  for (const axl::PluginRecord& r : axl::plugin_records())
    for (auto& b : under_test)
      if (b.path == r.path) b.record = r;
  for (auto& b : under_test) b.probe = cts::probe_plugin(b.path);

  std::printf("backends under test:\n");
  for (const auto& b : under_test) {
    std::printf("  %-14s %-12s %s\n", b.name.c_str(), b.record.state_name(), b.path.c_str());
    if (!b.record.reason.empty()) std::printf("  %-14s %-12s reason: %s\n", "", "", b.record.reason.c_str());
    for (const auto& d : b.devices)
      std::printf("  %-14s %-12s device %u: %s, api %s, %s\n", "", "", d.backend_index,
                  d.info.label.c_str(), d.info.api.c_str(), d.info.model_name.c_str());
    if (b.devices.empty() && !b.device_error.empty())
      std::printf("  %-14s %-12s devices: %s\n", "", "", b.device_error.c_str());
  }
  if (under_test.empty()) std::printf("  (none: no plugin was discovered)\n");
  std::printf("\n");
  std::fflush(stdout);

  cts::start_watchdog(report, all_args);
  const int catch_failures = session.run();
  const bool failed = cts::finish(report, all_args);
  return (failed || catch_failures != 0) ? 1 : 0;
}
