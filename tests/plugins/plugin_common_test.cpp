// Unit tests of plugins/common (linked statically, no plugin involved): the
// queue, event, flag and thread-pool semantics the cpu and virtual backends
// build on, including the parts the cpu backend cannot provoke through its
// ABI (failing operations, the cost hook).

#if __has_include(<catch2/catch_test_macros.hpp>)
#include <catch2/catch_test_macros.hpp>
#else
#include <catch2/catch.hpp>
#endif

#include <time.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "axl/common/event.hpp"
#include "axl/common/flag.hpp"
#include "axl/common/host_fn.hpp"
#include "axl/common/launch_args.hpp"
#include "axl/common/thread_pool.hpp"
#include "axl/common/work_queue.hpp"

using namespace axl::common;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST_CASE("WorkQueue: errors are sticky until synchronize, later ops still run", "[common]") {
  WorkQueue q;
  std::atomic<int> ran{0};
  REQUIRE(q.enqueue({}, [&] { ran++; }) == AXL_SUCCESS);
  REQUIRE(q.enqueue({}, [&](std::string& m) {
    m = "first failure";
    return AXL_ERROR_DEVICE_LOST;
  }) == AXL_SUCCESS);
  REQUIRE(q.enqueue({}, [&]() -> axl_status { return AXL_ERROR_INVALID_ARGUMENT; }) == AXL_SUCCESS);
  REQUIRE(q.enqueue({}, [&] { ran++; }) == AXL_SUCCESS);
  SyncResult r = q.synchronize();
  CHECK(r.status == AXL_ERROR_DEVICE_LOST);
  CHECK(r.message == "first failure");
  CHECK(ran.load() == 2);
  r = q.synchronize();
  CHECK(r.status == AXL_SUCCESS);
  CHECK(r.message.empty());
}

TEST_CASE("WorkQueue: exceptions in an op become statuses", "[common]") {
  WorkQueue q;
  REQUIRE(q.enqueue({}, [] { throw std::runtime_error("boom"); }) == AXL_SUCCESS);
  SyncResult r = q.synchronize();
  CHECK(r.status == AXL_ERROR_INTERNAL);
  CHECK(r.message.find("boom") != std::string::npos);
  REQUIRE(q.enqueue({}, [] { throw std::bad_alloc(); }) == AXL_SUCCESS);
  CHECK(q.synchronize().status == AXL_ERROR_OUT_OF_HOST_MEMORY);
}

TEST_CASE("WorkQueue: big closures, many chunks, order and destruction", "[common]") {
  std::vector<int> order;
  std::atomic<int> destroyed{0};
  struct Big {
    std::array<char, 512> pad{};  // forces the heap path
    std::vector<int>* order;
    int i;
    std::atomic<int>* destroyed;
    Big(std::vector<int>* o, int v, std::atomic<int>* d) : order(o), i(v), destroyed(d) {}
    Big(const Big& b) : pad(b.pad), order(b.order), i(b.i), destroyed(b.destroyed) {}
    ~Big() { destroyed->fetch_add(1); }
    void operator()() const { order->push_back(i); }
  };
  {
    WorkQueue q;
    for (int i = 0; i < 1000; ++i) {
      if (i % 3 == 0) {
        REQUIRE(q.enqueue({}, Big(&order, i, &destroyed)) == AXL_SUCCESS);
      } else {
        REQUIRE(q.enqueue({}, [&order, i] { order.push_back(i); }) == AXL_SUCCESS);
      }
    }
    // No synchronize: the destructor must drain.
  }
  REQUIRE(order.size() == 1000);
  for (int i = 0; i < 1000; ++i) REQUIRE(order[i] == i);
  // Each heap closure: the temporary argument and the queued copy.
  CHECK(destroyed.load() == 2 * 334);
}

TEST_CASE("WorkQueue: stop drains, then refuses; synchronize from the worker is refused",
          "[common]") {
  WorkQueue q;
  std::atomic<int> ran{0};
  std::atomic<axl_status> inner{-1};
  std::atomic<int> stop_from_worker{-1};
  REQUIRE(q.enqueue({}, [&] {
    std::this_thread::sleep_for(10ms);
    ran++;
  }) == AXL_SUCCESS);
  REQUIRE(q.enqueue({}, [&] { inner = q.synchronize().status; }) == AXL_SUCCESS);
  REQUIRE(q.enqueue({}, [&] { stop_from_worker = q.stop() ? 1 : 0; }) == AXL_SUCCESS);
  CHECK(q.stop());
  CHECK(ran.load() == 1);
  CHECK(inner.load() == AXL_ERROR_INVALID_STATE);
  CHECK(stop_from_worker.load() == 0);
  CHECK(q.enqueue({}, [] {}) == AXL_ERROR_INVALID_STATE);
  CHECK(q.stop());  // idempotent
  CHECK(q.synchronize().status == AXL_SUCCESS);
}

TEST_CASE("WorkQueue: the cost hook delays completion by the simulated time", "[common]") {
  std::atomic<int> priced{0};
  WorkQueue::Options opt;
  opt.thread_name = "axl-test-q";
  opt.cost_hook = [&](const OpInfo& info) -> uint64_t {
    priced++;
    // 1 ms per MiB moved, nothing for the rest.
    return info.kind == OpKind::kCopyHtoD ? info.bytes * 1000000ull / (1u << 20) : 0;
  };
  WorkQueue q(opt);
  Ref<Event> start = make_ref<Event>(), end = make_ref<Event>();
  REQUIRE(start->record(q) == AXL_SUCCESS);
  REQUIRE(q.enqueue({OpKind::kCopyHtoD, 30u << 20}, [] {}) == AXL_SUCCESS);  // 30 ms
  REQUIRE(end->record(q) == AXL_SUCCESS);
  const auto t0 = Clock::now();
  REQUIRE(q.synchronize().status == AXL_SUCCESS);
  CHECK(Clock::now() - t0 >= 25ms);
  const float ms = Event::elapsed_ms(*start, *end);
  CHECK(ms >= 29.5f);
  CHECK(ms < 2000.0f);  // milliseconds, not microseconds; generous for a loaded machine
  CHECK(priced.load() == 3);
}

TEST_CASE("Event: generations, out-of-order completion across queues", "[common]") {
  WorkQueue a, b;
  Ref<Flag> gate = make_ref<Flag>();
  auto* e = new Event();
  CHECK(e->query());
  CHECK_FALSE(e->has_timestamp());
  // Generation 1 on a, held back by the flag; generation 2 on b, free.
  REQUIRE(gate->enqueue_wait(a, 1) == AXL_SUCCESS);
  REQUIRE(e->record(a) == AXL_SUCCESS);
  REQUIRE(e->record(b) == AXL_SUCCESS);
  e->synchronize();  // waits for generation 2 only
  CHECK(e->query());
  CHECK(e->has_timestamp());
  // The handle goes away while generation 1 is still queued: the marker's
  // reference keeps the event alive until it has run.
  e->release();
  gate->store(1);
  CHECK(a.synchronize().status == AXL_SUCCESS);
}

TEST_CASE("Flag: wait_at_least sees a later store promptly", "[common]") {
  Ref<Flag> f = make_ref<Flag>();
  WorkQueue q;
  std::atomic<bool> after{false};
  REQUIRE(f->enqueue_wait(q, 10) == AXL_SUCCESS);
  REQUIRE(enqueue_host_fn(q, [](void* p) { static_cast<std::atomic<bool>*>(p)->store(true); }, &after) ==
          AXL_SUCCESS);
  std::this_thread::sleep_for(30ms);
  CHECK_FALSE(after.load());
  const auto t0 = Clock::now();
  std::atomic_ref<uint64_t>(*f->host_address()).store(11, std::memory_order_release);
  REQUIRE(q.synchronize().status == AXL_SUCCESS);
  CHECK(after.load());
  // The backoff is capped at 100 us; the bound leaves room for a loaded
  // machine's scheduling and still catches a wait that misses the store.
  CHECK(Clock::now() - t0 < 500ms);
  REQUIRE(f->enqueue_write(q, 3) == AXL_SUCCESS);
  REQUIRE(q.synchronize().status == AXL_SUCCESS);
  CHECK(f->load() == 3);
}

TEST_CASE("ThreadPool: covers every index once, any size, lazily started", "[common]") {
  ThreadPool pool("axl-test-pool");
  REQUIRE(pool.set_participants(3));
  CHECK_FALSE(pool.started());
  for (uint64_t n : {1ull, 2ull, 3ull, 7ull, 64ull, 1000ull, 12345ull}) {
    std::vector<std::atomic<int>> hits(n);
    pool.parallel_for(n, [&](uint64_t b, uint64_t e) {
      for (uint64_t i = b; i < e; ++i) hits[i]++;
    });
    for (uint64_t i = 0; i < n; ++i) REQUIRE(hits[i].load() == 1);
  }
  CHECK(pool.started());
  CHECK_FALSE(pool.set_participants(2));
  pool.parallel_for(0, [](uint64_t, uint64_t) { FAIL("no work for n = 0"); });
  pool.shutdown();
  CHECK_FALSE(pool.started());
  CHECK(pool.set_participants(2));
  CHECK(pool.participants() == 2);
}

TEST_CASE("ThreadPool: concurrent callers and exceptions", "[common]") {
  ThreadPool pool;
  REQUIRE(pool.set_participants(4));
  std::vector<std::thread> callers;
  std::atomic<uint64_t> total{0};
  for (int c = 0; c < 6; ++c) {
    callers.emplace_back([&] {
      for (int r = 0; r < 20; ++r) {
        pool.parallel_for(500, [&](uint64_t b, uint64_t e) { total += e - b; });
      }
    });
  }
  for (auto& t : callers) t.join();
  CHECK(total.load() == 6ull * 20 * 500);
  std::atomic<uint64_t> done{0};
  CHECK_THROWS_AS(pool.parallel_for(100,
                                    [&](uint64_t b, uint64_t e) {
                                      done += e - b;
                                      if (b == 0) throw std::runtime_error("block 0 failed");
                                    }),
                  std::runtime_error);
  CHECK(done.load() == 100);  // the other ranges still ran
  pool.shutdown();
}

namespace {

// Busy work the optimiser keeps: about `ns` of one core.
void burn(std::chrono::nanoseconds ns) {
  const auto until = Clock::now() + ns;
  while (Clock::now() < until) {
  }
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

}  // namespace

TEST_CASE("ThreadPool: back-to-back small launches find the helpers polling, not parked", "[common]") {
  ThreadPool pool;
  REQUIRE(pool.set_participants(2));
  pool.set_spin(2s);  // far longer than any gap below, even on a loaded machine
  const auto caller = std::this_thread::get_id();
  std::atomic<uint64_t> on_helper{0};
  constexpr uint64_t kBlocks = 16;
  for (int launch = 0; launch < 2000; ++launch) {
    std::array<std::atomic<int>, kBlocks> hits{};
    pool.parallel_for(kBlocks, [&](uint64_t b, uint64_t e) {
      if (std::this_thread::get_id() != caller) on_helper += e - b;
      for (uint64_t i = b; i < e; ++i) {
        burn(1us);
        hits[i]++;
      }
    });
    for (const auto& h : hits) REQUIRE(h.load() == 1);
  }
  // The helper took part, and never had to be woken: it polled from one
  // launch to the next (it starts polling, so it may not have parked once).
  CHECK(on_helper.load() > 0);
  CHECK(pool.parks() == 0);
  pool.shutdown();
}

TEST_CASE("ThreadPool: idle helpers park after their spin and then cost no CPU", "[common]") {
  ThreadPool pool;
  REQUIRE(pool.set_participants(3));
  pool.set_spin(1ms);
  pool.parallel_for(100, [](uint64_t, uint64_t) { burn(10us); });
  const auto t0 = Clock::now();
  while (pool.parks() < 2 && Clock::now() - t0 < 10s) std::this_thread::sleep_for(1ms);
  REQUIRE(pool.parks() >= 2);  // both helpers parked
  const double cpu0 = process_cpu_seconds();
  std::this_thread::sleep_for(200ms);
  // Parked helpers burn nothing (a poller would show ~0.4 s here).
  CHECK(process_cpu_seconds() - cpu0 < 0.05);
  // A launch wakes them; every index is still covered once.
  std::vector<std::atomic<int>> hits(1000);
  pool.parallel_for(hits.size(), [&](uint64_t b, uint64_t e) {
    for (uint64_t i = b; i < e; ++i) hits[i]++;
  });
  for (const auto& h : hits) REQUIRE(h.load() == 1);
  pool.shutdown();
}

TEST_CASE("ThreadPool: a launch of one block runs on the caller, once", "[common]") {
  ThreadPool pool;
  REQUIRE(pool.set_participants(4));
  const auto caller = std::this_thread::get_id();
  int calls = 0;
  pool.parallel_for(1, [&](uint64_t b, uint64_t e) {
    CHECK(b == 0);
    CHECK(e == 1);
    CHECK(std::this_thread::get_id() == caller);
    ++calls;
  });
  CHECK(calls == 1);
  pool.shutdown();
}

TEST_CASE("ThreadPool: a grid of more than 2^32 blocks is split into few disjoint ranges", "[common]") {
  ThreadPool pool;
  REQUIRE(pool.set_participants(3));
  const uint64_t n = (1ull << 32) + 12345;
  std::mutex mu;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  pool.parallel_for(n, [&](uint64_t b, uint64_t e) {
    std::lock_guard<std::mutex> lk(mu);
    ranges.emplace_back(b, e);
  });
  std::sort(ranges.begin(), ranges.end());
  uint64_t at = 0;
  for (const auto& [b, e] : ranges) {
    REQUIRE(b == at);
    REQUIRE(e > b);
    at = e;
  }
  CHECK(at == n);
  // Guided claims: about 2 x 3 x ln(16) large ones, then at most 96 of the
  // smallest size (n / 96), whatever n is.
  CHECK(ranges.size() <= 130);
  pool.shutdown();
}

TEST_CASE("ThreadPool: launches from two queues share the pool", "[common]") {
  ThreadPool pool;
  REQUIRE(pool.set_participants(3));
  constexpr int kLaunches = 200;
  constexpr uint64_t kBlocks = 777;
  std::array<std::vector<std::atomic<int>>, 2> data{std::vector<std::atomic<int>>(kBlocks),
                                                    std::vector<std::atomic<int>>(kBlocks)};
  std::array<WorkQueue, 2> queues;
  for (int l = 0; l < kLaunches; ++l) {
    for (int q = 0; q < 2; ++q) {
      REQUIRE(queues[q].enqueue({}, [&pool, &d = data[q]] {
        pool.parallel_for(kBlocks, [&](uint64_t b, uint64_t e) {
          for (uint64_t i = b; i < e; ++i) d[i]++;
        });
      }) == AXL_SUCCESS);
    }
  }
  for (auto& q : queues) REQUIRE(q.synchronize().status == AXL_SUCCESS);
  for (const auto& d : data)
    for (const auto& v : d) REQUIRE(v.load() == kLaunches);
  pool.shutdown();
}

TEST_CASE("ThreadPool: shutdown does not wait for polling helpers' spin to run out", "[common]") {
  ThreadPool pool;
  REQUIRE(pool.set_participants(3));
  pool.set_spin(60s);
  std::atomic<uint64_t> total{0};
  pool.parallel_for(64, [&](uint64_t b, uint64_t e) { total += e - b; });
  CHECK(total.load() == 64);
  const auto t0 = Clock::now();
  pool.shutdown();  // the helpers are polling now
  CHECK(Clock::now() - t0 < 10s);
  CHECK_FALSE(pool.started());
  CHECK(pool.parks() == 0);  // they stopped polling; they never parked
  // And the pool starts again.
  pool.parallel_for(64, [&](uint64_t b, uint64_t e) { total += e - b; });
  CHECK(total.load() == 128);
  pool.shutdown();
}

// Not run by default ([.]): prints what one enqueue costs next to a direct
// call of the same closure. Run with: axl_plugin_common_test "[.bench]"
TEST_CASE("WorkQueue: enqueue cost", "[.bench]") {
  constexpr int kOps = 200000;
  std::atomic<uint64_t> sink{0};
  auto op = [&sink] { sink.fetch_add(1, std::memory_order_relaxed); };
  auto t0 = Clock::now();
  for (int i = 0; i < kOps; ++i) op();
  const double direct_ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / kOps;
  WorkQueue q;
  t0 = Clock::now();
  for (int i = 0; i < kOps; ++i) (void)q.enqueue({}, op);
  const double enqueue_ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / kOps;
  (void)q.synchronize();
  const double total_ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / kOps;
  WARN("direct call " << direct_ns << " ns/op; enqueue " << enqueue_ns
                      << " ns/op; enqueue+run (synchronized) " << total_ns << " ns/op");
  CHECK(sink.load() == 2ull * kOps);
}

// ---- bounded queues: backpressure (issue 15) --------------------------------

TEST_CASE("WorkQueue: a full queue blocks the enqueue until the worker makes room",
          "[common][bounded]") {
  WorkQueue::Options opt;
  opt.capacity = 8;
  WorkQueue q(opt);
  CHECK(q.capacity() == 8);
  std::atomic<bool> open{false};
  std::atomic<uint64_t> completed{0};
  REQUIRE(q.enqueue({}, [&] {
    while (!open.load()) std::this_thread::yield();
    completed++;
  }) == AXL_SUCCESS);
  constexpr uint64_t kOps = 200;
  std::atomic<uint64_t> returned{1};  // the gate
  std::atomic<uint64_t> worst{0};     // most pending seen right after an enqueue
  std::thread producer([&] {
    for (uint64_t i = 1; i < kOps; ++i) {
      REQUIRE(q.enqueue({}, [&] { completed++; }) == AXL_SUCCESS);
      const uint64_t n = returned.fetch_add(1) + 1;
      // `completed` counts an op before the queue does, so this can only
      // understate what the queue holds.
      const uint64_t pending = n - completed.load();
      uint64_t w = worst.load();
      while (pending > w && !worst.compare_exchange_weak(w, pending)) {
      }
    }
  });
  // Gated: the producer stops at 8 pending (the gate and 7 more).
  std::this_thread::sleep_for(100ms);
  CHECK(returned.load() == 8);
  open = true;
  producer.join();
  CHECK(q.synchronize().status == AXL_SUCCESS);
  CHECK(completed.load() == kOps);
  CHECK(returned.load() == kOps);
  CHECK(worst.load() <= 8);
}

TEST_CASE("WorkQueue: a full queue behind a flag wait only this thread could write times out",
          "[common][bounded]") {
  WorkQueue::Options opt;
  opt.capacity = 8;
  opt.full_timeout_ms = 1000;  // well above a loaded machine's scheduling delays
  WorkQueue q(opt);
  Ref<Flag> flag = make_ref<Flag>();
  REQUIRE(flag->enqueue_wait(q, 1) == AXL_SUCCESS);
  std::atomic<int> ran{0};
  auto refused = std::make_shared<int>(0);
  int accepted = 0;
  axl_status s = AXL_SUCCESS;
  const auto t0 = Clock::now();
  for (int i = 0; i < 1000 && s == AXL_SUCCESS; ++i) {
    s = q.enqueue({}, [&ran, keep = refused] { ran++; });
    if (s == AXL_SUCCESS) ++accepted;
  }
  const auto waited = Clock::now() - t0;
  CHECK(s == AXL_ERROR_TIMEOUT);
  CHECK(accepted == 7);  // the flag wait plus 7 fill the queue
  CHECK(waited >= 1000ms);
  CHECK(waited < 10s);  // bounded: 1.25 timeouts plus scheduling
  const std::string& m = WorkQueue::refusal_message();
  INFO(m);
  CHECK(m.find("full (8 operations pending") != std::string::npos);
  CHECK(m.find("waits for the completion flag at ") != std::string::npos);
  CHECK(m.find("to reach 1") != std::string::npos);
  char address[32];
  std::snprintf(address, sizeof address, "%p", static_cast<void*>(flag->host_address()));
  CHECK(m.find(address) != std::string::npos);
  CHECK(m.find("write the flag from another thread or enqueue fewer operations before it") !=
        std::string::npos);
  // Still stuck behind the same wait: the next full enqueue fails at once.
  const auto t1 = Clock::now();
  CHECK(q.enqueue({}, [keep = refused] {}) == AXL_ERROR_TIMEOUT);
  CHECK(Clock::now() - t1 < 500ms);  // not another full timeout
  // Nothing half-enqueued: the refused closures are gone, the rest runs once
  // the flag is written.
  CHECK(refused.use_count() == 1 + accepted);
  flag->store(1);
  CHECK(q.synchronize().status == AXL_SUCCESS);
  CHECK(ran.load() == accepted);
  CHECK(refused.use_count() == 1);
  CHECK(q.enqueue({}, [] {}) == AXL_SUCCESS);  // usable again
}

TEST_CASE("WorkQueue: a full queue behind a slow but progressing op keeps waiting",
          "[common][bounded]") {
  WorkQueue::Options opt;
  opt.capacity = 2;
  opt.full_timeout_ms = 20;
  WorkQueue q(opt);
  std::atomic<int> ran{0};
  for (int i = 0; i < 6; ++i) {
    // Each op alone outlasts the timeout; it is not a flag wait.
    REQUIRE(q.enqueue({}, [&] {
      std::this_thread::sleep_for(60ms);
      ran++;
    }) == AXL_SUCCESS);
  }
  // A flag wait that is written in time is no deadlock either.
  Ref<Flag> flag = make_ref<Flag>();
  REQUIRE(flag->enqueue_wait(q, 1) == AXL_SUCCESS);
  std::thread writer([&] {
    std::this_thread::sleep_for(10ms);
    flag->store(1);
  });
  for (int i = 0; i < 4; ++i) REQUIRE(q.enqueue({}, [&] { ran++; }) == AXL_SUCCESS);
  writer.join();
  CHECK(q.synchronize().status == AXL_SUCCESS);
  CHECK(ran.load() == 10);
}

TEST_CASE("WorkQueue: an enqueue on its own full queue from the worker is refused",
          "[common][bounded]") {
  WorkQueue::Options opt;
  opt.capacity = 1;
  WorkQueue q(opt);
  std::atomic<axl_status> inner{-1};
  std::string why;
  REQUIRE(q.enqueue({}, [&] {
    inner = q.enqueue({}, [] {});
    why = WorkQueue::refusal_message();
  }) == AXL_SUCCESS);
  CHECK(q.synchronize().status == AXL_SUCCESS);
  CHECK(inner.load() == AXL_ERROR_INVALID_STATE);
  CHECK(why.find("own worker") != std::string::npos);
}

TEST_CASE("WorkQueue: a million ops without synchronize stay within the bound's chunks",
          "[common][bounded]") {
  WorkQueue q;  // default capacity
  REQUIRE(q.capacity() == WorkQueue::kDefaultCapacity);
  std::atomic<uint64_t> ran{0};
  constexpr uint64_t kOps = 1000000;
  uint64_t refused = 0;
  for (uint64_t i = 0; i < kOps; ++i) {
    // A little slower than an enqueue, so an unbounded queue would grow.
    const axl_status s = q.enqueue({}, [&ran] {
      volatile int sink = 0;
      for (int k = 0; k < 64; ++k) sink = sink + 1;
      ran.fetch_add(1, std::memory_order_relaxed);
    });
    if (s != AXL_SUCCESS) ++refused;
  }
  CHECK(refused == 0);
  // Before synchronize: memory is what a full queue spans, not what went
  // through it (a chunk holds 64 slots).
  const uint64_t chunks = q.chunks_allocated();
  INFO("chunks allocated: " << chunks);
  CHECK(chunks <= WorkQueue::kDefaultCapacity / 64 + 3);
  CHECK(q.synchronize().status == AXL_SUCCESS);
  CHECK(ran.load() == kOps);
}

TEST_CASE("WorkQueue::from_desc reads the 1.2 fields only when struct_size covers them",
          "[common][bounded]") {
  axl_queue_desc d{};
  d.struct_size = sizeof d;
  d.max_pending = 16;
  d.full_timeout_ms = 5;
  WorkQueue::Options o = WorkQueue::from_desc({}, d);
  CHECK(o.capacity == 16);
  CHECK(o.full_timeout_ms == 5);
  d.full_timeout_ms = AXL_QUEUE_FULL_TIMEOUT_NEVER;
  CHECK(WorkQueue::from_desc({}, d).full_timeout_ms == WorkQueue::kNoFullTimeout);
  d.max_pending = 0;
  d.full_timeout_ms = 0;
  o = WorkQueue::from_desc({}, d);
  CHECK(o.capacity == 0);  // the constructor takes 0 as kDefaultCapacity
  CHECK(o.full_timeout_ms == WorkQueue::kDefaultFullTimeoutMs);
  // A 1.0/1.1 core's desc ends at trace_id: whatever follows is not read.
  d.struct_size = offsetof(axl_queue_desc, max_pending);
  d.max_pending = 16;
  d.full_timeout_ms = 5;
  o = WorkQueue::from_desc({}, d);
  CHECK(o.capacity == 0);
  CHECK(o.full_timeout_ms == WorkQueue::kDefaultFullTimeoutMs);
}

TEST_CASE("check_launch_args: AXL_ARG_LOCAL only where the backend takes it", "[common]") {
  using axl::common::check_launch_args;
  const axl_devaddr addr = 0x1000;
  const axl_kernel_arg args[] = {{AXL_ARG_DEVADDR, 8, &addr}, {AXL_ARG_LOCAL, 256, nullptr}};
  // A backend without __local parameters (cpu, virtual, cuda, hip) names the argument.
  CHECK_THAT(check_launch_args("k", nullptr, -1, args, 2, {16, 256}),
             Catch::Contains("argument 1 is AXL_ARG_LOCAL (256 bytes"));
  // One that has them (opencl) takes it: a size, no value.
  CHECK(check_launch_args("k", nullptr, -1, args, 2, {16, 256, true}).empty());
  const axl_kernel_arg empty[] = {{AXL_ARG_LOCAL, 0, nullptr}};
  CHECK_THAT(check_launch_args("k", nullptr, -1, empty, 1, {16, 256, true}),
             Catch::Contains("local memory of 0 bytes"));
  // A declared parameter list never has a local parameter.
  const axl::common::KernelParam params[] = {{AXL_ARG_DEVADDR, 8}, {AXL_ARG_SCALAR, 4}};
  CHECK_THAT(check_launch_args("k", params, 2, args, 2, {16, 256, true}), Catch::Contains("got LOCAL"));
}
