// bench_trace_hook: enqueue cost with launch tracing off, for comparing a
// normal build against one configured with -DAXL_NO_TRACE_HOOK=ON (where the
// plugins compile the hook out). The two are different builds, so this
// program only measures and prints one machine-readable line;
// benchmarks/trace_hook_compare.sh runs it from both builds, interleaved,
// and prints the RATIO line.
//
// Operations and method: enqueue_fixture.hpp (the same as bench_enqueue),
// through axl.h (the figure the target is about) and through the plugin's
// table directly (same hook, less core noise around it). Tracing is never
// begun while measuring. Afterwards one launch is traced with
// AXL_LAUNCH_TRACE_INCLUDE_HOST, to show whether the hook exists in this
// build: trace_entries_when_on=1 with the hook, 0 without.
//
// Output line:
//   TRACE_HOOK_NS hook=<compiled|compiled_out> launch_axl_h=.. copy_axl_h=..
//     launch_direct=.. copy_direct=.. trace_entries_when_on=N
#include <cstdio>
#include <string>
#include <vector>

#include "enqueue_fixture.hpp"

namespace {

using namespace axl_bench;

constexpr int kReps = 6;
constexpr double kMinTime = 0.1;

EnqueueFixture* g_fx = nullptr;

struct Op {
  const char* name;
  axl_status (EnqueueFixture::*enqueue)();
  bool through_axl;
};
const Op kOps[] = {
    {"launch_axl_h", &EnqueueFixture::axl_launch, true},
    {"copy_axl_h", &EnqueueFixture::axl_copy4, true},
    {"launch_direct", &EnqueueFixture::direct_launch, false},
    {"copy_direct", &EnqueueFixture::direct_copy4, false},
};

void register_all() {
  for (int r = 0; r < kReps; ++r) {
    // Alternate the order of the four per repetition.
    for (int i = 0; i < 4; ++i) {
      const Op& op = kOps[r % 2 == 0 ? i : 3 - i];
      const std::string key = std::string(op.name) + "/rep:" + std::to_string(r);
      benchmark::RegisterBenchmark(key.c_str(), [key, op](benchmark::State& st) {
        run_batches(st, key, Mode::kGated, [&] { return (g_fx->*op.enqueue)(); }, [&](void (*fn)(void*), void* p) { return op.through_axl ? g_fx->axl_host_fn(fn, p) : g_fx->direct_host_fn(fn, p); }, [&] {
          if (op.through_axl) g_fx->axl_sync(); else g_fx->direct_sync();
        });
      })->UseManualTime()->MinTime(kMinTime);
    }
  }
}

// 1 if the cpu plugin reports a traced launch, 0 if it does not.
size_t traced_entries() {
  check(axl_launch_trace_begin(AXL_LAUNCH_TRACE_INCLUDE_HOST), "axl_launch_trace_begin");
  check(g_fx->axl_launch(), "traced launch");
  g_fx->axl_sync();
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
  g_fx = &fx;
  fx.warm_up();
  register_all();
  benchmark::RunSpecifiedBenchmarks();

#ifdef AXL_BENCH_NO_TRACE_HOOK
  const char* hook = "compiled_out";
#else
  const char* hook = "compiled";
#endif
  std::string line = std::string("TRACE_HOOK_NS hook=") + hook;
  for (const Op& op : kOps) {
    const std::vector<double> v = per_rep_medians(op.name, kReps);
    line += std::string(" ") + op.name + "=" + (v.empty() ? "nan" : fmt(median(v), 3));
  }
  line += " trace_entries_when_on=" + std::to_string(traced_entries());
  std::printf("%s\n", line.c_str());
  benchmark::Shutdown();
  return 0;
}
