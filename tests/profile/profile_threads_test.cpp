// Concurrent spans: 8 threads open nested spans and marks while the main
// thread flushes the JSON file and toggles nothing else; every span must be
// collected on its own thread with the right depth, and every flushed file
// must be valid JSON whose complete events nest per thread.
#include <sys/syscall.h>

#include <atomic>
#include <map>
#include <set>

#include "../core/test_util.hpp"

using namespace axltest;

namespace {
const bool kEnvClean = (clear_axl_env(), true);
}

TEST_CASE("8 threads of concurrent spans: collector and JSON stay consistent") {
  constexpr int kThreads = 8, kIters = 300;
  TempDir dir;
  std::string path = (dir.path() / "threads.json").string();
  REQUIRE(axl_profile_set_output(path.c_str()) == AXL_SUCCESS);
  REQUIRE(axl_profile_set_level(AXL_PROFILE_ON) == AXL_SUCCESS);
  REQUIRE(axl_profile_collector_start() == AXL_SUCCESS);

  std::atomic<bool> go{false};
  std::atomic<int> done{0};
  std::vector<uint64_t> tids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      tids[t] = static_cast<uint64_t>(syscall(SYS_gettid));
      std::string outer = "t" + std::to_string(t) + ".outer", inner = "t" + std::to_string(t) + ".inner";
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < kIters; ++i) {
        axl::ScopedRange o(outer.c_str());
        axl::ScopedRange in(inner.c_str(), axl_profile_color("green"));
        axl::ScopedRange::mark("m");
      }
      done.fetch_add(1);
    });
  }
  go.store(true);
  int flushes = 0;
  while (done.load() < kThreads) {  // writes race the threads on purpose
    REQUIRE(axl_profile_flush() == AXL_SUCCESS);
    ++flushes;
  }
  for (auto& th : threads) th.join();

  axl_profile_events_t h = nullptr;
  REQUIRE(axl_profile_collector_take(&h) == AXL_SUCCESS);
  size_t n = 0;
  REQUIRE(axl_profile_events_size(h, &n) == AXL_SUCCESS);
  const axl_profile_event* ev = axl_profile_events_data(h);
  std::map<uint64_t, int> spans_per_tid, marks_per_tid;
  bool names_match = true, depths_ok = true;
  for (size_t i = 0; i < n; ++i) {
    const axl_profile_event& e = *axl_profile_event_at(ev, i);
    int t = int(std::find(tids.begin(), tids.end(), e.thread_id) - tids.begin());
    REQUIRE(t < kThreads);
    std::string name = e.name;
    if (e.kind == AXL_PROFILE_EVENT_SPAN) {
      ++spans_per_tid[e.thread_id];
      bool is_outer = name == "t" + std::to_string(t) + ".outer";
      bool is_inner = name == "t" + std::to_string(t) + ".inner";
      names_match &= is_outer || is_inner;
      depths_ok &= e.depth == (is_outer ? 0u : 1u);
    } else if (e.kind == AXL_PROFILE_EVENT_MARK) {
      ++marks_per_tid[e.thread_id];
      depths_ok &= e.depth == 2;
    }
  }
  REQUIRE(axl_profile_events_release(h) == AXL_SUCCESS);
  CHECK(names_match);
  CHECK(depths_ok);
  CHECK(spans_per_tid.size() == size_t(kThreads));
  for (auto& [tid, count] : spans_per_tid) CHECK(count == 2 * kIters);
  for (auto& [tid, count] : marks_per_tid) CHECK(count == kIters);

  REQUIRE(axl_profile_set_level(AXL_PROFILE_OFF) == AXL_SUCCESS);
  REQUIRE(axl_profile_flush() == AXL_SUCCESS);
  RunResult r = run({"/usr/bin/env", "python3", AXL_CHECK_TRACE_PY, path});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  KV kv(r.out);
  CHECK(kv["valid"] == "1");
  CHECK(kv["nested"] == "1");
  CHECK(kv.num("spans") == 2 * kThreads * kIters);
  CHECK(kv.num("marks") == kThreads * kIters);
  CHECK(kv.num("span_threads") == kThreads);
  CHECK(kv.num("named_span_threads") == kThreads);
  CHECK(kv["name.t3.inner.count"] == std::to_string(kIters));
  INFO("flushes while running: " << flushes);
  REQUIRE(axl_profile_set_output(nullptr) == AXL_SUCCESS);
}
