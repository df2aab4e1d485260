// Event: a host-side marker in a WorkQueue, with completion tracking and a
// steady-clock timestamp, modelled on CUDA events (the last record wins).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "axl/common/ref_counted.hpp"
#include "axl/common/work_queue.hpp"
#include "axl/status.h"

namespace axl::common {

class Event : public RefCounted<Event> {
 public:
  Event() = default;

  // Enqueues a marker on `queue`: once everything enqueued before it has run,
  // the event completes and takes a timestamp. Each record starts a new
  // generation, so an event can be recorded again while an older record is
  // still pending; waiters and synchronize always refer to the newest record
  // at the moment they were called. On an idle queue (nothing pending) the
  // record completes before this returns (WorkQueue::enqueue_marker).
  // Returns the enqueue's status.
  axl_status record(WorkQueue& queue);

  // Enqueues on `queue` an operation that blocks its worker until the
  // current record of this event has completed; the caller does not block.
  // An event that was never recorded is complete, so the wait is a no-op.
  axl_status enqueue_wait(WorkQueue& queue);

  // Blocks the calling thread until the current record has completed, and
  // returns the failure its queue held when the marker ran (an operation
  // before the record failed and no synchronize has reported it yet), as
  // cuEventSynchronize returns errors of earlier asynchronous work.
  SyncResult synchronize();

  // True when the current record has completed (or there never was one).
  bool query() const noexcept;

  // True once any record has completed; elapsed time needs one on both ends.
  bool has_timestamp() const noexcept;

  // Milliseconds from `start`'s completion to `end`'s (negative when `end`
  // completed first). Both should have timestamps; see has_timestamp().
  static float elapsed_ms(const Event& start, const Event& end) noexcept;

 private:
  friend class RefCounted<Event>;
  ~Event() = default;

  // Runs on a queue worker when generation `gen`'s marker is reached (on
  // the recording thread when the queue was idle);
  // `error` is the queue's unreported failure at that point.
  void complete(uint64_t gen, SyncResult error) noexcept;
  // Blocks until generation `gen` (or a later one) has completed.
  void wait_for(uint64_t gen) noexcept;
  uint64_t timestamp_ns() const noexcept;

  // Holding record_mu_ across the enqueue makes "bump the generation" and
  // "queue its marker" one step, so concurrent records cannot publish a
  // generation whose marker failed to enqueue.
  std::mutex record_mu_;
  std::atomic<uint64_t> recorded_{0};   // newest generation enqueued
  // The cpu_slot() of the queue of the newest record: where the thread that
  // completes it runs, for a waiter's spin (spin_wait.hpp).
  std::atomic<uint32_t> cpu_slot_{0};
  std::atomic<uint64_t> completed_{0};  // newest generation reached

  mutable std::mutex mu_;  // guards timestamp_ns_, waiters_, the condvar
  std::condition_variable cv_;
  uint64_t timestamp_ns_ = 0;  // steady_clock, of generation completed_
  SyncResult error_;            // of generation completed_
  uint32_t waiters_ = 0;
};

}  // namespace axl::common
