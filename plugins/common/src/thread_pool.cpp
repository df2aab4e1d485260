#include "axl/common/thread_pool.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>

namespace axl::common {

unsigned available_cpus() noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return static_cast<unsigned>(n);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

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

bool ThreadPool::started() const {
  std::lock_guard<std::mutex> lk(mu_);
  return started_;
}

void ThreadPool::ensure_started_locked() {
  if (started_) return;
  if (participants_ == 0) participants_ = available_cpus();
  stopping_ = false;
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
    stopping_ = true;
    threads.swap(threads_);
  }
  work_cv_.notify_all();
  for (auto& t : threads) t.join();
  std::lock_guard<std::mutex> lk(mu_);
  started_ = false;
  stopping_ = false;
}

void ThreadPool::work_on(Job& job) {
  for (;;) {
    const uint64_t begin = job.next.fetch_add(job.grain, std::memory_order_relaxed);
    if (begin >= job.n) return;
    const uint64_t end = std::min(job.n, begin + job.grain);
    try {
      job.body(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lk(mu_);
      if (!job.error) job.error = std::current_exception();
    }
    // Release: the caller's acquire of `done` then sees the body's writes.
    job.done.fetch_add(end - begin, std::memory_order_release);
  }
}

void ThreadPool::helper_main() {
  const std::string name = thread_name_.substr(0, 15);
  pthread_setname_np(pthread_self(), name.c_str());
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    work_cv_.wait(lk, [&] { return stopping_ || !jobs_.empty(); });
    if (stopping_) return;
    Job* job = jobs_.front();
    ++job->helpers;
    lk.unlock();
    work_on(*job);
    lk.lock();
    // Every range is claimed now; take the job off the list so nobody else
    // picks it up (its caller may already have removed it).
    auto it = std::find(jobs_.begin(), jobs_.end(), job);
    if (it != jobs_.end()) jobs_.erase(it);
    --job->helpers;
    if (job->helpers == 0) done_cv_.notify_all();
  }
}

void ThreadPool::parallel_for(uint64_t n, RangeFn body) {
  if (n == 0) return;
  Job job(body, n);
  uint64_t helpers = 0;
  {
    std::unique_lock<std::mutex> lk(mu_);
    ensure_started_locked();
    helpers = threads_.size();
    const uint64_t workers = helpers + 1;
    if (n == 1 || workers == 1) {
      lk.unlock();
      body(0, n);
      return;
    }
    // About four ranges per participant: small enough to balance uneven
    // blocks, large enough that claiming a range costs nothing measurable.
    job.grain = std::max<uint64_t>(1, n / (workers * 4));
    jobs_.push_back(&job);
  }
  const uint64_t ranges = (n + job.grain - 1) / job.grain;
  // Wake only as many helpers as there are ranges beyond the caller's own.
  const uint64_t wake = std::min<uint64_t>(ranges - 1, helpers);
  if (wake >= helpers) {
    work_cv_.notify_all();
  } else {
    for (uint64_t i = 0; i < wake; ++i) work_cv_.notify_one();
  }

  work_on(job);

  std::unique_lock<std::mutex> lk(mu_);
  auto it = std::find(jobs_.begin(), jobs_.end(), &job);
  if (it != jobs_.end()) jobs_.erase(it);
  // Helpers that joined the job may still be running a range; the job lives
  // on this stack frame, so wait until they have all left it.
  done_cv_.wait(lk, [&] {
    return job.helpers == 0 && job.done.load(std::memory_order_acquire) == job.n;
  });
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace axl::common
