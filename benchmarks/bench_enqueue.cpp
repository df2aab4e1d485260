// bench_enqueue: what axl.h adds to the cost of enqueueing work on a cpu
// queue, against the cpu plugin's function table called directly.
//
// Two operations (enqueue_fixture.hpp): an empty kernel launch and a 4-byte
// host -> cpu-buffer copy, each enqueued through axl.h and through a private
// instance of the same plugin file, in batches with an untimed synchronize
// after each batch. Three configurations (enqueue_fixture.hpp, Config):
//   gated_same        worker held during the batch, benchmark thread on the
//                     worker's CPU: the submitting thread's own work and
//                     nothing else. Repeatable to ~1 ns from run to run on
//                     the 2-vCPU VM this was written on -> the RATIO lines;
//   concurrent_split  worker drains during the batch on its own core (real
//                     use);
//   gated_split       worker held during the batch, on its own core.
// The two split configurations add the cost of moving the queue's cache
// lines between cores, which on a VM depends on where the host runs the two
// vCPUs at the moment (observed: 3x swings within minutes) -> INFO lines.
// All series run kReps repetitions round-robin (ABBA within each pair). Per
// side the figure is the median over repetitions of each repetition's
// median batch. Prints per operation:
//   RATIO enqueue_<op> axl_h/direct = X (target <= 1.2): MET|NOT MET
// plus ENQUEUE_NS lines (absolute figures, every configuration) and INFO
// lines (the ratio in the other configurations).
#include <cstdio>
#include <string>
#include <vector>

#include "enqueue_fixture.hpp"

namespace {

using namespace axl_bench;

constexpr int kReps = 10;
constexpr int kBatches = 1000;  // per repetition
constexpr double kTarget = 1.2;

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  EnqueueFixture fx;
  fixture() = &fx;
  fx.warm_up();
  const std::vector<Config> configs = {kGatedSame, kConcurrentSplit, kGatedSplit};
  const std::vector<Op> ops = {Op::kLaunch, Op::kCopy4};
  register_interleaved(configs, ops, kReps, kBatches);
  benchmark::RunSpecifiedBenchmarks();

  std::printf("\n# enqueue cost, ns per enqueue: batches of %d, %d batches per repetition, "
              "median over %d interleaved repetitions of each repetition's median batch "
              "(min over repetitions alongside); %s\n",
              batch_size(), kBatches, kReps, fx.placement.describe().c_str());
  for (const Config& c : configs) {
    for (Op op : ops) {
      const std::vector<double> a = per_rep_medians(series_name(op, c, Path::kAxl), kReps);
      const std::vector<double> d = per_rep_medians(series_name(op, c, Path::kDirect), kReps);
      const bool primary = &c == &configs[0];
      if (a.empty() || d.empty()) {
        if (primary)
          std::printf("RATIO %s axl_h/direct = n/a (target <= %.1f): NOT MET (no samples; "
                      "filtered out?)\n", op_name(op), kTarget);
        continue;
      }
      std::printf("ENQUEUE_NS op=%s config=%s axl_h=%s direct=%s axl_h_min=%s direct_min=%s "
                  "axl_h_minus_direct=%s\n",
                  op_name(op), c.name, fmt(median(a)).c_str(), fmt(median(d)).c_str(),
                  fmt(minimum(a)).c_str(), fmt(minimum(d)).c_str(),
                  fmt(median(a) - median(d)).c_str());
      const double ratio = median(a) / median(d);
      if (primary) {
        ratio_line(std::string(op_name(op)) + " axl_h/direct", ratio, true, kTarget);
      } else {
        std::printf("INFO %s axl_h/direct [%s] = %s\n", op_name(op), c.name, fmt(ratio).c_str());
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
