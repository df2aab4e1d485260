// A lock for critical sections of a few dozen instructions that are rarely
// contended (a queue's submissions: internal.hpp Queue::submit; the launch
// trace's record: trace.cpp). Taking it is one inline
// atomic exchange and releasing it one plain store, where a std::mutex is
// two calls into libc and two locked instructions: about 55 of the ~360
// instructions tracing added to a launch (callgrind, bench_trace_on).
// A contender yields a while (the holder may be preempted: with more
// threads than cores spinning would only delay it), then sleeps, so a lock
// held long by the rare slow path costs its waiters no CPU.
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

namespace axl::core {

class SpinLock {
 public:
  // BasicLockable, for std::lock_guard.
  void lock() noexcept {
    if (!busy_.exchange(true, std::memory_order_acquire)) return;
    contended();
  }
  void unlock() noexcept { busy_.store(false, std::memory_order_release); }

 private:
  // Out of line: keeps the uncontended lock() small enough to inline.
  __attribute__((noinline)) void contended() noexcept {
    int spins = 0;
    do {
      while (busy_.load(std::memory_order_relaxed)) {
        if (++spins < kYields) {
          std::this_thread::yield();
        } else {
          std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
      }
    } while (busy_.exchange(true, std::memory_order_acquire));
  }
  static constexpr int kYields = 64;
  std::atomic<bool> busy_{false};
};

}  // namespace axl::core
