// Unit tests of WorkQueue's and Event's waits (spin, then park: spin_wait.hpp),
// the chunk ring that never returns memory while the queue lives, and the
// inline run of an operation or marker on an idle queue (enqueue_or_run,
// enqueue_marker).

#if __has_include(<catch2/catch_test_macros.hpp>)
#include <catch2/catch_test_macros.hpp>
#else
#include <catch2/catch.hpp>
#endif

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <pthread.h>
#include <sched.h>

#include "../../plugins/common/src/spin_wait.hpp"
#include "axl/common/event.hpp"
#include "axl/common/work_queue.hpp"

using namespace axl::common;
using namespace std::chrono_literals;

namespace {

// Holds a queue's worker inside one operation until open() is called.
class Gate {
 public:
  axl_status close(WorkQueue& q) {
    return q.enqueue({}, [this] {
      entered_ = true;
      while (!open_.load()) std::this_thread::sleep_for(100us);
    });
  }
  void wait_entered() const {
    while (!entered_.load()) std::this_thread::yield();
  }
  void open() { open_ = true; }

 private:
  std::atomic<bool> entered_{false};
  std::atomic<bool> open_{false};
};

}  // namespace

TEST_CASE("WorkQueue wait: a waiter that parks and one that spins are both woken", "[common][wait]") {
  WorkQueue q;
  Gate gate;
  std::atomic<int> after{0};
  REQUIRE(gate.close(q) == AXL_SUCCESS);
  REQUIRE(q.enqueue({}, [&] { after++; }) == AXL_SUCCESS);
  gate.wait_entered();
  std::atomic<int> woken{0};
  std::atomic<int> saw{0};
  auto waiter = [&] {
    const SyncResult r = q.synchronize();
    if (r.status == AXL_SUCCESS) saw += after.load();
    woken++;
  };
  // Held far past the spin window (50 us): this one parks.
  std::thread parked(waiter);
  std::this_thread::sleep_for(20ms);
  CHECK(woken.load() == 0);
  // Started just before the gate opens: usually still spinning when the
  // worker finishes; either way it must return.
  std::thread spinning(waiter);
  gate.open();
  parked.join();
  spinning.join();
  CHECK(woken.load() == 2);
  CHECK(saw.load() == 2);  // both saw the operation behind the gate done
  // Back-to-back short waits (the spinning path nearly always).
  for (int i = 0; i < 1000; ++i) {
    REQUIRE(q.enqueue({}, [&] { after++; }) == AXL_SUCCESS);
    REQUIRE(q.synchronize().status == AXL_SUCCESS);
    REQUIRE(after.load() == i + 2);
  }
}

TEST_CASE("spin_until: answers, gives up by its budget, and yields beside its thread", "[common][wait]") {
  using detail::spin_until;
  int polls = 0;
  // Done at once: no clock, no `beside`.
  int besides = 0;
  CHECK(spin_until([&] { return ++polls > 0; }, 1ms, 1ms, [&] { return ++besides > 0; }));
  CHECK(polls == 1);
  CHECK(besides == 0);
  // A zero budget polls once and gives up.
  polls = 0;
  CHECK_FALSE(spin_until([&] { return ++polls > 5; }, 0ns));
  CHECK(polls == 1);
  // Never done: false once the budget passed, pausing or (beside) yielding.
  for (bool beside : {false, true}) {
    const auto t0 = std::chrono::steady_clock::now();
    CHECK_FALSE(spin_until([] { return false; }, 2ms, 1ms, [&] { return beside; }));
    CHECK(std::chrono::steady_clock::now() - t0 >= 2ms);
  }
  // Done later, while yielding beside: seen.
  polls = 0;
  CHECK(spin_until([&] { return ++polls == 50; }, 10s, 10s, [] { return true; }));
  CHECK(polls == 50);
}

TEST_CASE("WorkQueue wait: a waiter on the worker's own CPU is answered, round trip after round trip",
          "[common][wait]") {
  // The state the scheduler can leave a waiter in on a small machine: the
  // worker (which inherits this thread's mask) and this thread on one CPU,
  // each of which must give the CPU to the other (spin_wait.hpp's `beside`).
  cpu_set_t old_mask;
  REQUIRE(pthread_getaffinity_np(pthread_self(), sizeof old_mask, &old_mask) == 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(detail::current_cpu(), &one);
  REQUIRE(pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0);
  {
    WorkQueue q;
    std::atomic<int> ran{0};
    for (int i = 0; i < 2000; ++i) {
      REQUIRE(q.enqueue({}, [&] { ran++; }) == AXL_SUCCESS);
      REQUIRE(q.synchronize().status == AXL_SUCCESS);
      REQUIRE(ran.load() == i + 1);
    }
    // The same through an event recorded behind each operation.
    Ref<Event> ev = make_ref<Event>();
    for (int i = 0; i < 2000; ++i) {
      REQUIRE(q.enqueue({}, [&] { ran++; }) == AXL_SUCCESS);
      REQUIRE(ev->record(q) == AXL_SUCCESS);
      REQUIRE(ev->synchronize().status == AXL_SUCCESS);
      REQUIRE(ran.load() == 2000 + i + 1);
    }
  }
  REQUIRE(pthread_setaffinity_np(pthread_self(), sizeof old_mask, &old_mask) == 0);
}

TEST_CASE("WorkQueue wait: sticky errors reach a spinning and a parked synchronize",
          "[common][wait]") {
  WorkQueue q;
  // Spinning: nothing ahead of the failure.
  REQUIRE(q.enqueue({}, [](std::string& m) {
    m = "quick failure";
    return AXL_ERROR_DEVICE_LOST;
  }) == AXL_SUCCESS);
  SyncResult r = q.synchronize();
  CHECK(r.status == AXL_ERROR_DEVICE_LOST);
  CHECK(r.message == "quick failure");
  CHECK(q.synchronize().status == AXL_SUCCESS);
  // Parked: the failure sits behind a gate held past the spin window.
  Gate gate;
  REQUIRE(gate.close(q) == AXL_SUCCESS);
  REQUIRE(q.enqueue({}, [](std::string& m) {
    m = "late failure";
    return AXL_ERROR_INTERNAL;
  }) == AXL_SUCCESS);
  REQUIRE(q.enqueue({}, [] { return AXL_ERROR_TIMEOUT; }) == AXL_SUCCESS);  // not the first
  std::thread opener([&] {
    std::this_thread::sleep_for(20ms);
    gate.open();
  });
  r = q.synchronize();
  opener.join();
  CHECK(r.status == AXL_ERROR_INTERNAL);
  CHECK(r.message == "late failure");
  CHECK(q.synchronize().status == AXL_SUCCESS);
}

TEST_CASE("WorkQueue wait: stop() while a waiter waits drains and wakes it", "[common][wait]") {
  for (auto hold : {0us, 30us, 5000us}) {  // spinning, at the edge, parked
    WorkQueue q;
    Gate gate;
    std::atomic<bool> ran{false};
    REQUIRE(gate.close(q) == AXL_SUCCESS);
    REQUIRE(q.enqueue({}, [&] { ran = true; }) == AXL_SUCCESS);
    gate.wait_entered();
    // Catch's assertions are not thread-safe: the threads report, main checks.
    std::atomic<bool> synced{false}, saw_ran{false}, stopped{false};
    std::thread waiter([&] {
      synced = q.synchronize().status == AXL_SUCCESS;
      saw_ran = ran.load();
    });
    std::thread stopper([&] { stopped = q.stop(); });
    std::this_thread::sleep_for(hold);
    gate.open();
    stopper.join();
    waiter.join();
    CHECK(synced.load());
    CHECK(saw_ran.load());
    CHECK(stopped.load());
    CHECK(q.enqueue({}, [] {}) == AXL_ERROR_INVALID_STATE);
    CHECK(q.synchronize().status == AXL_SUCCESS);  // nothing left to wait for
  }
}

TEST_CASE("Event wait: a parked and a spinning synchronize are both woken, errors kept",
          "[common][wait]") {
  WorkQueue q;
  Ref<Event> e = make_ref<Event>();
  Gate gate;
  REQUIRE(gate.close(q) == AXL_SUCCESS);
  REQUIRE(q.enqueue({}, [] { return AXL_ERROR_DEVICE_LOST; }) == AXL_SUCCESS);
  REQUIRE(e->record(q) == AXL_SUCCESS);
  std::atomic<int> lost{0};
  auto waiter = [&] {
    if (e->synchronize().status == AXL_ERROR_DEVICE_LOST) lost++;
  };
  std::thread parked(waiter);
  std::this_thread::sleep_for(20ms);
  CHECK(!e->query());
  std::thread spinning(waiter);
  gate.open();
  parked.join();
  spinning.join();
  CHECK(lost.load() == 2);  // the event reports the failure ahead of it
  CHECK(e->query());
  CHECK(q.synchronize().status == AXL_ERROR_DEVICE_LOST);  // still sticky on the queue
  // A queue waiting on the event from its own worker (a cross-queue wait).
  WorkQueue other;
  Gate g2;
  REQUIRE(g2.close(q) == AXL_SUCCESS);
  REQUIRE(e->record(q) == AXL_SUCCESS);
  std::atomic<bool> after_wait{false};
  REQUIRE(e->enqueue_wait(other) == AXL_SUCCESS);
  REQUIRE(other.enqueue({}, [&] { after_wait = true; }) == AXL_SUCCESS);
  std::this_thread::sleep_for(5ms);
  CHECK(!after_wait.load());
  g2.open();
  CHECK(other.synchronize().status == AXL_SUCCESS);
  CHECK(after_wait.load());
}

TEST_CASE("WorkQueue ring: a 1-deep queue and deep bursts keep order and reuse their chunks",
          "[common][wait]") {
  SECTION("1 deep") {
    WorkQueue::Options opt;
    opt.capacity = 1;
    WorkQueue q(opt);
    std::vector<int> order;
    for (int i = 0; i < 2000; ++i) REQUIRE(q.enqueue({}, [&order, i] { order.push_back(i); }) == AXL_SUCCESS);
    REQUIRE(q.synchronize().status == AXL_SUCCESS);
    REQUIRE(order.size() == 2000);
    for (int i = 0; i < 2000; ++i) REQUIRE(order[i] == i);
    CHECK(q.chunks_allocated() <= 3);
  }
  SECTION("deep bursts") {
    constexpr int kDepth = 40000;
    WorkQueue::Options opt;
    opt.capacity = kDepth + 1;  // the gate plus the burst
    WorkQueue q(opt);
    std::vector<int> order;
    order.reserve(kDepth);
    uint64_t after_first = 0;
    for (int burst = 0; burst < 3; ++burst) {
      order.clear();
      Gate gate;
      REQUIRE(gate.close(q) == AXL_SUCCESS);
      for (int i = 0; i < kDepth; ++i)
        REQUIRE(q.enqueue({}, [&order, i] { order.push_back(i); }) == AXL_SUCCESS);
      gate.open();
      REQUIRE(q.synchronize().status == AXL_SUCCESS);
      REQUIRE(order.size() == static_cast<size_t>(kDepth));
      bool in_order = true;
      for (int i = 0; i < kDepth; ++i) in_order = in_order && order[i] == i;
      CHECK(in_order);
      CHECK(q.chunks_allocated() < opt.capacity / 64 + 3);
      // The first burst grew the ring; later ones fit in it.
      if (burst == 0) after_first = q.chunks_allocated();
      CHECK(q.chunks_allocated() == after_first);
    }
    // Shallow work after the burst reuses the same ring too.
    for (int i = 0; i < 1000; ++i) REQUIRE(q.enqueue({}, [] {}) == AXL_SUCCESS);
    REQUIRE(q.synchronize().status == AXL_SUCCESS);
    CHECK(q.chunks_allocated() == after_first);
  }
  SECTION("producer and worker lapping a small ring") {
    WorkQueue::Options opt;
    opt.capacity = 200;  // about three chunks
    WorkQueue q(opt);
    std::atomic<uint64_t> next{0};
    std::atomic<bool> ordered{true};
    for (uint64_t i = 0; i < 200000; ++i) {
      REQUIRE(q.enqueue({}, [&, i] {
        if (next.fetch_add(1) != i) ordered = false;
      }) == AXL_SUCCESS);
    }
    REQUIRE(q.synchronize().status == AXL_SUCCESS);
    CHECK(ordered.load());
    CHECK(next.load() == 200000);
    CHECK(q.chunks_allocated() < opt.capacity / 64 + 3);
  }
}

namespace {

// Calls enqueue_or_run until its operation runs on the calling thread (the
// worker has parked, a few microseconds after its last operation), for up
// to 5 s; true when it did. Each try that was queued is waited for.
bool ran_inline_eventually(WorkQueue& q) {
  const std::thread::id me = std::this_thread::get_id();
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    std::atomic<bool> here{false};
    if (q.enqueue_or_run({}, [&]() noexcept { here = std::this_thread::get_id() == me; }) != AXL_SUCCESS)
      return false;
    if (q.synchronize().status != AXL_SUCCESS) return false;
    if (here.load()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

}  // namespace

TEST_CASE("WorkQueue: enqueue_or_run runs on the caller only when nothing is ahead",
          "[common][wait]") {
  WorkQueue q;
  const std::thread::id me = std::this_thread::get_id();
  CHECK(ran_inline_eventually(q));
  // Behind a held operation it is queued and runs after it, on the worker.
  Gate gate;
  REQUIRE(gate.close(q) == AXL_SUCCESS);
  gate.wait_entered();
  std::atomic<bool> ran{false};
  std::thread::id where = me;
  REQUIRE(q.enqueue_or_run({}, [&]() noexcept {
    where = std::this_thread::get_id();
    ran = true;
  }) == AXL_SUCCESS);
  std::this_thread::sleep_for(2ms);
  CHECK(!ran.load());
  // From the queue's own worker too (its operation is still pending).
  std::atomic<int> inner{0};
  REQUIRE(q.enqueue({}, [&] {
    const std::thread::id worker = std::this_thread::get_id();
    q.enqueue_or_run({}, [&, worker]() noexcept { inner = std::this_thread::get_id() == worker ? 2 : 1; });
    if (inner.load() == 0) inner = -1;  // not run yet: queued, as it must be
  }) == AXL_SUCCESS);
  gate.open();
  REQUIRE(q.synchronize().status == AXL_SUCCESS);
  // The callback may enqueue its operation after that synchronize counted
  // what it waits for (it ran once the gate opened); it did so before the
  // callback returned, so a second synchronize covers it.
  REQUIRE(q.synchronize().status == AXL_SUCCESS);
  CHECK(ran.load());
  CHECK(where != me);
  CHECK(inner.load() == 2);  // queued by the callback, then run by the worker after it
  // Drained: inline again.
  CHECK(ran_inline_eventually(q));
  // A priced queue (the virtual backend's) always hands work to its worker.
  WorkQueue::Options priced;
  priced.cost_hook = [](const OpInfo&) -> uint64_t { return 0; };
  WorkQueue p(priced);
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(1ms);  // long enough for its worker to park
    std::atomic<bool> here{true};
    REQUIRE(p.enqueue_or_run({}, [&]() noexcept { here = std::this_thread::get_id() == me; }) == AXL_SUCCESS);
    REQUIRE(p.synchronize().status == AXL_SUCCESS);
    CHECK(!here.load());
  }
  // Stopped: refused, not run.
  q.stop();
  ran = false;
  CHECK(q.enqueue_or_run({}, [&]() noexcept { ran = true; }) == AXL_ERROR_INVALID_STATE);
  CHECK(!ran.load());
}

TEST_CASE("WorkQueue: enqueue_or_run keeps one thread's order with queued operations",
          "[common][wait]") {
  // A queued operation wakes the parked worker; an enqueue_or_run right
  // behind it, before the worker is up, must queue too. Pauses let the
  // worker park so both paths are taken many times.
  WorkQueue q;
  const std::thread::id me = std::this_thread::get_id();
  std::atomic<int> next{0};
  std::atomic<bool> ordered{true};
  std::atomic<int> inline_runs{0};
  constexpr int kOps = 4000;
  for (int i = 0; i < kOps; ++i) {
    auto step = [&, i] {
      if (next.load() != i) ordered = false;
      next = i + 1;
    };
    if (i % 3 == 0) {
      REQUIRE(q.enqueue({}, step) == AXL_SUCCESS);
    } else {
      REQUIRE(q.enqueue_or_run({}, [&, step]() noexcept {
        if (std::this_thread::get_id() == me) inline_runs++;
        step();
      }) == AXL_SUCCESS);
    }
    if (i % 16 == 15) std::this_thread::sleep_for(200us);
  }
  REQUIRE(q.synchronize().status == AXL_SUCCESS);
  CHECK(ordered.load());
  CHECK(next.load() == kOps);
  CHECK(inline_runs.load() > 0);  // the idle path was taken
}

TEST_CASE("WorkQueue: enqueue_marker reports the pending failure, inline or queued",
          "[common][wait]") {
  WorkQueue q;
  const std::thread::id me = std::this_thread::get_id();
  REQUIRE(q.enqueue({}, [](std::string& m) {
    m = "first";
    return AXL_ERROR_INTERNAL;
  }) == AXL_SUCCESS);
  // Waits for the failure without clearing it (synchronize would).
  while (q.pending_error().status == AXL_SUCCESS) std::this_thread::yield();
  bool inline_seen = false;
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!inline_seen && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
    std::atomic<bool> here{false};
    std::atomic<int> status{-1};
    std::string message;
    REQUIRE(q.enqueue_marker({}, [&](SyncResult r) noexcept {
      message = r.message;
      here = std::this_thread::get_id() == me;
      status = r.status;
    }) == AXL_SUCCESS);
    while (status.load() == -1) std::this_thread::yield();
    CHECK(status.load() == AXL_ERROR_INTERNAL);
    CHECK(message == "first");
    inline_seen = here.load();
  }
  CHECK(inline_seen);
  // Behind a held operation the marker waits for it.
  Gate gate;
  REQUIRE(gate.close(q) == AXL_SUCCESS);
  std::atomic<bool> reached{false};
  REQUIRE(q.enqueue_marker({}, [&](SyncResult) noexcept { reached = true; }) == AXL_SUCCESS);
  std::this_thread::sleep_for(2ms);
  CHECK(!reached.load());
  gate.open();
  const SyncResult r = q.synchronize();
  CHECK(reached.load());
  CHECK(r.status == AXL_ERROR_INTERNAL);  // the markers did not clear it
}

TEST_CASE("Event: a record on an idle queue is complete when it returns", "[common][wait]") {
  WorkQueue q;
  REQUIRE(ran_inline_eventually(q));
  // The worker stays parked while everything runs inline, so each of these
  // records completes on the caller.
  Ref<Event> e = make_ref<Event>();
  for (int i = 0; i < 100; ++i) {
    REQUIRE(e->record(q) == AXL_SUCCESS);
    CHECK(e->query());
    CHECK(e->synchronize().status == AXL_SUCCESS);
  }
  // A record behind held work is not.
  Gate gate;
  REQUIRE(gate.close(q) == AXL_SUCCESS);
  REQUIRE(e->record(q) == AXL_SUCCESS);
  CHECK(!e->query());
  gate.open();
  CHECK(e->synchronize().status == AXL_SUCCESS);
  CHECK(e->query());
}
