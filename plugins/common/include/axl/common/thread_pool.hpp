// ThreadPool: runs the blocks of a kernel grid on all cores. Several queue
// workers may call parallel_for at once (one launch per queue); their jobs
// share the pool first-come, first-served and each caller also works on its
// own job, so a launch makes progress even when the pool is busy elsewhere.
#pragma once

#include <atomic>
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

  // Calls body(begin, end) over disjoint ranges covering [0, n), from the
  // calling thread and the helpers, and returns when all of them returned.
  // Starts the helpers on first use. Ranges may run in any order and
  // concurrently. If a body throws, the other ranges still finish and the
  // first exception is rethrown here.
  void parallel_for(uint64_t n, RangeFn body);

  // Joins the helpers. A later parallel_for starts them again.
  void shutdown();

  // True while the helper threads exist (for tests of lazy start).
  bool started() const;

 private:
  struct Job {
    Job(RangeFn b, uint64_t count) noexcept : body(b), n(count) {}
    RangeFn body;
    uint64_t n;
    uint64_t grain = 1;
    std::atomic<uint64_t> next{0};   // first index not yet handed out
    std::atomic<uint64_t> done{0};   // indices finished
    uint32_t helpers = 0;            // helpers inside the job; guarded by mu_
    std::exception_ptr error;        // first exception; guarded by mu_
  };

  void ensure_started_locked();
  void helper_main();
  // Claims and runs ranges of `job` until none are left.
  void work_on(Job& job);

  std::string thread_name_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // helpers wait for jobs or stop
  std::condition_variable done_cv_;  // callers wait for their job to finish
  std::deque<Job*> jobs_;            // jobs that still have unclaimed ranges
  std::vector<std::thread> threads_;
  unsigned participants_ = 0;        // 0: available_cpus() at start
  bool started_ = false;
  bool stopping_ = false;
};

}  // namespace axl::common
