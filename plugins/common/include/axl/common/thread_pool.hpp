// ThreadPool: runs the blocks of a kernel grid on all cores. Several queue
// workers may call parallel_for at once (one launch per queue); their jobs
// share the pool first-come, first-served and each caller also works on its
// own job, so a launch makes progress even when the pool is busy elsewhere.
//
// How a launch uses every core without one thread waiting on another:
// - Ranges are claimed from one atomic counter, large ones first and small
//   ones at the end (guided), so a thread that arrives late, or is
//   preempted, delays the others by at most one small range: nobody is
//   handed a share in advance that the others must wait for.
// - Helpers stay hot: after a job a helper polls for the next one for a
//   bounded time (spin(), 1 ms by default; a pause for the first 50 us,
//   then yields, so it gives way to a thread placed on its CPU) before it
//   parks on a condition variable, so back-to-back launches find it
//   running, not asleep on a run queue. An idle process spends at most spin() of CPU per helper after its
//   last launch, then nothing.
// - The caller never waits for a wake-up: it starts on its own job at once.
//   It wakes one parked helper only when none is polling; a helper that
//   joins and finds work left wakes the next. A helper woken onto a busy
//   core thus comes too late to claim anything and wakes nobody else, and
//   the caller, which was running anyway, has done the work itself.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace axl::common {

// Non-owning reference to a callable `void(uint64_t begin, uint64_t end)`:
// parallel_for must not allocate per launch the way std::function can.
class RangeFn {
 public:
  // Binding a temporary is fine when, as in parallel_for(n, [&](...) {...}),
  // the view does not outlive the full expression.
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, RangeFn>>>
  RangeFn(F&& f) noexcept  // NOLINT(google-explicit-constructor): a view, like string_view
      : obj_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* o, uint64_t b, uint64_t e) {
          (*static_cast<std::remove_reference_t<F>*>(o))(b, e);
        }) {}
  void operator()(uint64_t begin, uint64_t end) const { call_(obj_, begin, end); }

 private:
  void* obj_;
  void (*call_)(void*, uint64_t, uint64_t);
};

// The number of CPUs this process may run on (its affinity mask, which
// taskset and container cpusets narrow), or hardware_concurrency() if that
// cannot be read; at least 1.
unsigned available_cpus() noexcept;

class ThreadPool {
 public:
  // How long an idle helper polls for the next job before it parks. Long
  // enough to cover the gap between a launch's end and the next one from a
  // waiting host thread (a wake-up and an enqueue, tens of microseconds,
  // more on a loaded machine); short enough that it costs an idle process
  // nothing it would notice.
  static constexpr std::chrono::microseconds kDefaultSpin{1000};

  // `thread_name` names the helper threads (15 chars kept).
  explicit ThreadPool(std::string thread_name = "axl-pool");
  // Joins the helpers if shutdown() was not called. Plugins call shutdown()
  // from backend_shutdown and keep the pool itself in never-destroyed
  // storage, so this only runs for pools owned by tests.
  ~ThreadPool();

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // How many threads work on one parallel_for: the caller plus
  // `participants - 1` helpers. 0 means available_cpus(). Takes effect when
  // the helpers next start; returns false (and changes nothing) while they
  // are running.
  bool set_participants(unsigned participants);

  // The participant count in force, or that the next start will use.
  unsigned participants() const;

  // How long idle helpers (and a caller waiting for helpers still inside
  // its job) poll before they park; 0 parks at once. Takes effect at the
  // next poll.
  void set_spin(std::chrono::microseconds spin) noexcept;
  std::chrono::microseconds spin() const noexcept;

  // Calls body(begin, end) over disjoint ranges covering [0, n), from the
  // calling thread and the helpers, and returns when all of them returned.
  // Starts the helpers on first use. Ranges may run in any order and
  // concurrently. If a body throws, the other ranges still finish and the
  // first exception is rethrown here.
  void parallel_for(uint64_t n, RangeFn body);

  // Joins the helpers, polling ones included (they stop polling at once).
  // A later parallel_for starts them again.
  void shutdown();

  // True while the helper threads exist (for tests of lazy start).
  bool started() const;

  // How many times a helper has parked since the pool was made: after its
  // spin ran out, or at once with spin() 0 (for tests of the spin).
  uint64_t parks() const noexcept;

 private:
  struct Job {
    Job(RangeFn b, uint64_t count, uint64_t workers) noexcept;
    RangeFn body;
    uint64_t n;
    uint64_t split;                    // a claim takes 1/split of what is left...
    uint64_t min_range;                // ...but never less than this
    std::atomic<uint64_t> next{0};     // first index not yet handed out
    std::atomic<uint32_t> helpers{0};  // helpers inside; changed under mu_
    std::exception_ptr error;          // first exception; guarded by mu_
  };

  void ensure_started_locked();
  void helper_main();
  // The next job with unclaimed ranges, joined (helpers + 1), or NULL when
  // stopping. Polls for spin(), then parks.
  Job* next_job();
  // With mu_ held: joins the first job that has unclaimed ranges, dropping
  // exhausted ones from the list; NULL if there is none.
  Job* join_locked();
  // With mu_ held: takes `job` off the list if it is still there.
  void unlist_locked(Job* job);
  // Wakes one parked helper if `job` has work left and no helper polls.
  void wake_one_if_needed(const Job& job);
  // Claims and runs ranges of `job` until none are left.
  void work_on(Job& job);
  // Removes `job` from the list and leaves it (helpers - 1). The job may be
  // gone as soon as this returns.
  void leave(Job* job);

  std::string thread_name_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // parked helpers wait for jobs or stop
  std::condition_variable done_cv_;  // callers wait for helpers to leave their job
  std::deque<Job*> jobs_;            // jobs that may have unclaimed ranges
  std::vector<std::thread> threads_;
  unsigned participants_ = 0;        // 0: available_cpus() at start
  bool started_ = false;
  unsigned parked_ = 0;              // helpers waiting on work_cv_; guarded by mu_
  unsigned parked_callers_ = 0;      // callers waiting on done_cv_; guarded by mu_
  // Read by polling threads without mu_.
  std::atomic<bool> stopping_{false};
  std::atomic<uint32_t> listed_{0};    // jobs_.size(); written under mu_
  std::atomic<uint32_t> polling_{0};   // helpers polling for a job
  std::atomic<uint64_t> parks_{0};
  std::atomic<int64_t> spin_ns_{std::chrono::nanoseconds(kDefaultSpin).count()};
};

}  // namespace axl::common
