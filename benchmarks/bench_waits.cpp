// bench_waits: what waiting on a cpu queue costs, and what a deep queue costs
// per enqueue (issue 16, items 3 and 4). Plain harness, no Google Benchmark
// loop: each figure is a distribution over many samples, taken in rounds
// that alternate between the two sides of every ratio.
//
//   launch_wait      one empty-kernel launch (enqueue_fixture.hpp's) then
//                    axl_queue_synchronize, timed together; p50 and p90 over
//                    kLatencySamples, against the targets (1 us, 3 us); then
//                    (no target) with the waiting thread on the worker's CPU.
//   drain            100k launches queued behind a gate (a host function),
//                    then the gate opens; the time from opening to the last
//                    launch's end (a host function stamps it), with the
//                    submitting thread in axl_queue_synchronize meanwhile
//                    against with it asleep until the stamp appears.
//   deep             ns per launch of N launches enqueued back to back and
//                    then one synchronize, on a default queue (bounded at
//                    AXL_QUEUE_DEFAULT_MAX_PENDING = 4096): N = 1M (the
//                    producer runs into the bound and waits for room, the
//                    worker drains all along) against N = 1k repeated 1000
//                    times (never full). This is "deep" as an application
//                    sees it. Also, as INFO, the enqueue-only cost with the
//                    worker held: a queue created with max_pending above 1M
//                    holding 1M launches (176 MB of slots, every one a cache
//                    miss) against 1k, first burst (ring growth) apart.
//   stall            the longest single enqueue of a 64k-launch stream right
//                    after a 1M-deep burst drained (chunks are kept, so no
//                    heap trim runs under the producer); target 100 us. The
//                    same stream without a burst is printed as the control:
//                    on a loaded machine both show preemption (4 ms ticks).
//   idle_cpu         CPU time of the waiting thread over a 1-second loop of
//                    1 ms waits (a host function sleeps 1 ms, the thread
//                    synchronizes): what the spin before parking costs.
//
// With AXL_BENCH_BASELINE_CPU_PLUGIN=<an older libaxl_plugin_cpu.so> the
// launch_wait, drain and deep figures are also taken through the plugin
// table of this build's plugin and of that one (private copies, as
// bench_common.hpp's DirectCpuPlugin loads them), interleaved: the before
// and after of this change in one process (INFO lines).
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "enqueue_fixture.hpp"

namespace {

using namespace axl_bench;
using Clock = std::chrono::steady_clock;

constexpr int kLatencySamples = 20000;
constexpr int kDrainOps = 100000;
constexpr int kDrainRounds = 10;  // per side
constexpr int kDeepOps = 1 << 20;
constexpr int kShallowOps = 1024;
constexpr int kDeepRounds = 5;     // per side
constexpr int kStallOps = 1 << 16;
constexpr uint32_t kBigQueue = kDeepOps + 16;  // gate plus burst, some slack

double ns_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
}

double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// One way to reach a cpu queue: axl.h, or a plugin table called directly.
class Side {
 public:
  virtual ~Side() = default;
  virtual const char* name() const = 0;
  // `big`: the queue created with max_pending kBigQueue; else a default one.
  virtual axl_status launch(bool big) = 0;
  virtual axl_status host_fn(bool big, void (*fn)(void*), void* p) = 0;
  virtual void sync(bool big) = 0;
};

class AxlSide : public Side {
 public:
  explicit AxlSide(EnqueueFixture& fx) : fx_(fx) {
    axl_queue_options o{};
    o.struct_size = sizeof o;
    o.max_pending = kBigQueue;
    check(axl_queue_create_with_options(fx.dev, &o, &big_), "axl_queue_create_with_options");
  }
  ~AxlSide() override { axl_queue_release(big_); }
  const char* name() const override { return "axl_h"; }
  axl_status launch(bool big) override { return fx_.axl_launch_on(q(big)); }
  axl_status host_fn(bool big, void (*fn)(void*), void* p) override {
    return axl_queue_enqueue_host_func(q(big), fn, p);
  }
  void sync(bool big) override { check(axl_queue_synchronize(q(big)), "axl_queue_synchronize"); }

 private:
  axl_queue_t q(bool big) const { return big ? big_ : fx_.q; }
  EnqueueFixture& fx_;
  axl_queue_t big_ = nullptr;
};

class DirectSide : public Side {
 public:
  DirectSide(const char* name, const std::string& path) : name_(name), plugin_(path) {
    const axl_plugin_table& t = plugin_.table();
    q_ = plugin_.create_queue();
    axl_queue_desc desc{};
    desc.struct_size = sizeof desc;
    desc.trace_id = 2;
    desc.max_pending = kBigQueue;
    plugin_.ok(t.queue_create(plugin_.device(), &desc, &big_), "queue_create (big)");
    plugin_.ok(t.device_get_test_kernel(plugin_.device(), AXL_TEST_KERNEL_INCREMENT_U32, &kernel_),
               "device_get_test_kernel");
    plugin_.ok(t.memory_alloc(plugin_.device(), EnqueueFixture::kBufBytes, &addr_), "memory_alloc");
  }
  const char* name() const override { return name_; }
  axl_status launch(bool big) override {
    return EnqueueFixture::launch_through(plugin_.table(), q(big), kernel_, addr_);
  }
  axl_status host_fn(bool big, void (*fn)(void*), void* p) override {
    return plugin_.table().queue_enqueue_host_fn(q(big), fn, p);
  }
  void sync(bool big) override { plugin_.ok(plugin_.table().queue_synchronize(q(big)), "queue_synchronize"); }

 private:
  axl_pqueue q(bool big) const { return big ? big_ : q_; }
  const char* name_;
  DirectCpuPlugin plugin_;
  axl_pqueue q_ = nullptr;
  axl_pqueue big_ = nullptr;
  axl_pkernel kernel_ = nullptr;
  axl_devaddr addr_ = 0;
};

void must(axl_status s, const char* what) {
  if (s != AXL_SUCCESS) die(std::string(what) + " failed: " + axl_status_name(s));
}

// Launch + synchronize latencies in ns, one sample per pair.
std::vector<double> launch_wait(Side& s, int samples) {
  std::vector<double> out;
  out.reserve(samples);
  for (int i = 0; i < samples; ++i) {
    const auto t0 = Clock::now();
    must(s.launch(false), "launch");
    s.sync(false);
    out.push_back(ns_since(t0));
  }
  return out;
}

// Stamped by the host function behind the drained launches.
struct Stamp {
  std::atomic<int64_t> ns{0};
  static void set(void* p) {
    static_cast<Stamp*>(p)->ns.store(Clock::now().time_since_epoch().count(),
                                     std::memory_order_release);
  }
};

// ns from opening the gate to the end of the last of kDrainOps launches.
double drain(Side& s, bool waiter) {
  Gate gate;
  Stamp stamp;
  gate.close([&](void (*fn)(void*), void* p) { return s.host_fn(true, fn, p); });
  for (int i = 0; i < kDrainOps; ++i) must(s.launch(true), "drain launch");
  must(s.host_fn(true, &Stamp::set, &stamp), "drain stamp");
  const auto t0 = Clock::now();
  gate.release();
  if (waiter) {
    s.sync(true);
  } else {
    while (stamp.ns.load(std::memory_order_acquire) == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    s.sync(true);  // already done: returns at once
  }
  return static_cast<double>(stamp.ns.load() - t0.time_since_epoch().count());
}

// ns per launch of `ops` launches then one synchronize, `reps` times over.
double stream(Side& s, int ops, int reps) {
  const auto t0 = Clock::now();
  for (int r = 0; r < reps; ++r) {
    for (int i = 0; i < ops; ++i) must(s.launch(false), "stream launch");
    s.sync(false);
  }
  return ns_since(t0) / (static_cast<double>(ops) * reps);
}

// ns per launch enqueued behind a gate on the big queue, `ops` per batch.
double gated(Side& s, int ops, int reps) {
  double total = 0;
  for (int r = 0; r < reps; ++r) {
    Gate gate;
    gate.close([&](void (*fn)(void*), void* p) { return s.host_fn(true, fn, p); });
    const auto t0 = Clock::now();
    for (int i = 0; i < ops; ++i) must(s.launch(true), "gated launch");
    total += ns_since(t0);
    gate.release();
    s.sync(true);
  }
  return total / (static_cast<double>(ops) * reps);
}

// The longest single enqueue (ns) of a kStallOps stream on the big queue,
// right after a 1M-deep burst on it has drained (`burst`), or without one
// (the control: what preemption alone costs the same loop).
double longest_enqueue(Side& s, bool burst) {
  if (burst) {
    Gate gate;
    gate.close([&](void (*fn)(void*), void* p) { return s.host_fn(true, fn, p); });
    for (int i = 0; i < kDeepOps; ++i) must(s.launch(true), "burst launch");
    gate.release();
    s.sync(true);
  }
  double worst = 0;
  for (int i = 0; i < kStallOps; ++i) {
    const auto t0 = Clock::now();
    must(s.launch(true), "stall launch");
    worst = std::max(worst, ns_since(t0));
  }
  s.sync(true);
  return worst;
}

void sleep_1ms(void*) { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }
void sleep_1s(void*) { std::this_thread::sleep_for(std::chrono::seconds(1)); }

std::string us(double ns) { return fmt(ns / 1000.0); }

// AXL_BENCH_WAITS=launch_wait,drain,... runs only the sections named (all by
// default): a loaded machine runs the deep ones for minutes.
bool section(const char* name) {
  const char* only = std::getenv("AXL_BENCH_WAITS");
  if (only == nullptr || *only == 0) return true;
  const std::string list = std::string(",") + only + ",";
  return list.find(std::string(",") + name + ",") != std::string::npos;
}

// Each side's samples of one figure, taken in alternating rounds.
template <class Measure>
std::vector<std::vector<double>> alternate(const std::vector<Side*>& sides, int rounds,
                                           Measure&& measure) {
  std::vector<std::vector<double>> out(sides.size());
  for (int r = 0; r < rounds; ++r) {
    for (size_t k = 0; k < sides.size(); ++k) {
      const size_t i = r % 2 == 0 ? k : sides.size() - 1 - k;  // ABBA
      out[i].push_back(measure(*sides[i]));
    }
  }
  return out;
}

void report_latency(const char* label, const std::vector<double>& v, bool targets) {
  const double p50 = percentile(v, 0.5);
  const double p90 = percentile(v, 0.9);
  std::printf("LAUNCH_WAIT_US side=%s p50=%s p90=%s p99=%s min=%s (n=%zu)\n", label, us(p50).c_str(),
              us(p90).c_str(), us(percentile(v, 0.99)).c_str(), us(minimum(v)).c_str(), v.size());
  if (targets) {
    // Absolute figures in the RATIO format so scripts/bench.sh lists them.
    ratio_line("launch_wait_p50_us (absolute, axl_h, cpu)", p50 / 1000.0, true, 1.0);
    ratio_line("launch_wait_p90_us (absolute, axl_h, cpu)", p90 / 1000.0, true, 3.0);
  }
}

}  // namespace

int main() {
  EnqueueFixture fx;  // placement: queue workers on their own CPU
  fx.warm_up();
  // The queues below get their workers on the worker CPU as well.
  fx.placement.place_main(Placement::kSame);
  AxlSide axl(fx);
  std::unique_ptr<DirectSide> now, before;
  if (const char* base = std::getenv("AXL_BENCH_BASELINE_CPU_PLUGIN"); base && *base) {
    now = std::make_unique<DirectSide>("direct_this_build", cpu_plugin_path());
    before = std::make_unique<DirectSide>("direct_baseline", base);
  }
  fx.placement.place_main(Placement::kSplit);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a run cut short keeps its lines
  std::printf("# bench_waits: %s\n", fx.placement.describe().c_str());

  // launch + wait
  if (section("launch_wait")) {
    launch_wait(axl, 2000);  // warm
    report_latency("axl_h", launch_wait(axl, kLatencySamples), true);
    // The same with the waiting thread on the worker's CPU, where the
    // scheduler can leave the two for many round trips on a small machine
    // (both only poll, neither sleeps long enough to be moved): each end
    // must yield the CPU to the other (spin_wait.hpp). No target; 20-23 us
    // before the waits yielded at once there, 0.3-1.2 us on two CPUs.
    if (fx.placement.worker_cpu() >= 0) {
      fx.placement.place_main(Placement::kSame);
      launch_wait(axl, 200);  // warm
      const std::vector<double> one = launch_wait(axl, kLatencySamples / 4);
      fx.placement.place_main(Placement::kSplit);
      report_latency("axl_h_one_cpu", one, false);
    }
    if (now) {
      const auto v = alternate({now.get(), before.get()}, 10,
                               [](Side& s) { return percentile(launch_wait(s, 2000), 0.5); });
      const auto w = alternate({now.get(), before.get()}, 10,
                               [](Side& s) { return percentile(launch_wait(s, 2000), 0.9); });
      std::printf("INFO launch_wait p50 us this_build=%s baseline=%s; p90 us this_build=%s "
                  "baseline=%s (medians of 10 alternating rounds of 2000)\n",
                  us(median(v[0])).c_str(), us(median(v[1])).c_str(), us(median(w[0])).c_str(),
                  us(median(w[1])).c_str());
    }

  }

  // drain with and without a waiter
  if (section("drain")) {
    std::vector<double> with, without;
    for (int r = 0; r < 2 * kDrainRounds; ++r) {
      const bool w = (r % 4 == 0 || r % 4 == 3);  // ABBA
      (w ? with : without).push_back(drain(axl, w));
    }
    std::printf("DRAIN_MS ops=%d with_waiter=%s (min %s) without=%s (min %s); medians of %d rounds\n",
                kDrainOps, fmt(median(with) / 1e6).c_str(), fmt(minimum(with) / 1e6).c_str(),
                fmt(median(without) / 1e6).c_str(), fmt(minimum(without) / 1e6).c_str(),
                kDrainRounds);
    ratio_line("drain_100k with_waiter/without (axl_h, cpu)", median(with) / median(without), true,
               1.1);
    if (now) {
      for (bool w : {true, false}) {
        const auto v = alternate({now.get(), before.get()}, 6, [w](Side& s) { return drain(s, w); });
        std::printf("INFO drain_100k %s waiter ms this_build=%s baseline=%s\n", w ? "with" : "without",
                    fmt(median(v[0]) / 1e6).c_str(), fmt(median(v[1]) / 1e6).c_str());
      }
    }
  }

  // deep against shallow, as a stream through the default bound
  if (section("deep")) {
    std::vector<double> deep, shallow;
    for (int r = 0; r < 2 * kDeepRounds; ++r) {
      const bool d = (r % 4 == 0 || r % 4 == 3);
      if (d) {
        deep.push_back(stream(axl, kDeepOps, 1));
      } else {
        shallow.push_back(stream(axl, kShallowOps, kDeepOps / kShallowOps));
      }
    }
    std::printf("DEEP_NS_PER_LAUNCH stream bound=%u: 1M_deep=%s (min %s) 1k_deep=%s (min %s)\n",
                static_cast<unsigned>(AXL_QUEUE_DEFAULT_MAX_PENDING), fmt(median(deep)).c_str(),
                fmt(minimum(deep)).c_str(), fmt(median(shallow)).c_str(),
                fmt(minimum(shallow)).c_str());
    ratio_line("deep_enqueue 1M/1k (stream through the default bound, axl_h, cpu)",
               median(deep) / median(shallow), true, 1.1);

    // Enqueue-only, worker held, queue sized for the whole burst.
    const double first = gated(axl, kDeepOps, 1);  // grows the ring
    std::vector<double> gdeep, gshallow;
    for (int r = 0; r < 2 * 3; ++r) {
      const bool d = (r % 4 == 0 || r % 4 == 3);
      if (d) {
        gdeep.push_back(gated(axl, kDeepOps, 1));
      } else {
        gshallow.push_back(gated(axl, kShallowOps, kDeepOps / kShallowOps));
      }
    }
    std::printf("INFO gated enqueue ns per launch (max_pending %u): 1M_deep=%s 1k_deep=%s "
                "ratio=%s first_1M_burst=%s\n",
                kBigQueue, fmt(median(gdeep)).c_str(), fmt(median(gshallow)).c_str(),
                fmt(median(gdeep) / median(gshallow)).c_str(), fmt(first).c_str());
    if (now) {
      const auto v = alternate({now.get(), before.get()}, 4, [](Side& s) {
        return stream(s, kDeepOps, 1) / stream(s, kShallowOps, kDeepOps / kShallowOps);
      });
      std::printf("INFO deep_enqueue 1M/1k stream ratio this_build=%s baseline=%s\n",
                  fmt(median(v[0])).c_str(), fmt(median(v[1])).c_str());
    }
  }

  // the longest enqueue after a burst
  if (section("stall")) {
    std::vector<double> worst, control;
    for (int r = 0; r < 3; ++r) {
      worst.push_back(longest_enqueue(axl, true));
      control.push_back(longest_enqueue(axl, false));
    }
    std::printf("STALL_US longest enqueue of %d, per round, after a 1M burst:", kStallOps);
    for (double w : worst) std::printf(" %s", us(w).c_str());
    std::printf("; without a burst (control):");
    for (double w : control) std::printf(" %s", us(w).c_str());
    std::printf("\n");
    ratio_line("stall_after_burst_us (absolute, min over 3 rounds of the longest enqueue)",
               minimum(worst) / 1000.0, true, 100.0);
    if (now) {  // the plugin alone: is a stall the queue's or the core's?
      const auto v = alternate({now.get(), before.get()}, 2,
                               [](Side& s) { return longest_enqueue(s, true); });
      std::printf("INFO stall_after_burst us (plugin table, min of 2) this_build=%s baseline=%s\n",
                  us(minimum(v[0])).c_str(), us(minimum(v[1])).c_str());
    }
  }

  // what the spin costs a waiting thread
  if (section("idle_cpu")) {
    const auto t0 = Clock::now();
    const double c0 = thread_cpu_ns();
    int waits = 0;
    while (Clock::now() - t0 < std::chrono::seconds(1)) {
      must(axl.host_fn(false, &sleep_1ms, nullptr), "sleep host fn");
      axl.sync(false);
      ++waits;
    }
    const double cpu = thread_cpu_ns() - c0;
    const double wall = ns_since(t0);
    const double c1 = thread_cpu_ns();
    must(axl.host_fn(false, &sleep_1s, nullptr), "sleep host fn");
    axl.sync(false);
    const double one = thread_cpu_ns() - c1;
    std::printf("IDLE_CPU waiting thread: %s ms CPU per s over %d waits of 1 ms (%s us per wait, "
                "spin then park), %s us CPU for one 1 s wait\n",
                fmt(cpu / wall * 1e3).c_str(), waits, us(cpu / waits).c_str(), us(one).c_str());
  }
  return 0;
}
