#include "axl/common/work_queue.hpp"

#include <cxxabi.h>
#include <pthread.h>

#include <chrono>
#include <exception>

#include "cpu_relax.hpp"

namespace axl::common {

namespace {

// How long an idle worker polls before it parks on the condition variable.
// Parking costs the next enqueue a futex wake (~2-5 us); a short spin keeps
// back-to-back enqueues cheap without burning a core when the queue is idle.
constexpr int kSpinIterations = 256;
constexpr int kYieldIterations = 4;

void name_this_thread(const std::string& name) {
  // Linux limits names to 15 characters plus NUL; longer names are refused.
  std::string shortened = name.substr(0, 15);
  pthread_setname_np(pthread_self(), shortened.c_str());
}

// Waits until `deadline` with better than scheduler-tick precision: the
// virtual backend prices small copies in microseconds.
void wait_until(std::chrono::steady_clock::time_point deadline) {
  using namespace std::chrono;
  constexpr auto kSpinWindow = microseconds(60);
  auto now = steady_clock::now();
  if (deadline - now > kSpinWindow) std::this_thread::sleep_until(deadline - kSpinWindow);
  while (steady_clock::now() < deadline) std::this_thread::yield();
}

}  // namespace

WorkQueue::WorkQueue(Options options) : options_(std::move(options)) {
  auto first = std::make_unique<Chunk>();
  head_chunk_ = tail_chunk_ = first.get();
  worker_ = std::thread([this] { worker_main(); });
  worker_id_ = worker_.get_id();
  first.release();
}

WorkQueue::~WorkQueue() {
  // A queue destroyed from its own worker cannot drain itself; callers
  // (queue_destroy) refuse that case, so stop() succeeds here.
  stop();
  Chunk* c = head_chunk_;
  while (c != nullptr) {
    Chunk* next = c->next;
    delete c;
    c = next;
  }
  delete spare_chunk_;
}

bool WorkQueue::on_worker_thread() const noexcept {
  return std::this_thread::get_id() == worker_id_;
}

WorkQueue::Slot& WorkQueue::tail_slot_locked() {
  if (tail_index_ == Chunk::kSlots) {
    Chunk* c = spare_chunk_ != nullptr ? std::exchange(spare_chunk_, nullptr) : new Chunk;
    c->next = nullptr;
    tail_chunk_->next = c;
    tail_chunk_ = c;
    tail_index_ = 0;
  }
  return tail_chunk_->slots[tail_index_];
}

void WorkQueue::publish_locked(std::unique_lock<std::mutex>& lk) {
  ++tail_index_;
  enqueued_.store(enqueued_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  const bool wake = worker_sleeping_;
  lk.unlock();
  // Notifying after unlocking saves the woken worker from blocking on mu_.
  if (wake) work_cv_.notify_one();
}

SyncResult WorkQueue::synchronize() {
  if (on_worker_thread()) {
    return {AXL_ERROR_INVALID_STATE,
            "queue synchronize was called from an operation running on the same queue "
            "(a host callback must not call blocking functions); it would wait for itself"};
  }
  std::unique_lock<std::mutex> lk(mu_);
  const uint64_t target = enqueued_.load(std::memory_order_relaxed);
  if (completed_.load() < target) {
    sync_waiters_.fetch_add(1);
    done_cv_.wait(lk, [&] { return completed_.load() >= target; });
    sync_waiters_.fetch_sub(1);
  }
  // The worker records a failure under mu_ before it counts the operation
  // as completed, so every failure up to `target` is visible here.
  SyncResult result{first_error_, std::move(first_error_message_)};
  first_error_ = AXL_SUCCESS;
  first_error_message_.clear();
  return result;
}

SyncResult WorkQueue::pending_error() const {
  std::lock_guard<std::mutex> lk(mu_);
  return {first_error_, first_error_message_};
}

bool WorkQueue::stop() noexcept {
  if (on_worker_thread()) return false;
  std::lock_guard<std::mutex> join_lock(join_mu_);
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  return true;
}

axl_status WorkQueue::run_one(Slot& slot, std::string& message) {
  axl_status status = AXL_SUCCESS;
  uint64_t cost_ns = 0;
  std::chrono::steady_clock::time_point start;
  try {
    if (options_.cost_hook) {
      cost_ns = options_.cost_hook(slot.info);
      if (cost_ns != 0) start = std::chrono::steady_clock::now();
    }
    status = slot.invoke(slot, message);
  } catch (const std::bad_alloc&) {
    status = AXL_ERROR_OUT_OF_HOST_MEMORY;
    message = "a queued operation ran out of host memory";
  } catch (const std::exception& e) {
    status = AXL_ERROR_INTERNAL;
    message = std::string("a queued operation threw: ") + e.what();
  } catch (const abi::__forced_unwind&) {
    // pthread_exit on this thread: CPython ends a thread that waits for
    // the GIL once finalization began (a host function at exit). The unwind
    // must go on; swallowing it makes glibc abort the process.
    throw;
  } catch (...) {
    status = AXL_ERROR_INTERNAL;
    message = "a queued operation threw a non-standard exception";
  }
  slot.destroy(slot);
  if (cost_ns != 0) wait_until(start + std::chrono::nanoseconds(cost_ns));
  return status;
}

void WorkQueue::worker_main() {
  name_this_thread(options_.thread_name);
  uint64_t done = 0;  // this thread's copy of completed_
  for (;;) {
    uint64_t available = enqueued_.load(std::memory_order_acquire);
    if (available == done) {
      for (int i = 0; i < kSpinIterations + kYieldIterations && available == done; ++i) {
        if (i < kSpinIterations) {
          detail::cpu_relax();
        } else {
          std::this_thread::yield();
        }
        available = enqueued_.load(std::memory_order_acquire);
      }
      if (available == done) {
        std::unique_lock<std::mutex> lk(mu_);
        if (enqueued_.load(std::memory_order_relaxed) == done) {
          if (stopping_) return;
          worker_sleeping_ = true;
          work_cv_.wait(lk, [&] {
            return stopping_ || enqueued_.load(std::memory_order_relaxed) != done;
          });
          worker_sleeping_ = false;
        }
        continue;
      }
    }
    while (done < available) {
      if (head_index_ == Chunk::kSlots) {
        // The old chunk is used up and the producer is past it (there is
        // pending work, so a next chunk exists and its link is visible
        // through the acquire of enqueued_).
        Chunk* old = head_chunk_;
        head_chunk_ = old->next;
        head_index_ = 0;
        std::lock_guard<std::mutex> lk(mu_);
        if (spare_chunk_ == nullptr) {
          spare_chunk_ = old;
        } else {
          delete old;
        }
      }
      std::string message;
      const axl_status status = run_one(head_chunk_->slots[head_index_], message);
      ++head_index_;
      if (status != AXL_SUCCESS) {
        std::lock_guard<std::mutex> lk(mu_);
        if (first_error_ == AXL_SUCCESS) {
          first_error_ = status;
          first_error_message_ = std::move(message);
        }
      }
      completed_.store(++done);
      if (sync_waiters_.load() != 0) {
        // Taking mu_ orders this wake-up after the waiter's predicate check.
        { std::lock_guard<std::mutex> lk(mu_); }
        done_cv_.notify_all();
      }
    }
  }
}

}  // namespace axl::common
