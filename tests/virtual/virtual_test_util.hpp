// Helpers for the virtual-backend tests: a hermetic environment set before
// the first axl call, child processes (this very test program re-run on one
// hidden test case with its own environment, or the probe), and error checks.
//
// The core and the virtual plugin read the environment once per process, so
// every setting that differs between scenarios (latency, fault rules, guard
// mode) gets a process of its own.
#pragma once

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "axl/axl.hpp"
#include "../core/test_util.hpp"

extern char** environ;

namespace vt {

using Env = std::vector<std::pair<std::string, std::string>>;

// Set in the environment of every child this file starts: the child keeps
// the environment its parent prepared instead of preparing its own.
constexpr const char* kChildMarker = "AXL_VIRTUAL_TEST_CHILD";

// Exactly the cpu and the virtual plugin, so nothing another backend in the
// build tree does can change these tests.
inline std::string plugin_list() {
  return std::string(AXL_CPU_PLUGIN_PATH) + "," + AXL_VIRTUAL_PLUGIN_PATH;
}

// Every AXL_* variable of the environment, minus all of them, plus `set`
// (AXL_PLUGINS defaults to plugin_list()).
inline std::map<std::string, std::string> hermetic(const Env& set) {
  std::map<std::string, std::string> out;
  out["AXL_PLUGINS"] = plugin_list();
  for (const auto& [k, v] : set) out[k] = v;
  return out;
}

// Call from a static initialiser, before main and so before any axl call.
// In a child started by run_case(), the parent already prepared everything.
inline bool prepare_environment(const Env& set) {
  if (std::getenv(kChildMarker) != nullptr) return true;
  std::vector<std::string> names;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "AXL_", 4) == 0) names.emplace_back(*e, std::strchr(*e, '=') - *e);
  for (const std::string& n : names) unsetenv(n.c_str());
  for (const auto& [k, v] : hermetic(set)) setenv(k.c_str(), v.c_str(), 1);
  return true;
}

// A child's outcome (axltest::RunResult) that can describe itself.
struct Result : axltest::RunResult {
  std::string describe() const {
    std::ostringstream s;
    s << "exit " << exit_code << ", signal " << signal << (timed_out ? " (timed out)" : "")
      << "\n--- stdout ---\n" << out << "\n--- stderr ---\n" << err;
    return s.str();
  }
};

inline std::string self_path() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  buf[n] = '\0';
  return buf;
}

// Runs argv with the hermetic environment plus `set`. Sanitizer options are
// extended, not replaced, by `sanitizer_extra` (e.g. "handle_segv=0", so a
// child's SIGSEGV is a real one and not a sanitizer report).
inline Result spawn(const std::vector<std::string>& argv, const Env& set,
                    const std::string& sanitizer_extra = "", int timeout_s = 60) {
  Env env;
  if (!sanitizer_extra.empty()) {
    for (const char* name : {"ASAN_OPTIONS", "TSAN_OPTIONS", "UBSAN_OPTIONS"}) {
      const char* old = std::getenv(name);
      env.emplace_back(name, (old && *old ? std::string(old) + ":" : "") + sanitizer_extra);
    }
  }
  for (const auto& kv : hermetic(set)) env.emplace_back(kv);
  env.emplace_back(kChildMarker, "1");
  Result r;
  static_cast<axltest::RunResult&>(r) = axltest::run(argv, env, "", timeout_s);
  return r;
}

inline bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

// Runs the hidden test case `name` of this program in a fresh process with
// `set` in its environment, and requires that it passed.
inline void run_case(const std::string& name, const Env& set) {
  Result r = spawn({self_path(), name}, set);
  INFO("child test case '" << name << "': " << r.describe());
  REQUIRE(r.exit_code == 0);
  // A name that matched nothing must not pass for a passing case.
  REQUIRE(contains(r.out, "All tests passed (") );
  REQUIRE(contains(r.out, " in 1 test case)"));
}

// The first virtual accelerator in this process ("gpu" devices are only the
// virtual plugin's here: AXL_PLUGINS names cpu and virtual alone).
inline axl::Device gpu(uint32_t i = 0) { return axl::Device::get("gpu", i); }

// Runs `body`, which must throw axl::Error with `status`, and returns it.
template <typename F>
axl::Error expect_error(F&& body, axl_status status) {
  try {
    body();
  } catch (const axl::Error& e) {
    INFO("status " << e.status_name() << ", backend '" << e.backend() << "', native "
                   << e.native_code() << " " << e.native_name() << ", message: " << e.what());
    CHECK(e.status() == status);
    return e;
  }
  FAIL("expected axl::Error " << axl_status_name(status) << ", nothing was thrown");
  throw std::logic_error("unreachable");
}

// An error the virtual plugin reported itself (not the core): its backend,
// and the virtual driver's native code and name for `status`.
inline void check_virtual_report(const axl::Error& e, axl_status status) {
  CHECK(e.status() == status);
  CHECK(e.backend() == "virtual");
  CHECK(e.native_code() == status);
  CHECK(e.native_name() == std::string("VIRTUAL_ERROR_") + (axl_status_name(status) + 10));
  CHECK_THAT(std::string(e.what()), Catch::StartsWith("virtual: "));
}


}  // namespace vt
