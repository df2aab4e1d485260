// The spinning half of every wait in this library that spins, then parks
// (as CUDA's cudaDeviceScheduleAuto does): WorkQueue::synchronize and
// Event's waits, an idle queue worker waiting for its next operation, and
// the thread pool's helpers waiting for the next launch. Each polls here
// first and parks on its condition variable only when this gives up, so a
// short wait costs no futex round trip on either side and the other side
// notifies (takes a lock) only for a parked waiter.
#pragma once

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "cpu_relax.hpp"

namespace axl::common::detail {

// A wait polls with a pause for its first part, then yields between polls
// until it gives up, then parks. Bounded in time, not iterations: the CPU a
// parked wait wastes is at most its budget whatever the machine
// (benchmarks/bench_waits.cpp prints it for a loop of 1 ms waits).
//
// Pausing first: a launch or small copy handed to a running worker
// completes in about a microsecond, and a yield while another process
// wants this CPU gives it away for a whole time slice (milliseconds; the
// scheduler moves a yielding thread behind the others): measured, a waiter
// and an idle worker yielding after 1 us instead of 10 and 7 put a tenth of
// launch + wait round trips at 4 ms while a compiler ran (bench_waits).
//
// Yielding at once when the thread being waited for is on this thread's
// CPU (the `beside` test, on_cpu_of): it cannot run while this one pauses.
// The scheduler can leave a waiter beside its worker for many round trips
// on a small machine: neither sleeps long enough to be placed anew, and a
// thread that only polls stays cache-hot to the load balancer. Pausing
// there made a launch + wait 20-23 us on a 2-vCPU machine against 0.3 us on
// two CPUs; yielding at once, 4-5 us (bench_waits' one-CPU figure).
// Parking would not help: the wake-up was placed back beside the worker,
// and cost a futex round trip more (8 us).
inline constexpr std::chrono::microseconds kSpinWaitPause{10};
// A host wait's whole budget (synchronize, events).
inline constexpr std::chrono::microseconds kSpinWaitTotal{50};

// Nobody known to share this CPU: the default for spin_until's `beside`.
struct NobodyBeside {
  bool operator()() const noexcept { return false; }
};

// Polls `done` until it returns true (then true) or `budget` has passed
// (then false: the caller parks): with a pause for the first `pause` of
// it, or none once `beside()`, then with yields. The clock is read once
// per 16 pauses or per yield and `beside` once per 16 pauses, so a fast
// completion pays for neither.
template <class Done, class Beside = NobodyBeside>
bool spin_until(Done&& done, std::chrono::nanoseconds budget = kSpinWaitTotal,
                std::chrono::nanoseconds pause = kSpinWaitPause, Beside&& beside = {}) {
  using Clock = std::chrono::steady_clock;
  constexpr int kPausesPerClockRead = 16;
  if (done()) return true;
  if (budget <= std::chrono::nanoseconds::zero()) return false;
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + budget;
  const Clock::time_point pause_end = start + std::min(budget, pause);
  while (!beside()) {
    for (int i = 0; i < kPausesPerClockRead; ++i) {
      cpu_relax();
      if (done()) return true;
    }
    if (Clock::now() >= pause_end) break;
  }
  while (Clock::now() < deadline) {
    std::this_thread::yield();
    if (done()) return true;
  }
  return done();
}

// The CPU the calling thread runs on, or -1 where that cannot be read
// (sched_getcpu: a few ns through the kernel's restartable sequences).
inline int current_cpu() noexcept { return sched_getcpu(); }

// True when `cpu` (another thread's last current_cpu()) is this thread's.
inline bool on_cpu_of(int cpu) noexcept { return cpu >= 0 && cpu == current_cpu(); }

// Where the two ends of waits on a queue run, for `beside`: the CPU its
// worker last started a batch of operations on, and the CPU of the last
// thread to begin waiting for it (a host thread, or another queue's worker
// waiting on an event; -1: none waits). A fixed table, one
// padded slot per queue, found by the number the queue took at
// construction (WorkQueue::cpu_slot), so an event, which may outlive the
// queue it was recorded on, can still read its slot. Slots are reused
// after kSlots queues: a shared slot only makes `beside` guess wrong, never
// unsafe.
struct alignas(64) WaitSidesSlot {
  std::atomic<int> worker{-1};
  std::atomic<int> waiter{-1};
};
class WaitSides {
 public:
  static constexpr uint32_t kSlots = 256;
  static uint32_t take_slot() noexcept { return next_.fetch_add(1, std::memory_order_relaxed) % kSlots; }
  // Stored only when it changed: waiters read the line while they spin.
  static void worker_runs(uint32_t slot) noexcept {
    const int cpu = current_cpu();
    if (slots_[slot].worker.load(std::memory_order_relaxed) != cpu)
      slots_[slot].worker.store(cpu, std::memory_order_relaxed);
  }
  // A host thread begins (true) or ends (false) a wait on the queue.
  static void waiter(uint32_t slot, bool waits) noexcept {
    slots_[slot].waiter.store(waits ? current_cpu() : -1, std::memory_order_relaxed);
  }
  // A host wait's spin on the queue of `slot` (WorkQueue::synchronize,
  // Event's waits): spin_until's, yielding at once beside the worker, and
  // seen by that worker while it lasts. A wait already done touches no slot.
  template <class Done>
  static bool spin_as_waiter(uint32_t slot, Done&& done) {
    if (done()) return true;
    waiter(slot, true);
    const bool reached =
        spin_until(done, kSpinWaitTotal, kSpinWaitPause, [slot] { return beside_worker(slot); });
    waiter(slot, false);
    return reached;
  }
  // The waiter's and the worker's `beside` tests.
  static bool beside_worker(uint32_t slot) noexcept {
    return on_cpu_of(slots_[slot].worker.load(std::memory_order_relaxed));
  }
  static bool beside_waiter(uint32_t slot) noexcept {
    return on_cpu_of(slots_[slot].waiter.load(std::memory_order_relaxed));
  }

 private:
  static inline WaitSidesSlot slots_[kSlots];
  static inline std::atomic<uint32_t> next_{0};
};

}  // namespace axl::common::detail
