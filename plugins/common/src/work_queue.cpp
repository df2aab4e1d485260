#include "axl/common/work_queue.hpp"

#include <cxxabi.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <exception>

#include "spin_wait.hpp"

namespace axl::common {

namespace {

// How long an idle worker polls, all of it with a pause unless a waiter is
// on its CPU (spin_wait.hpp), before it parks on the condition variable.
// Parking costs the next enqueue a futex wake (~2-5 us, tens on a loaded
// machine); a short poll keeps back-to-back enqueues cheap without burning
// a core when the queue is idle.
constexpr std::chrono::microseconds kWorkerSpin{8};

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

// Why this thread's latest enqueue was refused (WorkQueue::refusal_message).
thread_local std::string t_refusal;

void delete_chunk_ring(auto* first) {
  auto* c = first;
  do {
    auto* next = c->next;
    delete c;
    c = next;
  } while (c != first);
}

}  // namespace

WorkQueue::WorkQueue(Options options)
    : options_(std::move(options)),
      may_run_now_(!options_.cost_hook),
      capacity_(options_.capacity != 0 ? options_.capacity : kDefaultCapacity),
      cpu_slot_(detail::WaitSides::take_slot()) {
  auto first = std::make_unique<Chunk>();
  chunks_allocated_ = 1;
  head_chunk_ = tail_chunk_ = first.get();
  worker_ = std::thread([this] { worker_main(); });
  worker_id_ = worker_.get_id();
  first.release();
}

WorkQueue::~WorkQueue() {
  // A queue destroyed from its own worker cannot drain itself; callers
  // (queue_destroy) refuse that case, so stop() succeeds here.
  stop();
  delete_chunk_ring(head_chunk_);
}

WorkQueue::Options WorkQueue::from_desc(Options base, const axl_queue_desc& desc) noexcept {
  auto covers = [&](size_t offset, size_t size) { return desc.struct_size >= offset + size; };
  if (covers(offsetof(axl_queue_desc, max_pending), sizeof desc.max_pending) &&
      desc.max_pending != 0)
    base.capacity = desc.max_pending;
  if (covers(offsetof(axl_queue_desc, full_timeout_ms), sizeof desc.full_timeout_ms) &&
      desc.full_timeout_ms != 0)
    base.full_timeout_ms = desc.full_timeout_ms == AXL_QUEUE_FULL_TIMEOUT_NEVER
                               ? kNoFullTimeout
                               : desc.full_timeout_ms;
  return base;
}

const std::string& WorkQueue::refusal_message() noexcept { return t_refusal; }

axl_status WorkQueue::refuse_stopped() noexcept {
  try {
    t_refusal = "the queue was stopped by backend_shutdown";
  } catch (...) {
    // Out of memory for the text: the status alone still says it.
  }
  return AXL_ERROR_INVALID_STATE;
}

void WorkQueue::note_flag_wait(const void* address, uint64_t value) {
  // On the worker, inside operation number completed_ (not yet counted).
  const uint64_t running = completed_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lk(mu_);
  flag_wait_seq_ = running + 1;
  flag_wait_address_ = address;
  flag_wait_value_ = value;
}

uint64_t WorkQueue::chunks_allocated() const {
  std::lock_guard<std::mutex> lk(mu_);
  return chunks_allocated_;
}

bool WorkQueue::on_worker_thread() const noexcept {
  return std::this_thread::get_id() == worker_id_;
}

WorkQueue::Slot& WorkQueue::tail_slot_locked() {
  if (tail_index_ == Chunk::kSlots) {
    const uint64_t op = enqueued_.load(std::memory_order_relaxed);
    Chunk* oldest = tail_chunk_->next;
    // Free once the worker has completed an operation past its last slot:
    // completed_ is stored after a closure was destroyed, and the worker
    // reads a chunk's link to move on before it runs that next operation,
    // so it reads nothing of the chunk any more (its link is rewritten when
    // the producer later inserts a chunk after it).
    const uint64_t free_at = oldest->first_op + Chunk::kSlots + 1;
    if (completed_seen_ < free_at) completed_seen_ = completed_.load();
    Chunk* c = oldest;
    if (completed_seen_ < free_at) {
      // Written before the slot is published: the worker reads the link
      // only after the acquire of enqueued_ that covers that slot.
      c = new Chunk;
      ++chunks_allocated_;
      c->next = oldest;
      tail_chunk_->next = c;
    }
    c->first_op = op;
    tail_chunk_ = c;
    tail_index_ = 0;
  }
  return tail_chunk_->slots[tail_index_];
}

void WorkQueue::publish_locked(std::unique_lock<std::mutex>& lk) {
  ++tail_index_;
  enqueued_.store(enqueued_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  const bool wake = worker_sleeping_;
  // Pending work from here on: a later enqueue_or_run must queue behind it
  // even before the worker has woken.
  worker_sleeping_ = false;
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
  // Every operation this thread enqueued is in enqueued_ (its own store);
  // one another thread enqueues concurrently may or may not be, as before.
  const uint64_t target = enqueued_.load(std::memory_order_acquire);
  // Spinning leaves wake_at_ alone, so the worker sees no waiter and takes
  // no lock for it; only a waiter that parks lowers wake_at_.
  // Yields at once beside the worker; the worker does the same beside this
  // thread (WaitSides).
  const bool reached = detail::WaitSides::spin_as_waiter(
      cpu_slot_, [&] { return completed_.load(std::memory_order_acquire) >= target; });
  std::unique_lock<std::mutex> lk(mu_);
  if (!reached) wait_completed_locked(lk, target, nullptr);
  // The worker records a failure under mu_ before it counts the operation
  // as completed, so every failure up to `target` is visible here.
  SyncResult result;
  // Written only when there is a failure to hand out: the line also holds
  // enqueued_, which a spinning worker polls, so a write on every wait
  // would take it from the worker and back once more per round trip.
  if (first_error_ != AXL_SUCCESS) {
    result = {first_error_, std::move(first_error_message_)};
    first_error_ = AXL_SUCCESS;
    first_error_message_.clear();
  }
  return result;
}

bool WorkQueue::wait_completed_locked(std::unique_lock<std::mutex>& lk, uint64_t target,
                                      const std::chrono::steady_clock::time_point* deadline) {
  while (completed_.load() < target) {
    // Lowered, never raised: another waiter may need an earlier wake-up.
    if (target < wake_at_.load()) wake_at_.store(target);
    if (completed_.load() >= target) break;
    if (deadline == nullptr) {
      done_cv_.wait(lk);
    } else if (done_cv_.wait_until(lk, *deadline) == std::cv_status::timeout) {
      return completed_.load() >= target;
    }
  }
  return true;
}

axl_status WorkQueue::wait_for_room_locked(std::unique_lock<std::mutex>& lk) {
  using Clock = std::chrono::steady_clock;
  completed_seen_ = completed_.load();
  if (!looks_full_locked()) return AXL_SUCCESS;
  if (on_worker_thread()) {
    char text[256];
    std::snprintf(text, sizeof text,
                  "the queue is full (%" PRIu32 " operations pending) and this enqueue runs on "
                  "the queue's own worker (a host callback), which cannot make room while it "
                  "waits",
                  capacity_);
    t_refusal = text;
    return AXL_ERROR_INVALID_STATE;
  }
  const bool bounded = options_.full_timeout_ms != kNoFullTimeout;
  const auto timeout = std::chrono::milliseconds(options_.full_timeout_ms);
  // Looks for a stuck flag wait a few times per timeout, so it is reported
  // within 1.25 timeouts of the worker's last progress.
  const auto slice = bounded ? std::max<Clock::duration>(timeout / 4, std::chrono::milliseconds(1))
                             : Clock::duration(std::chrono::hours(1));
  const uint32_t batch = std::max<uint32_t>(1, capacity_ / 4);
  uint64_t seen = completed_seen_;
  Clock::time_point since = Clock::now();  // when completed_ last moved
  // Already found stuck behind this very flag wait: fail at once, so a
  // caller that enqueues several operations for one call (the core records
  // an event before a copy) does not wait out the timeout for each.
  if (bounded && stuck_at_ == seen && flag_wait_seq_ == seen + 1) since -= timeout;
  while (looks_full_locked()) {
    if (stopping_) return refuse_stopped();
    // Full means enqueued - completed >= capacity, so this cannot wrap.
    const uint64_t target = enqueued_.load(std::memory_order_relaxed) - capacity_ + batch;
    const Clock::time_point deadline = Clock::now() + slice;
    wait_completed_locked(lk, target, &deadline);
    completed_seen_ = completed_.load();
    const Clock::time_point now = Clock::now();
    if (completed_seen_ != seen) {
      seen = completed_seen_;
      since = now;
      continue;
    }
    // Operation number `seen` is the one running; flag_wait_seq_ names the
    // latest flag wait started, plus one.
    if (bounded && now - since >= timeout && flag_wait_seq_ == seen + 1) {
      // The flag's current value is not read: the wait may end and the flag
      // go away at any moment (the worker does not take mu_ for that).
      char text[512];
      std::snprintf(text, sizeof text,
                    "the queue is full (%" PRIu64 " operations pending, at most %" PRIu32
                    ") and has made no progress for %" PRIu32
                    " ms: its oldest operation waits for the completion flag at %p to reach "
                    "%" PRIu64 ", which only this blocked thread might write; write the flag from another "
                    "thread or enqueue fewer operations before it (AXL_QUEUE_FULL_TIMEOUT_MS "
                    "sets how long a full queue waits)",
                    enqueued_.load(std::memory_order_relaxed) - seen, capacity_,
                    options_.full_timeout_ms, flag_wait_address_, flag_wait_value_);
      t_refusal = text;
      stuck_at_ = seen;
      return AXL_ERROR_TIMEOUT;
    }
  }
  return AXL_SUCCESS;
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
      // Yields at once while a synchronize runs beside it: that thread
      // needs this CPU to see the work done and enqueue more.
      const bool more = detail::spin_until(
          [&] { return (available = enqueued_.load(std::memory_order_acquire)) != done; }, kWorkerSpin,
          kWorkerSpin, [&] { return detail::WaitSides::beside_waiter(cpu_slot_); });
      if (!more) {
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
    detail::WaitSides::worker_runs(cpu_slot_);
    while (done < available) {
      if (head_index_ == Chunk::kSlots) {
        // The chunk is used up and the producer is past it (there is
        // pending work, so the link to the next chunk is visible through
        // the acquire of enqueued_). The producer reuses it once completed_
        // says so.
        head_chunk_ = head_chunk_->next;
        head_index_ = 0;
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
      if (done >= wake_at_.load()) {
        // Under mu_: orders this wake-up after the waiter's check, and a
        // waiter lowering wake_at_ again comes after the reset.
        {
          std::lock_guard<std::mutex> lk(mu_);
          wake_at_.store(kNoWaiter);
        }
        done_cv_.notify_all();
      }
    }
  }
}

}  // namespace axl::common
