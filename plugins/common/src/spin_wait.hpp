// The spinning half of a host wait that spins, then parks (as CUDA's
// cudaDeviceScheduleAuto does): WorkQueue::synchronize and Event's waits
// poll their counter here first and park on their condition variable only
// when this gives up, so a short wait costs no futex round trip on either
// side and the worker notifies (takes the lock) only for a parked waiter.
#pragma once

#include <chrono>
#include <thread>

#include "cpu_relax.hpp"

namespace axl::common::detail {

// How long a wait polls before it parks. A launch or small copy handed to a
// running worker completes in about a microsecond, a parked hand-off costs
// 5-40 us (futex wake plus the scheduler), so the first few microseconds
// spin with a pause; after that the waiter yields, which costs nothing on an
// idle core and gives a busy one (the worker's, on a loaded machine) back.
// Bounded in time, not iterations: the CPU a parked wait wastes is at most
// kSpinWaitTotal per wait whatever the machine (benchmarks/bench_waits.cpp
// prints it for a loop of 1 ms waits).
inline constexpr std::chrono::microseconds kSpinWaitPause{10};
inline constexpr std::chrono::microseconds kSpinWaitTotal{50};

// Polls `done` until it returns true (then true) or kSpinWaitTotal has
// passed (then false: the caller parks). Reads the clock once per batch of
// polls so a fast completion pays for no clock read.
template <class Done>
bool spin_until(Done&& done) {
  using Clock = std::chrono::steady_clock;
  constexpr int kPollsPerClockRead = 16;
  if (done()) return true;
  const Clock::time_point start = Clock::now();
  for (;;) {
    const auto spent = Clock::now() - start;
    if (spent >= kSpinWaitTotal) return done();
    const bool pause = spent < kSpinWaitPause;
    for (int i = 0; i < kPollsPerClockRead; ++i) {
      if (pause) {
        cpu_relax();
      } else {
        std::this_thread::yield();
      }
      if (done()) return true;
    }
  }
}

}  // namespace axl::common::detail
