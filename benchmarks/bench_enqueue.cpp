// bench_enqueue: what axl.h adds to the cost of enqueueing work on a cpu
// queue, against the cpu plugin's function table called directly.
//
// Two operations (see enqueue_fixture.hpp): an empty kernel launch and a
// 4-byte host->cpu-buffer copy, each measured on both paths in two worker
// modes (Mode::kGated, the RATIO figure; Mode::kConcurrent, reported for
// information). Every (operation, mode) pair runs kReps interleaved
// repetitions in ABBA order, so slow drifts of the machine hit both sides
// alike. Per side the figure is the median over repetitions of each
// repetition's median batch. Prints, per operation:
//   RATIO enqueue_<op> axl_h/direct = X (target <= 1.2): MET|NOT MET
#include <cstdio>
#include <string>
#include <vector>

#include "enqueue_fixture.hpp"

namespace {

using namespace axl_bench;

constexpr int kReps = 8;
constexpr int kBatches = 1500;  // per repetition (fixed: same work on both sides)
constexpr double kTarget = 1.2;

EnqueueFixture* g_fx = nullptr;

struct Op {
  const char* name;
  axl_status (EnqueueFixture::*axl)();
  axl_status (EnqueueFixture::*direct)();
};
const Op kOps[] = {
    {"enqueue_launch", &EnqueueFixture::axl_launch, &EnqueueFixture::direct_launch},
    {"enqueue_copy4", &EnqueueFixture::axl_copy4, &EnqueueFixture::direct_copy4},
};
struct ModeName {
  Mode mode;
  const char* suffix;
};
const ModeName kModes[] = {{Mode::kGated, "gated"}, {Mode::kConcurrent, "concurrent"}};

void register_all() {
  for (const ModeName& m : kModes) {
    for (const Op& op : kOps) {
      for (int r = 0; r < kReps; ++r) {
        const std::string base = std::string(op.name) + "/" + m.suffix;
        const std::string rep = "/rep:" + std::to_string(r);
        const std::string a = base + "/axl_h" + rep;
        const std::string d = base + "/direct" + rep;
        const Mode mode = m.mode;
        auto axl_fn = [a, mode, f = op.axl](benchmark::State& st) {
          run_batches(
              st, a, mode, [&] { return (g_fx->*f)(); },
              [](void (*fn)(void*), void* p) { return g_fx->axl_host_fn(fn, p); },
              [] { g_fx->axl_sync(); });
        };
        auto direct_fn = [d, mode, f = op.direct](benchmark::State& st) {
          run_batches(
              st, d, mode, [&] { return (g_fx->*f)(); },
              [](void (*fn)(void*), void* p) { return g_fx->direct_host_fn(fn, p); },
              [] { g_fx->direct_sync(); });
        };
        auto reg = [](const std::string& name, auto fn) {
          benchmark::RegisterBenchmark(name.c_str(), fn)->UseManualTime()->Iterations(kBatches);
        };
        // ABBA: even repetitions run axl.h first, odd ones the direct path.
        if (r % 2 == 0) {
          reg(a, axl_fn);
          reg(d, direct_fn);
        } else {
          reg(d, direct_fn);
          reg(a, axl_fn);
        }
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  EnqueueFixture fx;
  g_fx = &fx;
  fx.warm_up();
  register_all();
  benchmark::RunSpecifiedBenchmarks();

  std::printf("\n# enqueue cost in ns per enqueue: batches of %d, %d batches per repetition; "
              "median over %d interleaved repetitions of each repetition's median batch "
              "(min over repetitions alongside)\n",
              batch_size(), kBatches, kReps);
  for (const ModeName& m : kModes) {
    for (const Op& op : kOps) {
      const std::string base = std::string(op.name) + "/" + m.suffix;
      const std::vector<double> a = per_rep_medians(base + "/axl_h", kReps);
      const std::vector<double> d = per_rep_medians(base + "/direct", kReps);
      const bool primary = m.mode == Mode::kGated;
      if (a.empty() || d.empty()) {
        if (primary)
          std::printf("RATIO %s axl_h/direct = n/a (target <= %.1f): NOT MET (no samples; "
                      "filtered out?)\n", op.name, kTarget);
        continue;
      }
      std::printf("ENQUEUE_NS op=%s worker=%s axl_h=%s direct=%s axl_h_min=%s direct_min=%s "
                  "axl_h_overhead=%s\n",
                  op.name, m.suffix, fmt(median(a)).c_str(), fmt(median(d)).c_str(),
                  fmt(minimum(a)).c_str(), fmt(minimum(d)).c_str(),
                  fmt(median(a) - median(d)).c_str());
      const double ratio = median(a) / median(d);
      if (primary) {
        ratio_line(std::string(op.name) + " axl_h/direct", ratio, true, kTarget);
      } else {
        std::printf("INFO %s axl_h/direct with the worker draining concurrently = %s "
                    "(noisy; see README)\n", op.name, fmt(ratio).c_str());
      }
    }
  }
  benchmark::Shutdown();
  axl_queue_release(fx.q);
  axl_buffer_release(fx.buf);
  axl_kernel_release(fx.kernel);
  axl_device_release(fx.dev);
  return 0;  // a missed target is a finding, not a crash
}
