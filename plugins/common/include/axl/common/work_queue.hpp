// WorkQueue: an in-order queue that runs operations on its own worker thread,
// asynchronously to the threads that enqueue them. It is the host-side model
// of a device stream: the cpu backend runs real work on it, the virtual
// backend runs bookkeeping plus simulated device time.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

#include "axl/plugin.h"
#include "axl/status.h"

namespace axl::common {

// What an operation does; tells the cost hook how to price it.
enum class OpKind : uint32_t {
  kOther = 0,
  kCopyHtoD,
  kCopyDtoH,
  kCopyDtoD,
  kCopyPeer,
  kFill,
  kLaunch,
  kHostFn,
  kEventRecord,
  kEventWait,
  kFlagWait,
  kFlagWrite,
};

// Per-operation facts the cost hook prices. 16 bytes, written into every
// slot: what a flag wait awaits is reported by the wait itself instead
// (WorkQueue::note_flag_wait).
struct OpInfo {
  OpKind kind = OpKind::kOther;
  uint64_t bytes = 0;  // bytes moved or filled; 0 where it does not apply
};

// Simulated device time of one operation in nanoseconds (0: none). Runs on
// the worker thread just before the operation; the worker then keeps the
// queue busy until that much time has passed since the operation started, so
// later operations, event timestamps and synchronize all see the latency.
using CostHook = std::function<uint64_t(const OpInfo&)>;

// What synchronize reports: the first failure since the previous one.
struct SyncResult {
  axl_status status = AXL_SUCCESS;
  std::string message;  // empty on success
};

class WorkQueue {
 public:
  struct Options {
    // Worker thread name as ps/gdb/perf show it (Linux keeps 15 chars).
    std::string thread_name = "axl-queue";
    // Optional; see CostHook.
    CostHook cost_hook;
    // Most operations pending (enqueued and not finished) at once; 0 means
    // kDefaultCapacity. An enqueue on a full queue blocks until the worker
    // has finished a quarter of them (at least one), so a producer that
    // outruns the worker pays one wake-up per batch, not one per operation.
    uint32_t capacity = 0;
    // How long an enqueue blocked on a full queue waits while the worker
    // finishes nothing and runs a completion-flag wait (one that reported
    // itself with note_flag_wait, as Flag::enqueue_wait's does) before it
    // gives up with AXL_ERROR_TIMEOUT: the flag may be one only the
    // blocked thread would write. Behind any other operation (a long kernel)
    // it waits for as long as it takes. kNoFullTimeout: never give up.
    uint32_t full_timeout_ms = kDefaultFullTimeoutMs;
  };

  // 4096 pending operations: a few chunks of slots (under 1 MiB), far more
  // than a submitting thread needs to keep the worker busy, and the same
  // order as a CUDA stream, which blocks the host after about 1024 launches.
  static constexpr uint32_t kDefaultCapacity = 4096;
  static constexpr uint32_t kDefaultFullTimeoutMs = 10000;
  static constexpr uint32_t kNoFullTimeout = UINT32_MAX;

  // The bound and timeout an axl_queue_desc asks for (its 1.2 fields, read
  // only when desc->struct_size covers them; 0 keeps the defaults), on top
  // of `base`'s name and cost hook.
  static Options from_desc(Options base, const axl_queue_desc& desc) noexcept;

  // Bytes of closure state stored inline in a queue slot. Larger closures
  // (or ones that might throw while being moved) cost one heap allocation.
  static constexpr size_t kInlineBytes = 144;

  // Starts the worker thread. Throws std::system_error if it cannot.
  explicit WorkQueue(Options options);
  WorkQueue() : WorkQueue(Options{}) {}

  // Runs everything still queued, then joins the worker (see stop()).
  ~WorkQueue();

  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Appends `op` and returns without waiting for it, unless the queue holds
  // `capacity` pending operations: then it blocks until the worker has made
  // room (see Options::capacity). `op` is a callable
  // returning axl_status or void, optionally taking `std::string& message`
  // where it can explain a failure; the first failure is kept until
  // synchronize() hands it out ("sticky until synchronize"), and later
  // operations still run. Safe to call from several threads at once (the ABI
  // only needs one submitter per queue, but nothing here depends on that).
  // Returns AXL_ERROR_INVALID_STATE after stop() or when called on a full
  // queue from its own worker (it would wait for itself), AXL_ERROR_TIMEOUT
  // when a full queue is stuck behind a flag wait (Options::full_timeout_ms);
  // refusal_message() then says why, and `op` is destroyed, not queued.
  // Throws std::bad_alloc when it cannot grow its storage.
  template <class F>
  axl_status enqueue(OpInfo info, F&& op);

  // Like enqueue, but when the queue is idle (its worker parked with every
  // earlier operation finished; never while stopping, never on a queue
  // priced by a cost hook) runs `op` on the calling thread before returning
  // instead of waking the worker for it: for an operation cheaper than that
  // hand-off (a small host copy). Nothing is ahead of it, so order is kept,
  // and enqueue's lock, held while it runs, keeps a concurrent enqueue from
  // overtaking it; it is decided inside enqueue's one critical section, so
  // an operation that is queued costs what enqueue's does. An operation run
  // here is not counted (synchronize and events have nothing left to wait
  // for). `op` returns void, is noexcept (it has no slot to report a
  // failure through), fits a slot and must not call back into this queue.
  template <class F>
  axl_status enqueue_or_run(OpInfo info, F&& op);

  // A marker (an event record): calls `reached(SyncResult pending)` once
  // every operation enqueued before it has run, with the failure
  // synchronize would report at that point (pending_error()). On an idle
  // queue it is called at once on the calling thread, as enqueue_or_run
  // runs its operation; otherwise it runs as an operation on the worker.
  // `reached` is noexcept and must not call back into this queue.
  template <class F>
  axl_status enqueue_marker(OpInfo info, F&& reached);

  // Why the calling thread's latest refused enqueue (on any queue) was
  // refused, as one sentence for an error message.
  static const std::string& refusal_message() noexcept;

  // Called by an operation, on the worker, as it starts waiting for the
  // 8-byte value at `address` (a completion flag, as the application knows
  // it) to reach `value`: a full queue stuck behind that wait fails blocked
  // enqueues naming both (Options::full_timeout_ms). Only waits that report
  // themselves count, so no other operation pays for the check.
  void note_flag_wait(const void* address, uint64_t value);

  // The bound this queue was created with (Options::capacity resolved).
  uint32_t capacity() const noexcept { return capacity_; }

  // Test hook: chunks of slots this queue has allocated over its life. The
  // chunks form a ring that only grows, and only while more operations are
  // pending than it holds, so this stays below capacity / Chunk::kSlots + 3
  // however many operations go through the queue.
  uint64_t chunks_allocated() const;

  // Blocks until every operation enqueued before the call has run. Returns
  // and clears the first failure of any operation since the last call.
  // Called from the worker itself (a host callback) it would wait forever,
  // so it answers AXL_ERROR_INVALID_STATE instead.
  SyncResult synchronize();

  // The failure synchronize() would report now, without clearing it (what
  // an event marker captures: CUDA's events report earlier asynchronous
  // errors the same way).
  SyncResult pending_error() const;

  // Drains the queue and joins the worker; later enqueues are refused.
  // Idempotent. Must not be called from the worker thread (returns false
  // without stopping in that case).
  bool stop() noexcept;

  // True on the queue's own worker thread (inside an operation).
  bool on_worker_thread() const noexcept;

  // Where this queue's worker and waiters run (the slot of WaitSides, in
  // plugins/common/src/spin_wait.hpp): an event recorded here keeps it.
  uint32_t cpu_slot() const noexcept { return cpu_slot_; }

 private:
  struct Slot {
    axl_status (*invoke)(Slot&, std::string&);
    void (*destroy)(Slot&) noexcept;
    OpInfo info;
    alignas(std::max_align_t) std::byte storage[kInlineBytes];
  };
  // Slots live in fixed chunks linked into a ring, so a slot never moves
  // while its operation runs and growing never copies closures. The chunk
  // after the producer's is the oldest: once the worker has finished all of
  // its slots the producer writes it again, and only when it has not does
  // the producer insert a new chunk between the two. Chunks are freed with
  // the queue, never before: a deep burst leaves its chunks for the next
  // one instead of handing them back to malloc (which would trim the heap
  // under the producer), and the worker takes no lock to move between them.
  struct Chunk {
    static constexpr uint32_t kSlots = 64;
    Slot slots[kSlots];
    Chunk* next = this;
    uint64_t first_op = 0;  // number of the operation in slots[0]; producer's
  };

  template <class Fn>
  static axl_status call(Fn& fn, std::string& message) {
    if constexpr (std::is_invocable_r_v<axl_status, Fn&, std::string&>) {
      return fn(message);
    } else if constexpr (std::is_invocable_r_v<axl_status, Fn&>) {
      return fn();
    } else {
      static_assert(std::is_invocable_v<Fn&>,
                    "a queue op is callable as op() or op(std::string&)");
      fn();
      return AXL_SUCCESS;
    }
  }
  template <class Fn>
  static axl_status invoke_inline(Slot& s, std::string& message) {
    return call(*std::launder(reinterpret_cast<Fn*>(s.storage)), message);
  }
  template <class Fn>
  static void destroy_inline(Slot& s) noexcept {
    std::launder(reinterpret_cast<Fn*>(s.storage))->~Fn();
  }
  template <class Fn>
  static axl_status invoke_heap(Slot& s, std::string& message) {
    return call(**std::launder(reinterpret_cast<Fn**>(s.storage)), message);
  }
  template <class Fn>
  static void destroy_heap(Slot& s) noexcept {
    delete *std::launder(reinterpret_cast<Fn**>(s.storage));
  }

  // What enqueue and its variants share. `now` is std::nullptr_t (always
  // queue `op`) or a callable run under mu_ instead of queuing `op` when
  // the worker is parked and the queue may run work inline.
  template <class F, class Now>
  axl_status submit(OpInfo info, F&& op, Now&& now);

  // The slow path of enqueue on a queue that looked full: refreshes
  // completed_seen_ and, while the queue is still full, waits for room (see
  // Options). Needs mu_ via lk and holds it again on return.
  axl_status wait_for_room_locked(std::unique_lock<std::mutex>& lk);
  // Blocks (on done_cv_, mu_ held via lk) until completed_ >= target or, if
  // `deadline` is not NULL, until then; false when the deadline came first.
  bool wait_completed_locked(std::unique_lock<std::mutex>& lk, uint64_t target,
                             const std::chrono::steady_clock::time_point* deadline);
  // True when enqueue must take the slow path. Needs mu_.
  bool looks_full_locked() const noexcept {
    return enqueued_.load(std::memory_order_relaxed) - completed_seen_ >= capacity_;
  }
  // Returns the slot at the tail, moving on to the next chunk of the ring
  // (or growing the ring when that one is still in use). Needs mu_.
  Slot& tail_slot_locked();
  // Makes the tail slot visible to the worker and wakes it. Needs mu_ via lk;
  // releases it.
  void publish_locked(std::unique_lock<std::mutex>& lk);
  void worker_main();
  // Records that an enqueue was refused because stop() ran.
  static axl_status refuse_stopped() noexcept;
  // Runs and destroys the slot's operation (plus its simulated cost) without
  // holding mu_; returns its status and fills `message` on failure.
  axl_status run_one(Slot& slot, std::string& message);

  static constexpr uint64_t kNoWaiter = UINT64_MAX;  // wake_at_ when none waits

  Options options_;

  // Producer side. Enqueues touch only this cache line (plus the slot).
  alignas(64) mutable std::mutex mu_;
  std::condition_variable work_cv_;  // worker waits for work or stop
  std::condition_variable done_cv_;  // synchronize waits for completion
  Chunk* tail_chunk_ = nullptr;      // where the next enqueue writes
  uint32_t tail_index_ = 0;
  // Guarded by mu_. Set by the worker as it parks with every operation
  // finished, cleared by the enqueue that wakes it: while set, nothing is
  // pending, so enqueue_or_run may run its operation on the caller.
  bool worker_sleeping_ = false;
  const bool may_run_now_;           // no cost hook: see enqueue_or_run
  bool stopping_ = false;            // guarded by mu_
  // At most capacity_ slots are pending, so the ring never exceeds
  // capacity_ / kSlots + 2 chunks and a full queue allocates nothing.
  uint64_t chunks_allocated_ = 0;    // guarded by mu_; see chunks_allocated()
  // The producers' copy of completed_ (guarded by mu_), reloaded only when
  // the queue looks full by it, so an enqueue reads no line the worker
  // writes.
  uint64_t completed_seen_ = 0;
  const uint32_t capacity_;  // options_.capacity resolved
  // The latest flag wait the worker started (guarded by mu_): its operation
  // number plus one (0: none yet), the flag's address and the value awaited,
  // so a blocked enqueue can tell whether the operation holding the queue up
  // is such a wait.
  uint64_t flag_wait_seq_ = 0;
  const void* flag_wait_address_ = nullptr;
  uint64_t flag_wait_value_ = 0;
  // completed_ when an enqueue last timed out behind a flag wait (guarded by
  // mu_); while it has not moved since, later full enqueues fail at once.
  uint64_t stuck_at_ = UINT64_MAX;
  // Counted, not compared by slot position, so synchronize can wait for "the
  // n-th operation" even while later ones keep arriving.
  //
  // The worker's hot path takes no lock: producers publish a slot by storing
  // enqueued_ (release) under mu_, and the worker, the only consumer, reads
  // it with acquire. head_chunk_/head_index_ belong to the worker alone; it
  // takes mu_ only to record a failure, to note a flag wait, to sleep, and
  // to wake parked waiters. completed_ and wake_at_ are a
  // Dekker pair (both seq_cst): a waiter (synchronize, or an enqueue waiting
  // for room) lowers wake_at_ to the count it needs, under mu_, then reads
  // completed_; the worker stores completed_ then reads wake_at_, so at
  // least one of them sees the other and no wake-up is lost. The worker
  // wakes waiters only once completed_ reaches wake_at_ (then resets it;
  // waiters still short of their count lower it again), so a blocked
  // producer costs it one wake-up per batch of room, not one per operation.
  std::atomic<uint64_t> enqueued_{0};
  axl_status first_error_ = AXL_SUCCESS;  // guarded by mu_
  std::string first_error_message_;       // guarded by mu_

  // Worker side, on its own cache line so that finishing an operation does
  // not steal the line the next enqueue needs.
  alignas(64) Chunk* head_chunk_ = nullptr;  // next slot to run
  uint32_t head_index_ = 0;
  std::atomic<uint64_t> completed_{0};
  std::atomic<uint64_t> wake_at_{kNoWaiter};

  // This queue's slot of the table of where its worker and its waiters
  // run (spin_wait.hpp's WaitSides), so neither pauses while the other
  // needs its CPU.
  const uint32_t cpu_slot_;

  // Cold: used at start and stop only.
  alignas(64) std::thread worker_;
  std::thread::id worker_id_;
  std::mutex join_mu_;  // serialises stop() callers around join()
};

template <class F>
axl_status WorkQueue::enqueue(OpInfo info, F&& op) {
  return submit(info, std::forward<F>(op), nullptr);
}

template <class F>
axl_status WorkQueue::enqueue_or_run(OpInfo info, F&& op) {
  static_assert(std::is_nothrow_invocable_r_v<void, F&>,
                "an operation run inline cannot fail: it has no slot to report through");
  return submit(info, std::forward<F>(op), [&op]() noexcept { op(); });
}

template <class F>
axl_status WorkQueue::enqueue_marker(OpInfo info, F&& reached) {
  static_assert(std::is_nothrow_invocable_v<F&, SyncResult>, "a marker's callback is noexcept");
  struct Marker {
    WorkQueue* queue;
    std::decay_t<F> reached;
    void operator()() { reached(queue->pending_error()); }
  };
  Marker m{this, std::forward<F>(reached)};
  // Inline, mu_ is held, so the failure is read directly (pending_error()
  // would take mu_ again); `m` is moved into a slot only when queued.
  // Copying the message may throw bad_alloc, as enqueue may.
  return submit(info, std::move(m),
                [&m, this] { m.reached(SyncResult{first_error_, first_error_message_}); });
}

template <class F, class Now>
axl_status WorkQueue::submit(OpInfo info, F&& op, [[maybe_unused]] Now&& now) {
  using Fn = std::decay_t<F>;
  constexpr bool kInline = sizeof(Fn) <= kInlineBytes &&
                           alignof(Fn) <= alignof(std::max_align_t) &&
                           std::is_nothrow_constructible_v<Fn, F&&>;
  constexpr bool kMayRunNow = !std::is_null_pointer_v<std::decay_t<Now>>;
  static_assert(kInline || !kMayRunNow, "an operation that may run inline fits a slot");
  if constexpr (kInline) {
    std::unique_lock<std::mutex> lk(mu_);
    if (stopping_) return refuse_stopped();
    if constexpr (kMayRunNow) {
      // The worker parks only with everything finished, and its effects
      // are ordered before this through mu_.
      if (worker_sleeping_ && may_run_now_) {
        now();
        return AXL_SUCCESS;
      }
    }
    if (looks_full_locked()) {
      if (axl_status st = wait_for_room_locked(lk)) return st;
    }
    Slot& s = tail_slot_locked();
    ::new (static_cast<void*>(s.storage)) Fn(std::forward<F>(op));
    s.invoke = &invoke_inline<Fn>;
    s.destroy = &destroy_inline<Fn>;
    s.info = info;
    publish_locked(lk);
  } else {
    // Built before taking the lock: it may allocate or throw.
    auto boxed = std::make_unique<Fn>(std::forward<F>(op));
    std::unique_lock<std::mutex> lk(mu_);
    if (stopping_) return refuse_stopped();
    if (looks_full_locked()) {
      if (axl_status st = wait_for_room_locked(lk)) return st;
    }
    Slot& s = tail_slot_locked();
    ::new (static_cast<void*>(s.storage)) Fn*(boxed.release());
    s.invoke = &invoke_heap<Fn>;
    s.destroy = &destroy_heap<Fn>;
    s.info = info;
    publish_locked(lk);
  }
  return AXL_SUCCESS;
}

}  // namespace axl::common
