// bench_copy: bandwidth of a 256 MiB host -> cpu-buffer copy through a cpu
// queue (axl_queue_copy_from_host + axl_queue_synchronize) against a plain
// memcpy of the same bytes between the same two, already-touched, buffers.
//
// Both sides copy from the same source into the same destination (the cpu
// buffer's host pointer), so alignment, page state and NUMA placement are
// identical; both were written once before timing, so no page fault is
// measured. The queue's worker and the benchmark thread are pinned to the
// same CPU (bench_common.hpp, ThreadPlacement), so the same core does the
// copying on both sides. Each copy is timed with steady_clock (the queue side from the
// enqueue to the return of synchronize). The sides alternate in kReps
// interleaved repetitions (ABBA); per side the figure is the median over
// repetitions of each repetition's median copy. Prints:
//   RATIO copy_256MiB axl_h/memcpy = X (target >= 0.9): MET|NOT MET
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_common.hpp"

namespace {

using namespace axl_bench;
using clock_type = std::chrono::steady_clock;

constexpr uint64_t kBytes = 256ull << 20;
constexpr int kReps = 8;
constexpr int kItersPerRep = 8;
constexpr double kTarget = 0.9;

struct CopyFixture {
  // The queue's worker and the benchmark thread (which runs the memcpy
  // baseline) pinned to the same CPU: both copies run on the same core, and
  // while the worker copies the benchmark thread sleeps in synchronize.
  ThreadPlacement placement;
  axl_device_t dev = nullptr;
  axl_queue_t q = nullptr;
  axl_buffer_t buf = nullptr;
  void* dst = nullptr;  // the buffer's host pointer
  void* src = nullptr;  // plain host memory

  CopyFixture() {
    check(axl_init(), "axl_init");
    check(axl_device_get("cpu", 0, &dev), "axl_device_get(cpu, 0)");
    check(axl_queue_create(dev, 0, &q), "axl_queue_create");
    check(axl_buffer_create(dev, kBytes, 0, &buf), "axl_buffer_create(256 MiB)");
    check(axl_buffer_host_pointer(buf, &dst), "axl_buffer_host_pointer");
    placement.place_main(Placement::kSame);
    src = std::aligned_alloc(4096, kBytes);
    if (src == nullptr) die("cannot allocate the 256 MiB source");
    // Touch every page of both (and give the source non-zero content).
    std::memset(src, 0x5a, kBytes);
    std::memset(dst, 0, kBytes);
  }
  ~CopyFixture() {
    axl_buffer_release(buf);
    axl_queue_release(q);
    axl_device_release(dev);
    std::free(src);
  }
};

CopyFixture* g_fx = nullptr;

template <class Copy>
void run_copies(benchmark::State& state, const std::string& key, Copy&& copy) {
  std::vector<double>& s = samples()[key];  // GB/s of each copy
  s.clear();
  for (auto _ : state) {
    const auto t0 = clock_type::now();
    copy();
    const auto t1 = clock_type::now();
    const double sec = std::chrono::duration<double>(t1 - t0).count();
    state.SetIterationTime(sec);
    s.push_back(static_cast<double>(kBytes) / sec / 1e9);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(kBytes));
  state.counters["GBps_med"] = median(s);
}

void axl_copy(benchmark::State& state, const std::string& key) {
  run_copies(state, key, [] {
    check(axl_queue_copy_from_host(g_fx->q, g_fx->buf, 0, g_fx->src, kBytes),
          "axl_queue_copy_from_host");
    check(axl_queue_synchronize(g_fx->q), "axl_queue_synchronize");
  });
}

void plain_memcpy(benchmark::State& state, const std::string& key) {
  run_copies(state, key, [] {
    std::memcpy(g_fx->dst, g_fx->src, kBytes);
    benchmark::ClobberMemory();
  });
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  CopyFixture fx;
  g_fx = &fx;
  // One untimed copy each way: starts the queue worker, warms the TLBs.
  check(axl_queue_copy_from_host(fx.q, fx.buf, 0, fx.src, kBytes), "warm-up copy");
  check(axl_queue_synchronize(fx.q), "warm-up synchronize");
  std::memcpy(fx.dst, fx.src, kBytes);

  for (int r = 0; r < kReps; ++r) {
    const std::string rep = "/rep:" + std::to_string(r);
    const std::string a = "copy_256MiB/axl_h" + rep;
    const std::string m = "copy_256MiB/memcpy" + rep;
    auto reg_a = [&] {
      benchmark::RegisterBenchmark(a.c_str(), [a](benchmark::State& st) { axl_copy(st, a); })
          ->UseManualTime()->Iterations(kItersPerRep)->Unit(benchmark::kMillisecond);
    };
    auto reg_m = [&] {
      benchmark::RegisterBenchmark(m.c_str(), [m](benchmark::State& st) { plain_memcpy(st, m); })
          ->UseManualTime()->Iterations(kItersPerRep)->Unit(benchmark::kMillisecond);
    };
    if (r % 2 == 0) { reg_a(); reg_m(); } else { reg_m(); reg_a(); }
  }
  benchmark::RunSpecifiedBenchmarks();

  const std::vector<double> a = per_rep_medians("copy_256MiB/axl_h", kReps);
  const std::vector<double> m = per_rep_medians("copy_256MiB/memcpy", kReps);
  std::printf("\n# 256 MiB host -> cpu buffer, GB/s (1e9 B/s; median over %d interleaved "
              "repetitions of each repetition's median copy; max alongside); queue worker and "
              "benchmark thread on CPU %d (-1: not pinned)\n", kReps, fx.placement.worker_cpu());
  if (a.empty() || m.empty()) {
    std::printf("RATIO copy_256MiB axl_h/memcpy = n/a (target >= %.1f): NOT MET (no samples; "
                "filtered out?)\n", kTarget);
  } else {
    auto maximum = [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); };
    std::printf("COPY_GBPS axl_h=%s memcpy=%s axl_h_max=%s memcpy_max=%s\n",
                fmt(median(a)).c_str(), fmt(median(m)).c_str(), fmt(maximum(a)).c_str(),
                fmt(maximum(m)).c_str());
    ratio_line("copy_256MiB axl_h/memcpy", median(a) / median(m), false, kTarget);
  }
  benchmark::Shutdown();
  return 0;
}
