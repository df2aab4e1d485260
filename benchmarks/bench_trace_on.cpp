// bench_trace_on: what recording a launch trace costs per launch (issue 16
// item 6), against the same launches with tracing off, in one process.
//
// Operation: enqueue_fixture.hpp's empty launch through axl.h on the cpu
// device, traced with AXL_LAUNCH_TRACE_INCLUDE_HOST (the cpu device is a
// host device), in the gated_same configuration: the worker is held in a host
// callback while a batch of 64 launches is timed, so the figure is the
// submitting thread's own work, which is where the trace is recorded.
//
// 1. Per launch: kRounds rounds; each runs kBatches batches with tracing off
//    and kBatches with a fresh trace on, in alternating order (ABBA). A
//    round's figure per side is the median of its batches; the ratio is
//    median(on) / median(off) over rounds (min over rounds alongside).
// 2. Worst single launch over a 1M-launch trace: kLongLaunches launches,
//    each timed on its own, into one trace, kLongReps times (same CPU as the
//    worker, synchronizing every kLongBatch launches). A stall the
//    trace causes (storage growing) hits the same launch index in every
//    repetition, a preemption of this thread a random one, so the figure is
//    the per-index minimum over repetitions, maxed over indices. The same
//    is measured with tracing off as the floor of the method.
//
// Output: TRACE_ON lines with the figures, then
//   RATIO trace_on_vs_off per launch = X (target <= 1.3): MET|NOT MET
//   RATIO trace_on worst launch over 1M-launch trace = X us (target <= 100 us): MET|NOT MET
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "enqueue_fixture.hpp"

namespace {

using namespace axl_bench;
using clock_type = std::chrono::steady_clock;

constexpr int kRounds = 10;
constexpr int kBatches = 100;  // per round and side
constexpr size_t kLongLaunches = size_t{1} << 20;
constexpr int kLongReps = 3;
// Launches between two synchronizes in the long trace (ungated: a gate per
// 64 launches would make 1M launches take minutes on a loaded machine).
constexpr size_t kLongBatch = 1024;

void begin_trace() { check(axl_launch_trace_begin(AXL_LAUNCH_TRACE_INCLUDE_HOST), "axl_launch_trace_begin"); }

// Ends the trace, checks it holds `expected` entries and frees it.
void end_trace(size_t expected) {
  axl_launch_trace_t trace = nullptr;
  check(axl_launch_trace_take(&trace), "axl_launch_trace_take");
  size_t n = 0;
  check(axl_launch_trace_size(trace, &n), "axl_launch_trace_size");
  check(axl_launch_trace_release(trace), "axl_launch_trace_release");
  if (n != expected) {
    die("the trace holds " + std::to_string(n) + " entries, expected " + std::to_string(expected));
  }
}

// Median ns per launch of one side of a round: kBatches gated batches.
double round_figure(EnqueueFixture& fx, bool traced) {
  const int n = batch_size();
  if (traced) begin_trace();
  std::vector<double> v;
  v.reserve(kBatches);
  Gate gate;
  for (int b = 0; b < kBatches; ++b) {
    gate.close([&fx](void (*fn)(void*), void* p) { return fx.axl_host_fn(fn, p); });
    axl_status bad = AXL_SUCCESS;
    const auto t0 = clock_type::now();
    for (int i = 0; i < n; ++i) bad |= fx.axl_launch();
    const auto t1 = clock_type::now();
    gate.release();
    fx.axl_sync();
    check(bad, "a launch");
    v.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
  }
  if (traced) end_trace(static_cast<size_t>(kBatches) * n);
  return median(v);
}

// The worst per-index minimum, in us, over kLongReps runs of kLongLaunches.
double worst_launch_us(EnqueueFixture& fx, bool traced, double* worst_raw_us) {
  std::vector<float> best(kLongLaunches, 1e30f);
  double raw = 0;
  for (int r = 0; r < kLongReps; ++r) {
    if (traced) begin_trace();
    for (size_t done = 0; done < kLongLaunches; done += kLongBatch) {
      axl_status bad = AXL_SUCCESS;
      for (size_t i = done; i < done + kLongBatch; ++i) {
        const auto t0 = clock_type::now();
        bad |= fx.axl_launch();
        const auto t1 = clock_type::now();
        const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
        best[i] = std::min(best[i], static_cast<float>(ns));
        raw = std::max(raw, ns);
      }
      fx.axl_sync();
      check(bad, "a launch");
    }
    if (traced) end_trace(kLongLaunches);
  }
  *worst_raw_us = raw / 1e3;
  return *std::max_element(best.begin(), best.end()) / 1e3;
}

}  // namespace

int main() {
  EnqueueFixture fx;
  fx.warm_up();
  fx.placement.place_main(kGatedSame.where);
  std::printf("bench_trace_on: %s; %d rounds x %d batches of %d launches per side\n",
              fx.placement.describe().c_str(), kRounds, kBatches, batch_size());

  std::vector<double> off, on;
  for (int r = 0; r < kRounds; ++r) {
    const bool on_first = r % 2 == 1;
    if (on_first) on.push_back(round_figure(fx, true));
    off.push_back(round_figure(fx, false));
    if (!on_first) on.push_back(round_figure(fx, true));
  }
  std::printf("TRACE_ON per_launch_ns off median=%s min=%s max=%s on median=%s min=%s max=%s\n",
              fmt(median(off), 1).c_str(), fmt(minimum(off), 1).c_str(),
              fmt(*std::max_element(off.begin(), off.end()), 1).c_str(), fmt(median(on), 1).c_str(),
              fmt(minimum(on), 1).c_str(), fmt(*std::max_element(on.begin(), on.end()), 1).c_str());

  double raw_off = 0, raw_on = 0;
  const double worst_off = worst_launch_us(fx, false, &raw_off);
  const double worst_on = worst_launch_us(fx, true, &raw_on);
  std::printf("TRACE_ON worst_launch_us over %zu launches x %d reps (per-index min, then max): "
              "off=%s on=%s; single-run max off=%s on=%s (preemption included)\n",
              kLongLaunches, kLongReps, fmt(worst_off, 1).c_str(), fmt(worst_on, 1).c_str(),
              fmt(raw_off, 1).c_str(), fmt(raw_on, 1).c_str());

  ratio_line("trace_on_vs_off per launch", median(on) / median(off), true, 1.3);
  std::printf("RATIO trace_on worst launch over 1M-launch trace = %s us (target <= 100 us): %s\n",
              fmt(worst_on, 1).c_str(), worst_on <= 100.0 ? "MET" : "NOT MET");
  return 0;
}
