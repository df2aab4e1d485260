// WorkQueue: an in-order queue that runs operations on its own worker thread,
// asynchronously to the threads that enqueue them. It is the host-side model
// of a device stream: the cpu backend runs real work on it, the virtual
// backend runs bookkeeping plus simulated device time.
#pragma once

#include <atomic>
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

// Per-operation facts the cost hook prices.
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
  };

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

  // Appends `op` and returns without waiting for it. `op` is a callable
  // returning axl_status or void, optionally taking `std::string& message`
  // where it can explain a failure; the first failure is kept until
  // synchronize() hands it out ("sticky until synchronize"), and later
  // operations still run. Safe to call from several threads at once (the ABI
  // only needs one submitter per queue, but nothing here depends on that).
  // Returns AXL_ERROR_INVALID_STATE after stop(); throws std::bad_alloc when
  // it cannot grow its storage.
  template <class F>
  axl_status enqueue(OpInfo info, F&& op);

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

 private:
  struct Slot {
    axl_status (*invoke)(Slot&, std::string&);
    void (*destroy)(Slot&) noexcept;
    OpInfo info;
    alignas(std::max_align_t) std::byte storage[kInlineBytes];
  };
  // Slots live in fixed chunks linked into a list, so a slot never moves
  // while its operation runs and growing never copies closures.
  struct Chunk {
    static constexpr uint32_t kSlots = 64;
    Slot slots[kSlots];
    Chunk* next = nullptr;
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

  // Returns the slot at the tail, growing the chunk list if needed. Needs mu_.
  Slot& tail_slot_locked();
  // Makes the tail slot visible to the worker and wakes it. Needs mu_ via lk;
  // releases it.
  void publish_locked(std::unique_lock<std::mutex>& lk);
  void worker_main();
  // Runs and destroys the slot's operation (plus its simulated cost) without
  // holding mu_; returns its status and fills `message` on failure.
  axl_status run_one(Slot& slot, std::string& message);

  Options options_;

  // Producer side. Enqueues touch only this cache line (plus the slot).
  alignas(64) mutable std::mutex mu_;
  std::condition_variable work_cv_;  // worker waits for work or stop
  std::condition_variable done_cv_;  // synchronize waits for completion
  Chunk* tail_chunk_ = nullptr;      // where the next enqueue writes
  uint32_t tail_index_ = 0;
  bool worker_sleeping_ = false;     // guarded by mu_
  bool stopping_ = false;            // guarded by mu_
  Chunk* spare_chunk_ = nullptr;     // one recycled chunk: no churn at the edge
  // Counted, not compared by slot position, so synchronize can wait for "the
  // n-th operation" even while later ones keep arriving.
  //
  // The worker's hot path takes no lock: producers publish a slot by storing
  // enqueued_ (release) under mu_, and the worker, the only consumer, reads
  // it with acquire. head_chunk_/head_index_ belong to the worker alone; it
  // takes mu_ only to hand a used chunk back, to record a failure, to sleep,
  // and to wake synchronize callers. completed_ and sync_waiters_ are a
  // Dekker pair (both seq_cst): the worker stores completed_ then reads
  // sync_waiters_, a waiter increments sync_waiters_ then reads completed_,
  // so at least one of them sees the other and no wake-up is lost.
  std::atomic<uint64_t> enqueued_{0};
  axl_status first_error_ = AXL_SUCCESS;  // guarded by mu_
  std::string first_error_message_;       // guarded by mu_

  // Worker side, on its own cache line so that finishing an operation does
  // not steal the line the next enqueue needs.
  alignas(64) Chunk* head_chunk_ = nullptr;  // next slot to run
  uint32_t head_index_ = 0;
  std::atomic<uint32_t> sync_waiters_{0};
  std::atomic<uint64_t> completed_{0};

  // Cold: used at start and stop only.
  alignas(64) std::thread worker_;
  std::thread::id worker_id_;
  std::mutex join_mu_;  // serialises stop() callers around join()
};

template <class F>
axl_status WorkQueue::enqueue(OpInfo info, F&& op) {
  using Fn = std::decay_t<F>;
  constexpr bool kInline = sizeof(Fn) <= kInlineBytes &&
                           alignof(Fn) <= alignof(std::max_align_t) &&
                           std::is_nothrow_constructible_v<Fn, F&&>;
  if constexpr (kInline) {
    std::unique_lock<std::mutex> lk(mu_);
    if (stopping_) return AXL_ERROR_INVALID_STATE;
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
    if (stopping_) return AXL_ERROR_INVALID_STATE;
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
