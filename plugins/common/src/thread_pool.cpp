#include "axl/common/thread_pool.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>

#include "spin_wait.hpp"

namespace axl::common {

namespace {
// How long an idle helper polls with a pause before it yields (next_job).
constexpr std::chrono::microseconds kHelperPause{50};
}  // namespace

unsigned available_cpus() noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return static_cast<unsigned>(n);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

// Guided ranges: a claim takes 1/(2 x workers) of what is left, so the first
// claims are large (few counter updates, long contiguous streams) and the
// last ones small; at least 1/(32 x workers) of the grid, so a grid costs
// about 2 x workers x ln(16) + 32 claims at most, whatever its size.
ThreadPool::Job::Job(RangeFn b, uint64_t count, uint64_t workers) noexcept
    : body(b), n(count), split(2 * workers), min_range(std::max<uint64_t>(1, count / (32 * workers))) {}

ThreadPool::ThreadPool(std::string thread_name) : thread_name_(std::move(thread_name)) {}

ThreadPool::~ThreadPool() { shutdown(); }

bool ThreadPool::set_participants(unsigned participants) {
  std::lock_guard<std::mutex> lk(mu_);
  if (started_) return false;
  participants_ = participants;
  return true;
}

unsigned ThreadPool::participants() const {
  std::lock_guard<std::mutex> lk(mu_);
  return participants_ != 0 ? participants_ : available_cpus();
}

void ThreadPool::set_spin(std::chrono::microseconds spin) noexcept {
  spin_ns_.store(std::chrono::nanoseconds(spin).count(), std::memory_order_relaxed);
}

std::chrono::microseconds ThreadPool::spin() const noexcept {
  return std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::nanoseconds(spin_ns_.load(std::memory_order_relaxed)));
}

bool ThreadPool::started() const {
  std::lock_guard<std::mutex> lk(mu_);
  return started_;
}

void ThreadPool::ensure_started_locked() {
  if (started_) return;
  if (participants_ == 0) participants_ = available_cpus();
  stopping_.store(false, std::memory_order_relaxed);
  threads_.reserve(participants_ - 1);
  try {
    for (unsigned i = 1; i < participants_; ++i) threads_.emplace_back([this] { helper_main(); });
  } catch (...) {
    // Could not start them all: run with the ones we have rather than fail
    // the launch; the caller alone is always enough to make progress.
  }
  started_ = true;
}

void ThreadPool::shutdown() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (!started_) return;
    // Under mu_, so a helper about to park sees it in its wait predicate.
    stopping_.store(true, std::memory_order_relaxed);
    threads.swap(threads_);
  }
  work_cv_.notify_all();
  for (auto& t : threads) t.join();
  std::lock_guard<std::mutex> lk(mu_);
  started_ = false;
  stopping_.store(false, std::memory_order_relaxed);
}

uint64_t ThreadPool::parks() const noexcept { return parks_.load(std::memory_order_relaxed); }

ThreadPool::Job* ThreadPool::join_locked() {
  while (!jobs_.empty()) {
    Job* job = jobs_.front();
    if (job->next.load(std::memory_order_relaxed) < job->n) {
      job->helpers.fetch_add(1, std::memory_order_relaxed);
      return job;
    }
    // Every range is claimed: nothing for a newcomer. Its caller waits only
    // for the helpers already inside.
    jobs_.pop_front();
    listed_.store(static_cast<uint32_t>(jobs_.size()), std::memory_order_relaxed);
  }
  return nullptr;
}

void ThreadPool::unlist_locked(Job* job) {
  auto it = std::find(jobs_.begin(), jobs_.end(), job);
  if (it == jobs_.end()) return;
  jobs_.erase(it);
  listed_.store(static_cast<uint32_t>(jobs_.size()), std::memory_order_relaxed);
}

void ThreadPool::wake_one_if_needed(const Job& job) {
  if (job.next.load(std::memory_order_relaxed) >= job.n) return;
  if (polling_.load(std::memory_order_relaxed) != 0) return;  // it will find the job
  bool wake = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    wake = parked_ != 0;
  }
  if (wake) work_cv_.notify_one();
}

ThreadPool::Job* ThreadPool::next_job() {
  polling_.fetch_add(1, std::memory_order_relaxed);
  Job* job = nullptr;
  // With a pause for the gap between one launch and the next from a host
  // thread that waited for it (a wake-up and an enqueue), then with yields
  // (spin_wait.hpp): a helper yielding sooner while another process wants
  // its CPU would miss the next launch by a time slice; one pausing longer
  // holds a CPU the host thread or a queue worker may need.
  const std::chrono::nanoseconds spin(spin_ns_.load(std::memory_order_relaxed));
  detail::spin_until(
      [&] {
        if (stopping_.load(std::memory_order_relaxed)) return true;
        // acquire: pairs with the caller's release of listed_, so the job's
        // fields are visible before it is joined (the lock below orders it too).
        if (listed_.load(std::memory_order_acquire) == 0) return false;
        std::lock_guard<std::mutex> lk(mu_);
        job = join_locked();
        return job != nullptr;
      },
      spin, kHelperPause);
  polling_.fetch_sub(1, std::memory_order_relaxed);
  if (job != nullptr || stopping_.load(std::memory_order_relaxed)) return job;
  std::unique_lock<std::mutex> lk(mu_);
  parks_.fetch_add(1, std::memory_order_relaxed);
  ++parked_;
  work_cv_.wait(lk, [&] {
    if (stopping_.load(std::memory_order_relaxed)) return true;
    job = join_locked();
    return job != nullptr;
  });
  --parked_;
  return job;  // NULL only when stopping
}

void ThreadPool::work_on(Job& job) {
  uint64_t begin = job.next.load(std::memory_order_relaxed);
  for (;;) {
    if (begin >= job.n) return;
    const uint64_t left = job.n - begin;
    const uint64_t end = begin + std::min(left, std::max(job.min_range, left / job.split));
    if (!job.next.compare_exchange_weak(begin, end, std::memory_order_relaxed)) continue;
    try {
      job.body(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lk(mu_);
      if (!job.error) job.error = std::current_exception();
    }
    begin = job.next.load(std::memory_order_relaxed);
  }
}

void ThreadPool::leave(Job* job) {
  std::lock_guard<std::mutex> lk(mu_);
  unlist_locked(job);
  // Release: the caller's acquire of helpers == 0 then sees this helper's
  // ranges written. Last use of *job: its caller may return right after.
  const bool last = job->helpers.fetch_sub(1, std::memory_order_release) == 1;
  if (last && parked_callers_ != 0) done_cv_.notify_all();
}

void ThreadPool::helper_main() {
  const std::string name = thread_name_.substr(0, 15);
  pthread_setname_np(pthread_self(), name.c_str());
  while (Job* job = next_job()) {
    // The caller woke at most one helper; this one passes the wake on while
    // work is left, so helpers are woken only as fast as they get a CPU.
    wake_one_if_needed(*job);
    work_on(*job);
    leave(job);
  }
}

void ThreadPool::parallel_for(uint64_t n, RangeFn body) {
  if (n == 0) return;
  std::unique_lock<std::mutex> lk(mu_);
  ensure_started_locked();
  const uint64_t workers = threads_.size() + 1;
  if (n == 1 || workers == 1) {
    lk.unlock();
    body(0, n);
    return;
  }
  Job job(body, n, workers);
  jobs_.push_back(&job);
  // Release: a polling helper that sees the count sees the job.
  listed_.store(static_cast<uint32_t>(jobs_.size()), std::memory_order_release);
  // A polling helper finds the job by itself; a parked one is woken, and
  // the caller goes on at once rather than wait for it to be scheduled.
  const bool wake = parked_ != 0 && polling_.load(std::memory_order_relaxed) == 0;
  lk.unlock();
  if (wake) work_cv_.notify_one();

  work_on(job);

  lk.lock();
  unlist_locked(&job);
  lk.unlock();
  // Every range is claimed and no helper can join any more; those inside
  // hold at most their last range. The job lives on this stack frame, so
  // wait until they have all left it: poll first (they are running), then
  // park.
  auto all_left = [&] { return job.helpers.load(std::memory_order_acquire) == 0; };
  const std::chrono::nanoseconds spin(spin_ns_.load(std::memory_order_relaxed));
  if (!detail::spin_until(all_left, spin, spin)) {
    lk.lock();
    ++parked_callers_;
    done_cv_.wait(lk, all_left);
    --parked_callers_;
    lk.unlock();
  }
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace axl::common
