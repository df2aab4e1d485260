// The backend's life: backend_set_option before init, backend_init, and
// backend_shutdown, slots the core calls seldom or never during a run (it
// shuts no backend down: plugin.h, "never during process exit"; it sets
// options only on the virtual backend).
//
// The child (`axl-cts --lifecycle-child PATH`) loads the plugin with the
// shared fake host services (tools/test-host) and drives the slots directly,
// as the negotiation probe does, in a process of its own so the real core in
// this one keeps its backend. Protocol on fd 3, one
// record a line, fields split by tabs:
//   option <status>                 backend_set_option of an unknown key
//   init <status> <message>         backend_init
//   shutdown <status> <message>     backend_shutdown
//   threads <before init> <after shutdown>
//   done
#include <catch2/catch.hpp>

#include <dirent.h>
#include <sys/wait.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "axl/plugin.h"
#include "cts.hpp"
#include "host_services.hpp"

namespace cts {
namespace {

constexpr int kLifecycleTimeoutS = 60;
constexpr const char* kUnknownOption = "axl_cts_no_such_option";

int thread_count() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

void put(FILE* out, const std::string& line) {
  std::string clean = line;
  for (char& ch : clean)
    if (ch == '\n' || ch == '\r') ch = ' ';
  std::fprintf(out, "%s\n", clean.c_str());
  std::fflush(out);
}

}  // namespace

int run_lifecycle_child(const char* path) {
  FILE* out = fdopen(kChildProtocolFd, "w");
  if (!out) return 3;
  // Never destroyed: the plugin keeps the host pointer for the life of the
  // process. The slots run on this one thread, whose last report the
  // protocol carries.
  axl_test::FakeHost& host = axl_test::new_host();
  const axl_test::LoadedPlugin p = axl_test::load_plugin(path, host);
  if (!p.ok()) {
    put(out, cat("error\tcannot load: ", p.error));
    return 3;
  }
  const axl_plugin_table* t = p.table;
  auto has = [t](size_t offset) { return t->struct_size >= offset + sizeof(void*); };
  if (has(offsetof(axl_plugin_table, backend_set_option)) && t->backend_set_option)
    put(out, cat("option\t", t->backend_set_option(kUnknownOption, "1")));
  const int before = thread_count();
  host.clear_last_report();
  const axl_status init = t->backend_init();
  put(out, cat("init\t", init, "\t", host.last_report().message));
  if (init == AXL_SUCCESS) {
    uint32_t count = 0;
    if (t->backend_device_count(&count) == AXL_SUCCESS && count > 0) {
      axl_pdevice d = nullptr;
      t->device_get(0, &d);  // a device the shutdown must release
    }
    host.clear_last_report();
    const axl_status shut = t->backend_shutdown();
    put(out, cat("shutdown\t", shut, "\t", host.last_report().message));
    // Joined threads leave /proc a moment after join returns.
    int after = thread_count();
    for (int k = 0; k < 100 && after > before; ++k) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      after = thread_count();
    }
    put(out, cat("threads\t", before, "\t", after));
  }
  put(out, "done");
  std::fclose(out);
  // A normal exit, exit handlers and all: under LeakSanitizer what the
  // plugin's shutdown failed to release makes this child's status non-zero,
  // and run_lifecycle fails the case with the leak report in its output.
  return 0;
}

namespace {

using Answer = std::map<std::string, std::vector<std::string>>;

// Runs the child on the backend and returns its answer by record; ends the
// run (fatal) when the child could not say anything.
Answer run_lifecycle(Ctx& c) {
  BackendUnderTest& b = c.backend();
  if (!b.unusable_reason().empty()) c.skip(b.unusable_reason());
  const ChildResult r = run_self({"--lifecycle-child", b.path}, {}, kLifecycleTimeoutS);
  c.require(r.error.empty(), cat("the child did not start: ", r.error));
  c.require(!r.timed_out, cat("backend_init or backend_shutdown did not return within ", kLifecycleTimeoutS, " s"));
  c.require(!WIFSIGNALED(r.status), cat("the child died with ", signal_text(WTERMSIG(r.status)),
                                        "; its answer so far: ", r.protocol));
  Answer got;
  std::istringstream lines(r.protocol);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string x; std::getline(fields, x, '\t');) f.push_back(x);
    if (!f.empty()) got[f[0]] = std::vector<std::string>(f.begin() + 1, f.end());
  }
  if (auto e = got.find("error"); e != got.end())
    c.fatal(cat("the child: ", e->second.empty() ? "" : e->second[0]));
  c.require(got.count("done") && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
            cat("the child exited with status ", r.status, " before it finished; output: ", r.output.substr(0, 2000)));
  return got;
}

axl_status status_of(const std::vector<std::string>& f) {
  return f.empty() ? AXL_ERROR_INTERNAL : static_cast<axl_status>(std::atoi(f[0].c_str()));
}

}  // namespace

TEST_CASE("cts.backend.set_option", "[backend]") {
  for_each_backend("cts.backend.set_option", [](Ctx& c) {
    c.need_slot("backend_set_option");
    Answer got = run_lifecycle(c);
    const axl_status s = status_of(got["option"]);
    c.check(s == AXL_ERROR_NOT_FOUND, cat("backend_set_option(\"", kUnknownOption, "\") before backend_init answered ",
                                          axl::status_name(s), "; plugin.h: unknown keys answer AXL_ERROR_NOT_FOUND"));
  });
}

TEST_CASE("cts.backend.lifecycle", "[backend]") {
  for_each_backend("cts.backend.lifecycle", [](Ctx& c) {
    BackendUnderTest& b = c.backend();
    Answer got = run_lifecycle(c);
    const axl_status init = status_of(got["init"]);
    if (init == AXL_ERROR_BACKEND_UNAVAILABLE)
      c.skip(cat("backend_init in a fresh process answered BACKEND_UNAVAILABLE: ",
                 got["init"].size() > 1 ? got["init"][1] : ""));
    c.require(init == AXL_SUCCESS, cat("backend_init in a fresh process answered ", axl::status_name(init)));
    const axl_status shut = status_of(got["shutdown"]);
    c.check(shut == AXL_SUCCESS, cat("backend_shutdown answered ", axl::status_name(shut),
                                     got["shutdown"].size() > 1 ? ": " + got["shutdown"][1] : std::string()));
    if (got["threads"].size() == 2) {
      const int before = std::atoi(got["threads"][0].c_str()), after = std::atoi(got["threads"][1].c_str());
      const std::string text = cat(after - before, " thread(s) started after backend_init still run after backend_shutdown");
      // Without a driver every thread is the plugin's, which plugin.h says
      // backend_shutdown joins; a driver's own threads may outlive it.
      if (b.is_host() || b.is_virtual())
        c.check(after <= before, text);
      else if (after > before)
        c.note(cat(text, " (the driver's, or the plugin's)"));
    }
  });
}

}  // namespace cts
