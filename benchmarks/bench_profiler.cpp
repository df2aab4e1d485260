// Profiler span cost (axl::ScopedRange / axl_profile_push+pop), per span:
//   off         profiling off: one relaxed load and a not-taken branch
//               (target < 2 ns)
//   nvtx        on, no NVTX tool attached (NVTX_INJECTION64_PATH unset), no
//               recording sink: the span stack, the clock and NVTX's
//               null-pointer tests
//   json        on, into the Chrome-trace JSON sink (kept in memory)
//   collector   on, into the in-process collector
// plus an empty loop as the floor. Each figure is the median over
// repetitions of a timed loop (steady_clock), all measured in this run.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "axl/axl.hpp"
#include "bench_common.hpp"

namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
double median_ns_per_op(F&& body, long iters, int reps) {
  std::vector<double> v;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    for (long i = 0; i < iters; ++i) body();
    auto t1 = Clock::now();
    v.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / double(iters));
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void span() {
  axl::ScopedRange r("bench span");
  benchmark::DoNotOptimize(&r);
}

}  // namespace

int main() {
  unsetenv("NVTX_INJECTION64_PATH");  // "no tool attached"
  using axl_bench::check;
  const int reps = 15;
  check(axl_profile_set_output(nullptr), "set_output");

  check(axl_profile_set_level(AXL_PROFILE_OFF), "set_level off");
  double floor_ns = median_ns_per_op([] { benchmark::ClobberMemory(); }, 20'000'000, reps);
  double off_ns = median_ns_per_op(span, 20'000'000, reps);

  check(axl_profile_set_level(AXL_PROFILE_ON), "set_level on");
  span();  // NVTX's one-time initialisation, outside the timing
  double nvtx_ns = median_ns_per_op(span, 1'000'000, reps);

  check(axl_profile_collector_start(), "collector_start");
  double coll_ns = median_ns_per_op(span, 200'000, reps);
  axl_profile_events_t ev = nullptr;
  check(axl_profile_collector_take(&ev), "collector_take");
  axl_profile_events_release(ev);

  std::string path = "/tmp/axl_bench_profiler_" + std::to_string(getpid()) + ".json";
  check(axl_profile_set_output(path.c_str()), "set_output");
  double json_ns = median_ns_per_op(span, 200'000, reps);
  check(axl_profile_set_output(nullptr), "set_output");  // nothing written at exit
  check(axl_profile_set_level(AXL_PROFILE_OFF), "set_level off");

  uint32_t sinks = axl_profile_sinks();
  std::printf("profiler span cost (median of %d repetitions), ns per span:\n", reps);
  std::printf("INFO empty loop          %8.2f ns\n", floor_ns);
  std::printf("INFO off                 %8.2f ns\n", off_ns);
  std::printf("INFO on, nvtx no tool    %8.2f ns  (NVTX compiled in: %s)\n", nvtx_ns,
              (sinks & AXL_PROFILE_SINK_NVTX) ? "yes" : "no");
  std::printf("INFO on, collector       %8.2f ns\n", coll_ns);
  std::printf("INFO on, json sink       %8.2f ns\n", json_ns);
  axl_bench::ratio_line("profiler_scoped_range_off ns/span", off_ns, true, 2.0);
  axl_bench::ratio_line("profiler_scoped_range_off/empty_loop", off_ns / floor_ns, true, 3.0);
  return 0;
}
