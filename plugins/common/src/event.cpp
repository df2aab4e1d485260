#include "axl/common/event.hpp"

#include <chrono>

#include "spin_wait.hpp"

namespace axl::common {

namespace {

uint64_t steady_now_ns() noexcept {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

axl_status Event::record(WorkQueue& queue) {
  std::lock_guard<std::mutex> lk(record_mu_);
  const uint64_t gen = recorded_.load(std::memory_order_relaxed) + 1;
  // On an idle queue the marker completes at once (enqueue_marker): nothing
  // is ahead of it, and waking the worker for it would cost a waiter more
  // than the work it marks.
  const axl_status status = queue.enqueue_marker(
      OpInfo{OpKind::kEventRecord, 0},
      [self = Ref<Event>(this), gen](SyncResult pending) noexcept { self->complete(gen, std::move(pending)); });
  // Published after the enqueue: a marker that already ran only makes
  // completed_ briefly ahead, which query() reads as complete anyway.
  if (status == AXL_SUCCESS) {
    cpu_slot_.store(queue.cpu_slot(), std::memory_order_relaxed);
    recorded_.store(gen, std::memory_order_release);
  }
  return status;
}

axl_status Event::enqueue_wait(WorkQueue& queue) {
  const uint64_t target = recorded_.load(std::memory_order_acquire);
  if (target == 0) return AXL_SUCCESS;
  return queue.enqueue(OpInfo{OpKind::kEventWait, 0},
                       [self = Ref<Event>(this), target] { self->wait_for(target); });
}

void Event::complete(uint64_t gen, SyncResult error) noexcept {
  const uint64_t now = steady_now_ns();
  std::lock_guard<std::mutex> lk(mu_);
  // Records on different queues may complete out of order; an older
  // generation must neither move completion back nor overwrite the newer
  // generation's timestamp.
  if (gen <= completed_.load(std::memory_order_relaxed)) return;
  timestamp_ns_ = now;
  error_ = std::move(error);
  completed_.store(gen, std::memory_order_release);
  if (waiters_ > 0) cv_.notify_all();
}

void Event::wait_for(uint64_t gen) noexcept {
  // Spins first (spin_wait.hpp), yielding at once beside the worker that
  // completes it; complete() notifies only once a waiter has parked and
  // counted itself in waiters_.
  if (detail::WaitSides::spin_as_waiter(cpu_slot_.load(std::memory_order_relaxed), [&] {
        return completed_.load(std::memory_order_acquire) >= gen;
      }))
    return;
  std::unique_lock<std::mutex> lk(mu_);
  ++waiters_;
  cv_.wait(lk, [&] { return completed_.load(std::memory_order_relaxed) >= gen; });
  --waiters_;
}

SyncResult Event::synchronize() {
  wait_for(recorded_.load(std::memory_order_acquire));
  std::lock_guard<std::mutex> lk(mu_);
  return error_;
}

bool Event::query() const noexcept {
  const uint64_t recorded = recorded_.load(std::memory_order_acquire);
  return completed_.load(std::memory_order_acquire) >= recorded;
}

bool Event::has_timestamp() const noexcept {
  return completed_.load(std::memory_order_acquire) != 0;
}

uint64_t Event::timestamp_ns() const noexcept {
  std::lock_guard<std::mutex> lk(mu_);
  return timestamp_ns_;
}

float Event::elapsed_ms(const Event& start, const Event& end) noexcept {
  // Subtract in signed 64-bit first: converting both to float would lose
  // everything below ~0.1 s of a since-boot timestamp.
  const int64_t delta_ns =
      static_cast<int64_t>(end.timestamp_ns()) - static_cast<int64_t>(start.timestamp_ns());
  return static_cast<float>(static_cast<double>(delta_ns) / 1e6);
}

}  // namespace axl::common
