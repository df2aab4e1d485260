// Shared pieces of the axl benchmarks: checked calls, a core-less handle on
// the cpu plugin (its function table called directly), per-batch samples and
// the RATIO lines every benchmark prints.
#pragma once

#include <benchmark/benchmark.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "axl/axl.h"
#include "axl/plugin.h"
#include "host_services.hpp"

namespace axl_bench {

[[noreturn]] inline void die(const std::string& what) {
  std::fprintf(stderr, "bench: %s\n", what.c_str());
  std::exit(2);
}

// Aborts the benchmark run on a failed axl.h call, with the core's detail.
inline void check(axl_status s, const char* what) {
  if (s != AXL_SUCCESS) {
    die(std::string(what) + " failed: " + axl_status_name(s) + ": " + axl_last_error_message());
  }
}

// ---------------------------------------------------------------------------
// Thread placement.
//
// Left to the scheduler, a benchmark thread that alternates with a queue
// worker (one sleeps while the other runs) is moved onto and off the
// worker's CPU by wake-affine placement every few tens of ms, and enqueue
// costs jump between modes 2-4x apart. So the benchmarks place threads
// themselves, identically on both sides of every comparison: queue workers
// are created while the creating thread is pinned to the "worker CPU" (the
// second usable CPU) and inherit it; the benchmark thread is then pinned,
// per measurement, either to the first usable CPU (Split: as an application
// thread and its queue's worker run in real use) or to the worker CPU too
// (Same: no cache-line transfer between cores at all, the lower bound).
// With one usable CPU both mean that CPU. AXL_BENCH_PLACEMENT=none turns
// all pinning off (for experiments).
//
// Even pinned, two vCPUs of a VM can sit closer or farther apart on the host
// over time; a cross-core cache-line transfer then costs more for a while
// (seen here: whole repetitions 2-4x slower in Split). Interleaved
// repetitions and medians keep such periods from deciding a result.
// ---------------------------------------------------------------------------
enum class Placement { kSplit, kSame };

inline const char* placement_name(Placement p) { return p == Placement::kSplit ? "split" : "same"; }

inline bool pinning_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("AXL_BENCH_PLACEMENT");
    return !(e && std::string(e) == "none");
  }();
  return on;
}

// The CPUs this process may use, in order.
inline std::vector<int> usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) out.push_back(c);
  }
  return out;
}

inline void pin_this_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
    die("cannot pin a thread to CPU " + std::to_string(cpu));
}

// Construct it before creating any queue (its workers then start on the
// worker CPU); call place_main() before each measurement.
class ThreadPlacement {
 public:
  ThreadPlacement() {
    const std::vector<int> cpus = usable_cpus();
    if (!pinning_enabled() || cpus.empty()) return;
    main_cpu_ = cpus[0];
    worker_cpu_ = cpus.size() > 1 ? cpus[1] : cpus[0];
    pin_this_thread(worker_cpu_);
  }
  void place_main(Placement p) const {
    if (main_cpu_ >= 0) pin_this_thread(p == Placement::kSplit ? main_cpu_ : worker_cpu_);
  }
  int worker_cpu() const { return worker_cpu_; }  // -1: pinning off
  std::string describe() const {
    if (main_cpu_ < 0) return "pinning off";
    return "queue workers on CPU " + std::to_string(worker_cpu_) +
           ", benchmark thread on CPU " + std::to_string(main_cpu_) + " (split) or " +
           std::to_string(worker_cpu_) + " (same)";
  }

 private:
  int main_cpu_ = -1;
  int worker_cpu_ = -1;
};

// ---------------------------------------------------------------------------
// The cpu plugin without the core.
//
// libaxl.so has already dlopen'ed build/lib/axl/plugins/libaxl_plugin_cpu.so
// (or will); dlopen of the same file returns that very instance, and calling
// its negotiate again would swap the core's host services for ours. So the
// direct side loads a byte-identical private copy of the file: its own static
// state (backend, tracer, pool), the same machine code, the same flags.
// ---------------------------------------------------------------------------
class DirectCpuPlugin {
 public:
  explicit DirectCpuPlugin(const std::string& plugin_path) {
    char dir[] = "/tmp/axl-bench-XXXXXX";
    if (mkdtemp(dir) == nullptr) die("mkdtemp failed");
    const std::string copy = std::string(dir) + "/libaxl_plugin_cpu.so";
    // The file and its folder go before any die() below (which exits): the
    // mapping stays valid after the file is gone.
    auto remove_copy = [&] {
      unlink(copy.c_str());
      rmdir(dir);
    };
    {
      std::ifstream in(plugin_path, std::ios::binary);
      std::ofstream out(copy, std::ios::binary);
      if (in) out << in.rdbuf();
      if (!in || !out) {
        remove_copy();
        die(in ? "cannot write " + copy : "cannot read the cpu plugin at " + plugin_path);
      }
    }
    // Negotiated with the shared fake host (tools/test-host): it records the
    // plugin's logs and errors off the hot path (tracing is never switched on
    // here, and the timed calls succeed, so nothing is recorded while timing).
    axl_test::LoadedPlugin n = axl_test::load_plugin(copy, host_);
    remove_copy();
    if (!n.ok()) die("the cpu plugin: " + n.error);
    t_ = n.table;
    ok(t_->backend_init(), "backend_init");
    ok(t_->device_get(0, &dev_), "device_get");
  }

  DirectCpuPlugin(const DirectCpuPlugin&) = delete;
  DirectCpuPlugin& operator=(const DirectCpuPlugin&) = delete;

  const axl_plugin_table& table() const { return *t_; }
  axl_pdevice device() const { return dev_; }

  axl_pqueue create_queue() {
    axl_queue_desc desc{};
    desc.struct_size = sizeof desc;
    desc.trace_id = 1;
    axl_pqueue q = nullptr;
    ok(t_->queue_create(dev_, &desc, &q), "queue_create");
    return q;
  }

  void ok(axl_status s, const char* what) const {
    if (s != AXL_SUCCESS) die(std::string("direct cpu plugin: ") + what + " failed: " +
                              axl_status_name(s) + ": " + host_.last_report().message);
  }

 private:
  // Never destroyed: the plugin keeps the host pointer (and is never closed,
  // as the core never closes plugins).
  axl_test::FakeHost& host_ = axl_test::new_host();
  const axl_plugin_table* t_ = nullptr;
  axl_pdevice dev_ = nullptr;
};

// The cpu plugin of the build this benchmark belongs to (AXL_BENCH_CPU_PLUGIN
// in the environment overrides it).
inline std::string cpu_plugin_path() {
  if (const char* p = std::getenv("AXL_BENCH_CPU_PLUGIN"); p && *p) return p;
  return AXL_BENCH_CPU_PLUGIN;
}

// ---------------------------------------------------------------------------
// Samples: each benchmark run records one value per timed batch (ns per
// operation). Google Benchmark calls a benchmark function several times
// (iteration-count estimation, then the real run); each call starts a fresh
// sample list, so what is left after the run is the final run's batches.
// ---------------------------------------------------------------------------
inline std::map<std::string, std::vector<double>>& samples() {
  static std::map<std::string, std::vector<double>> s;
  return s;
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

inline double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

inline double minimum(const std::vector<double>& v) {
  return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
}

// "name/rep:K" -> one value per repetition (the median of its batches).
inline std::vector<double> per_rep_medians(const std::string& name, int reps) {
  std::vector<double> out;
  for (int r = 0; r < reps; ++r) {
    auto it = samples().find(name + "/rep:" + std::to_string(r));
    if (it != samples().end() && !it->second.empty()) out.push_back(median(it->second));
  }
  return out;
}

inline std::string fmt(double v, int prec = 2) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", prec, v);
  return buf;
}

// Prints e.g. "RATIO enqueue_launch axl_h/direct = 1.07 (target <= 1.2): MET".
inline bool ratio_line(const std::string& what, double ratio, bool lower_is_target,
                       double target) {
  const bool met = lower_is_target ? ratio <= target : ratio >= target;
  std::printf("RATIO %s = %s (target %s %s): %s\n", what.c_str(), fmt(ratio).c_str(),
              lower_is_target ? "<=" : ">=", fmt(target, 1).c_str(), met ? "MET" : "NOT MET");
  return met;
}

}  // namespace axl_bench
