// bench_trace_hook: enqueue cost with launch tracing off, for comparing a
// normal build against one configured with -DAXL_NO_TRACE_HOOK=ON (where the
// plugins compile the hook out). The two are different builds, so this
// program only measures and prints one machine-readable line;
// benchmarks/trace_hook_compare.sh runs it from both builds, interleaved,
// and prints the RATIO line.
//
// Operations and method: enqueue_fixture.hpp, the same as bench_enqueue,
// through axl.h and through the plugin's table directly (the hook lives in
// the plugin; the direct figure has less core code around it), in the
// gated_same configuration (most repeatable: the hook is a few
// instructions, so run-to-run noise must stay well under 2 ns) and in
// concurrent_split (real use; noisier). Tracing is never begun while
// measuring. Afterwards one launch is traced with
// AXL_LAUNCH_TRACE_INCLUDE_HOST, to show whether the hook exists in this
// build: trace_entries_when_on=1 with the hook, 0 without.
//
// Output (one line; values are ns per enqueue, the median over kReps
// interleaved repetitions of each repetition's median batch):
//   TRACE_HOOK_NS hook=<compiled|compiled_out> <op>.<path>.<config>=<ns> ...
//     trace_entries_when_on=<n>
#include <cstdio>
#include <string>
#include <vector>

#include "enqueue_fixture.hpp"

namespace {

using namespace axl_bench;

constexpr int kReps = 8;
constexpr int kBatches = 800;  // per repetition

// 1 if the cpu plugin reports a traced launch, 0 if it does not.
size_t traced_entries(EnqueueFixture& fx) {
  check(axl_launch_trace_begin(AXL_LAUNCH_TRACE_INCLUDE_HOST), "axl_launch_trace_begin");
  check(fx.axl_launch(), "traced launch");
  fx.axl_sync();
  axl_launch_trace_t trace = nullptr;
  check(axl_launch_trace_take(&trace), "axl_launch_trace_take");
  size_t n = 0;
  check(axl_launch_trace_size(trace, &n), "axl_launch_trace_size");
  axl_launch_trace_release(trace);
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  EnqueueFixture fx;
  fixture() = &fx;
  fx.warm_up();
  const std::vector<Config> configs = {kGatedSame, kConcurrentSplit};
  const std::vector<Op> ops = {Op::kLaunch, Op::kCopy4};
  register_interleaved(configs, ops, kReps, kBatches);
  benchmark::RunSpecifiedBenchmarks();

#ifdef AXL_BENCH_NO_TRACE_HOOK
  const char* hook = "compiled_out";
#else
  const char* hook = "compiled";
#endif
  std::string line = std::string("TRACE_HOOK_NS hook=") + hook;
  for (const Config& c : configs) {
    for (Op op : ops) {
      for (Path p : {Path::kAxl, Path::kDirect}) {
        const std::vector<double> v = per_rep_medians(series_name(op, c, p), kReps);
        line += std::string(" ") + (op == Op::kLaunch ? "launch" : "copy4") + "." +
                path_name(p) + "." + c.name + "=" + (v.empty() ? "nan" : fmt(median(v), 3));
      }
    }
  }
  line += " trace_entries_when_on=" + std::to_string(traced_entries(fx));
  std::printf("%s\n", line.c_str());
  benchmark::Shutdown();
  return 0;
}
