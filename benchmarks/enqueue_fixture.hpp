// The enqueue-cost fixture shared by bench_enqueue and bench_trace_hook: the
// same two operations, each enqueued through axl.h and through the cpu
// plugin's function table directly, timed in batches.
//
//   launch: the built-in test kernel AXL_TEST_KERNEL_INCREMENT_U32 with
//           (buffer, n = 0), grid 1x1x1, block 1x1x1, no shared memory: the
//           kernel does nothing, so the worker spends the least time on it.
//   copy4:  4 bytes from a host variable into a cpu-device buffer (axl.h:
//           axl_queue_copy_from_host, which the core routes to the plugin's
//           queue_copy_htod; direct: queue_copy_htod).
//
// Method (identical on both sides): one benchmark iteration is a batch of
// batch_size() enqueues timed with steady_clock; then, outside the timed
// region, the queue is synchronized, so every batch starts on a drained
// queue and the queue never holds more than one batch. Each batch gives one
// sample (ns per enqueue); a repetition's value is the median of its
// batches, which discards batches hit by preemption. Where the worker and
// the benchmark thread run and what the worker does during the batch is a
// Config (below); thread placement is explained in bench_common.hpp.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "bench_common.hpp"

namespace axl_bench {

// 64 keeps a batch inside one chunk of the plugin's WorkQueue (64 slots per
// chunk; the chunks form a ring kept for the queue's life), so the timed
// region measures enqueues, not the ring's one-time growth.
// AXL_BENCH_BATCH overrides it (for experiments only).
inline int batch_size() {
  static const int n = [] {
    const char* e = std::getenv("AXL_BENCH_BATCH");
    const int v = e ? std::atoi(e) : 0;
    return v > 0 ? v : 64;
  }();
  return n;
}

// How the queue's worker spends the timed batch.
enum class Mode {
  // Blocked in a host callback enqueued (untimed) just before the batch and
  // released (untimed) after it: the timed enqueues never wake the worker
  // and never contend with it, so they measure the submitting thread's own
  // work.
  kGated,
  // Free: the worker drains while the batch is being enqueued, as in real
  // use; the figure then also holds the coherence traffic between the two
  // threads, which depends on what the worker is doing (spinning, parked,
  // running an operation) and on how far apart the two cores are.
  kConcurrent,
};

// The conditions of one measurement.
struct Config {
  const char* name;
  Mode mode;
  Placement where;
};
// Real use: the worker drains on its own core while the batch is enqueued.
inline constexpr Config kConcurrentSplit{"concurrent_split", Mode::kConcurrent, Placement::kSplit};
// The submitting thread's own work, worker on another core (the lines of the
// queue's slots still move between the two caches once per lap).
inline constexpr Config kGatedSplit{"gated_split", Mode::kGated, Placement::kSplit};
// The submitting thread's own work with no cross-core traffic at all: the
// most repeatable figure, and the lower bound.
inline constexpr Config kGatedSame{"gated_same", Mode::kGated, Placement::kSame};

// A host callback that holds the worker until released.
struct Gate {
  std::atomic<uint32_t> entered{0};
  std::atomic<uint32_t> open{0};
  static void hold(void* p) {
    auto* g = static_cast<Gate*>(p);
    g->entered.store(1, std::memory_order_release);
    g->open.wait(0, std::memory_order_acquire);
  }
  // Enqueues hold() with `enqueue_host_fn` and returns once the worker is in it.
  template <class EnqueueHostFn>
  void close(EnqueueHostFn&& enqueue_host_fn) {
    entered.store(0, std::memory_order_relaxed);
    open.store(0, std::memory_order_relaxed);
    if (enqueue_host_fn(&Gate::hold, this) != AXL_SUCCESS) die("cannot enqueue the gate");
    while (entered.load(std::memory_order_acquire) == 0) std::this_thread::yield();
  }
  void release() {
    open.store(1, std::memory_order_release);
    open.notify_one();
  }
};

struct EnqueueFixture {
  // axl.h side.
  axl_device_t dev = nullptr;
  axl_queue_t q = nullptr;
  axl_kernel_t kernel = nullptr;
  axl_buffer_t buf = nullptr;
  // Direct side: a private instance of the same plugin file.
  std::unique_ptr<DirectCpuPlugin> direct;
  const axl_plugin_table* t = nullptr;
  axl_pqueue dq = nullptr;
  axl_pkernel dkernel = nullptr;
  axl_devaddr daddr = 0;

  static constexpr uint64_t kBufBytes = 4096;
  ThreadPlacement placement;  // see bench_common.hpp

  EnqueueFixture() {
    // Every worker thread (the core's default and benchmark queues, the
    // direct queue) is created while this thread sits on the worker CPU.
    check(axl_init(), "axl_init");
    check(axl_device_get("cpu", 0, &dev), "axl_device_get(cpu, 0)");
    check(axl_queue_create(dev, 0, &q), "axl_queue_create");
    check(axl_device_get_test_kernel(dev, AXL_TEST_KERNEL_INCREMENT_U32, &kernel),
          "axl_device_get_test_kernel");
    check(axl_buffer_create(dev, kBufBytes, 0, &buf), "axl_buffer_create");

    direct = std::make_unique<DirectCpuPlugin>(cpu_plugin_path());
    t = &direct->table();
    dq = direct->create_queue();
    direct->ok(t->device_get_test_kernel(direct->device(), AXL_TEST_KERNEL_INCREMENT_U32,
                                         &dkernel),
               "device_get_test_kernel");
    direct->ok(t->memory_alloc(direct->device(), kBufBytes, &daddr), "memory_alloc");
    placement.place_main(Placement::kSplit);
  }

  // ---- the four operations; each returns the enqueue's status -------------
  axl_status axl_launch() { return axl_launch_on(q); }
  // The same launch on another axl.h queue of this device.
  axl_status axl_launch_on(axl_queue_t queue) {
    static const uint32_t grid[3] = {1, 1, 1};
    static const uint32_t block[3] = {1, 1, 1};
    static const uint32_t n = 0;
    const axl_launch_arg args[2] = {
        {AXL_KERNEL_ARG_BUFFER, 0, buf, nullptr},
        {AXL_KERNEL_ARG_SCALAR, sizeof n, nullptr, &n},
    };
    return axl_queue_launch(queue, kernel, grid, block, 0, args, 2);
  }
  axl_status direct_launch() { return launch_through(*t, dq, dkernel, daddr); }
  // The launch through plugin table `table` (any instance of the plugin).
  static axl_status launch_through(const axl_plugin_table& table, axl_pqueue queue,
                                   axl_pkernel k, const axl_devaddr& addr) {
    static const uint32_t n = 0;
    axl_launch_config cfg{};
    cfg.struct_size = sizeof cfg;
    cfg.grid[0] = cfg.grid[1] = cfg.grid[2] = 1;
    cfg.block[0] = cfg.block[1] = cfg.block[2] = 1;
    cfg.shared_mem_bytes = 0;
    const axl_kernel_arg args[2] = {
        {AXL_ARG_DEVADDR, sizeof(axl_devaddr), &addr},
        {AXL_ARG_SCALAR, sizeof n, &n},
    };
    return table.queue_launch(queue, k, &cfg, args, 2);
  }
  axl_status axl_copy4() {
    static const uint32_t src = 0x01020304u;
    return axl_queue_copy_from_host(q, buf, 0, &src, sizeof src);
  }
  axl_status direct_copy4() {
    static const uint32_t src = 0x01020304u;
    return t->queue_copy_htod(dq, daddr, &src, sizeof src);
  }
  axl_status axl_host_fn(void (*fn)(void*), void* p) {
    return axl_queue_enqueue_host_func(q, fn, p);
  }
  axl_status direct_host_fn(void (*fn)(void*), void* p) {
    return t->queue_enqueue_host_fn(dq, fn, p);
  }
  void axl_sync() { check(axl_queue_synchronize(q), "axl_queue_synchronize"); }
  void direct_sync() { direct->ok(t->queue_synchronize(dq), "queue_synchronize"); }

  // Untimed: first-use costs (pool threads, page faults, branch predictors).
  void warm_up() {
    for (int round = 0; round < 200; ++round) {
      for (int i = 0; i < batch_size(); ++i) {
        check(axl_launch(), "warm-up launch");
        check(axl_copy4(), "warm-up copy");
      }
      axl_sync();
      for (int i = 0; i < batch_size(); ++i) {
        direct->ok(direct_launch(), "warm-up launch");
        direct->ok(direct_copy4(), "warm-up copy");
      }
      direct_sync();
    }
  }
};

// One benchmark run: batches of `enqueue` each followed by an untimed `sync`;
// in kGated mode each batch is bracketed by an untimed gate on the worker,
// enqueued with `host_fn`.
template <class Enqueue, class HostFn, class Sync>
void run_batches(benchmark::State& state, const std::string& key, const ThreadPlacement& tp,
                 Placement where, Mode mode, Enqueue&& enqueue, HostFn&& host_fn, Sync&& sync) {
  tp.place_main(where);
  Gate gate;
  using clock = std::chrono::steady_clock;
  std::vector<double>& s = samples()[key];
  s.clear();
  const int n = batch_size();
  double total_ns = 0;
  for (auto _ : state) {
    axl_status bad = AXL_SUCCESS;
    if (mode == Mode::kGated) gate.close(host_fn);
    const auto t0 = clock::now();
    for (int i = 0; i < n; ++i) bad |= enqueue();
    const auto t1 = clock::now();
    if (mode == Mode::kGated) gate.release();
    sync();
    if (bad != AXL_SUCCESS) {
      state.SkipWithError("an enqueue failed");
      break;
    }
    const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
    state.SetIterationTime(ns * 1e-9);
    s.push_back(ns / n);
    total_ns += ns;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * n);
  state.counters["ns_per_enq_med"] = median(s);
  state.counters["p10"] = percentile(s, 0.10);
  state.counters["p90"] = percentile(s, 0.90);
  state.counters["ns_per_enq_mean"] =
      state.iterations() ? total_ns / (static_cast<double>(state.iterations()) * n) : 0.0;
}

enum class Path { kAxl, kDirect };
enum class Op { kLaunch, kCopy4 };

inline const char* path_name(Path p) { return p == Path::kAxl ? "axl_h" : "direct"; }
inline const char* op_name(Op o) { return o == Op::kLaunch ? "enqueue_launch" : "enqueue_copy4"; }

// "<op>/<config>/<path>"; repetitions append "/rep:<r>".
inline std::string series_name(Op op, const Config& c, Path path) {
  return std::string(op_name(op)) + "/" + c.name + "/" + path_name(path);
}

inline EnqueueFixture*& fixture() {
  static EnqueueFixture* fx = nullptr;
  return fx;
}

// Registers repetition `rep` of one series: `batches` batches, fixed, so
// that both sides of a comparison do exactly the same number of enqueues.
inline void register_rep(Op op, const Config& c, Path path, int rep, int batches) {
  const std::string key = series_name(op, c, path) + "/rep:" + std::to_string(rep);
  benchmark::RegisterBenchmark(key.c_str(), [key, op, c, path](benchmark::State& st) {
    EnqueueFixture& fx = *fixture();
    const bool axl = path == Path::kAxl;
    run_batches(
        st, key, fx.placement, c.where, c.mode,
        [&fx, op, axl] {
          if (op == Op::kLaunch) return axl ? fx.axl_launch() : fx.direct_launch();
          return axl ? fx.axl_copy4() : fx.direct_copy4();
        },
        [&fx, axl](void (*fn)(void*), void* p) {
          return axl ? fx.axl_host_fn(fn, p) : fx.direct_host_fn(fn, p);
        },
        [&fx, axl] {
          if (axl) fx.axl_sync(); else fx.direct_sync();
        });
  })->UseManualTime()->Iterations(batches);
}

// Registers `reps` repetitions of every (config, op) pair on both paths,
// round-robin: repetition r of every series runs before repetition r + 1 of
// any, and within a pair the order alternates (ABBA), so a slow period of
// the machine lands on all series alike.
inline void register_interleaved(const std::vector<Config>& configs, const std::vector<Op>& ops,
                                 int reps, int batches) {
  for (int r = 0; r < reps; ++r) {
    for (const Config& c : configs) {
      for (Op op : ops) {
        const Path first = r % 2 == 0 ? Path::kAxl : Path::kDirect;
        const Path second = r % 2 == 0 ? Path::kDirect : Path::kAxl;
        register_rep(op, c, first, r, batches);
        register_rep(op, c, second, r, batches);
      }
    }
  }
}

}  // namespace axl_bench
