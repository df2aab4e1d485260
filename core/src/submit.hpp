// The one submission path: every op reaches a plugin's enqueue slots through
// a Submission (or, for ops that touch no buffer, one of its static
// members), so every kind of op follows the same rules in the same order.
//
// An entry point builds a Submission on the stack and
//  1. validates every argument, naming each buffer the op reads or writes
//     (read() / write()): nothing outside the Submission changes, so a bad
//     last argument leaves no trace of the first;
//  2. calls run(body), which then, in this order:
//     a. records each buffer's use by the queue (its memory is freed only
//        after the queue has passed this op),
//     b. makes the queue wait for other queues' pending writers of the
//        tracked buffers, so the op never reads or overwrites bytes that a
//        copy, fill or launch elsewhere is still writing,
//     c. closes the queue's open completion (exact stamps of tracked
//        buffers, below),
//     d. runs `body`, which enqueues through the members below,
//     e. stamps the tracked buffers with the op's completion (writes first),
//        or poisons the written ones with the error when `body` failed.
//
// Stamps are exact (a completion recorded after this op: copies, fills) or
// lazy (the queue's open completion, recorded when a host wait needs it:
// launches, so a stream of launches costs no event each).
#pragma once

#include "internal.hpp"

namespace axl::core {

// One endpoint of a copy: device memory of `dev`, or host memory.
struct End {
  Device* dev;       // null for plain host memory given by pointer
  axl_devaddr addr;
  void* host;        // non-null if the host can read/write it directly
  bool devmem;       // device memory (of a host device, host-readable too)
};
// The endpoint at byte `offset` of b.
End end_of(Buffer* b, uint64_t offset);
// Plain host memory given by pointer.
inline End host_end(const void* p) { return End{nullptr, 0, const_cast<void*>(p), false}; }

// The usable queue and the live destination and source buffers of a
// buffer-to-buffer op (axl_queue_copy_buffer, axl_queue_copy_layout).
axl_status copy_operands(axl_queue_t queue, axl_buffer_t dst, axl_buffer_t src, Queue** q, Buffer** d, Buffer** s);

// OUT_OF_HOST_MEMORY for a staging copy of `bytes` that could not be allocated.
axl_status staging_oom(uint64_t bytes);

// Records that q enqueued work on allocation `a` (its memory is freed only
// after q passed it): the fast check inline (a queue reusing a buffer, the
// common case), the first use by a queue out of line.
void note_first_use(Buffer* allocation, Queue* q);
__attribute__((always_inline)) inline void note_use_of_allocation(Buffer* a, Queue* q) {
  if (a->last_use.load(std::memory_order_relaxed) != q) note_first_use(a, q);
}

class Submission {
 public:
  enum class Stamps { exact, lazy };
  explicit Submission(Queue* q, Stamps stamps = Stamps::exact) : q_(q), stamps_(stamps) {}
  Submission(const Submission&) = delete;
  Submission& operator=(const Submission&) = delete;

  // Step 1: the buffers the op touches. Only collected here.
  void read(Buffer* b) { add(b, AXL_ACCESS_READ); }
  void write(Buffer* b) { add(b, AXL_ACCESS_WRITE); }

  // Step 2, once every argument is valid. `body(Submission&)` returns the
  // enqueue's status, which run returns.
  template <typename Body>
  axl_status run(Body&& body) {
    // Locals: the calls below could change members as far as the compiler
    // knows, which would reload them on every step of the enqueue path.
    Queue* const q = q_;
    const bool tracked = tracked_;
    // The common case (every buffer already used by q, none tracked) has
    // nothing to record or wait for: add() found that out while it read the
    // buffers, so there is no second pass over them.
    if (record_) [[unlikely]]
      if (axl_status s = record_and_wait()) return s;
    // Only a tracked op has a stamp for the open completion to stay out of.
    if (tracked && stamps_ == Stamps::exact) stamp_begin(q);
    const axl_status s = body(*this);
    // An op declined before any of it was enqueued (refused() below: bad
    // arguments, a kernel's declared signature) changed nothing: its
    // buffers keep their stamps and read as they were (MAX: a graph
    // declined before execution stamps nothing). One that failed after
    // part of it was enqueued (a staged, layout or batched copy), or for a
    // reason of the device or the host (lost, out of memory, a poisoned
    // input), poisons what it writes.
    if (tracked) [[unlikely]]
      if (s == AXL_SUCCESS || steps_ != 0 || !refused(s)) stamp_op(q, s, uses(), n_, stamps_ == Stamps::lazy);
    return s;
  }

  // What a body enqueues on the queue, in its order. Copies pick the route
  // (the plugin's own direction, peer, or staged through host memory on the
  // devices' default queues, chained back to this queue).
  axl_status copy(End dst, End src, uint64_t bytes) { return step(copy_steps(dst, src, bytes)); }
  axl_status copy_bytes(Buffer* dst, uint64_t dst_offset, Buffer* src, uint64_t src_offset, uint64_t bytes);
  // Plain host memory on one side: dst or src null.
  axl_status copy_host_bytes(void* dst_host, Buffer* dst, uint64_t dst_offset, const void* src_host, Buffer* src,
                             uint64_t src_offset, uint64_t bytes);
  // Inline, as is launch: the common case of each goes straight to the
  // plugin (benchmarks/bench_enqueue).
  axl_status copy_from_host(Buffer* dst, uint64_t dst_offset, const void* src, uint64_t bytes) {
    if (dst->device == q_->device && !dst->pinned) return htod(q_, dst->address + dst_offset, src, bytes);
    return copy(end_of(dst, dst_offset), host_end(src), bytes);
  }
  axl_status copy_to_host(void* dst, Buffer* src, uint64_t src_offset, uint64_t bytes) {
    if (src->device == q_->device && !src->pinned) return dtoh(q_, dst, src->address + src_offset, bytes);
    return copy(host_end(dst), end_of(src, src_offset), bytes);
  }
  // The arguments are valid (axl_queue_fill): pattern_size 1, 2 or 4, the
  // range inside dst and a multiple of it.
  axl_status fill(Buffer* dst, uint64_t offset, uint64_t bytes, uint32_t pattern, uint32_t pattern_size);
  axl_status launch(Kernel* k, const axl_launch_config& cfg, const axl_kernel_arg* args, uint32_t num_args) {
    return launch_on(q_, k, cfg, args, num_args);
  }
  // fn(data) after the earlier work; on failure fn is not called.
  axl_status host_fn(void (*fn)(void*), void* data) { return step(enqueue_host_fn(q_, fn, data)); }
  // Blocks until q has run everything (undoing a body that failed halfway
  // while earlier steps may still read its temporaries).
  axl_status synchronize();

  // Ops that touch no buffer: nothing to validate, record or stamp. They are
  // members so that this object stays the only caller of enqueue slots.
  static axl_status enqueue_host_fn(Queue* q, void (*fn)(void*), void* data);
  static axl_status record_event(Queue* q, axl_pevent ev);
  static axl_status wait_event(Queue* q, axl_pevent ev);
  // `flag` is the application's handle, named by the exit drain if q never
  // gets past the wait.
  static axl_status wait_flag(Queue* q, axl_pflag pf, uint64_t value, const void* flag);
  static axl_status write_flag(Queue* q, axl_pflag pf, uint64_t value);

  // The plugin's byte copies on any queue: the op's own, or a device's
  // default queue that a staged copy passes through.
  static axl_status htod(Queue* q, axl_devaddr dst, const void* src, uint64_t bytes) {
    return q->submit([&] { return AXL_CALL(q->device->backend, queue_copy_htod, q->pq, dst, src, bytes); });
  }
  static axl_status dtoh(Queue* q, void* dst, axl_devaddr src, uint64_t bytes) {
    return q->submit([&] { return AXL_CALL(q->device->backend, queue_copy_dtoh, q->pq, dst, src, bytes); });
  }
  static axl_status dtod(Queue* q, axl_devaddr dst, axl_devaddr src, uint64_t bytes) {
    return q->submit([&] { return AXL_CALL(q->device->backend, queue_copy_dtod, q->pq, dst, src, bytes); });
  }
  static axl_status launch_on(Queue* q, Kernel* k, const axl_launch_config& cfg, const axl_kernel_arg* args,
                              uint32_t num_args) {
    return q->submit(
        [&] { return AXL_CALL(q->device->backend, queue_launch, q->pq, k->pk, &cfg, args, num_args); });
  }

  // Whether run() has nothing to do for buffer b on queue q but the body:
  // b is not under hazard tracking (nothing to wait for or stamp) and q is
  // already its allocation's last user (nothing to record); add() below
  // reads the same two facts. An entry point whose every
  // buffer passes, and whose arguments are valid, may skip the Submission
  // and call the body's enqueue itself (queue.cpp's fast paths): the same
  // op, without collecting its buffers (benchmarks/bench_enqueue).
  __attribute__((always_inline)) static bool needs_nothing_but_the_body(Buffer* b, Queue* q) {
    Buffer* a = b->allocation();
    return !a->tracked() && a->last_use.load(std::memory_order_relaxed) == q;
  }

 private:
  // Most ops touch a handful of buffers: kept on the stack so an enqueue
  // allocates nothing (benchmarks/bench_enqueue).
  static constexpr uint32_t kInline = 16;

  // Reads only (step 1 changes nothing): whether run() has to record the
  // use (q is not the allocation's last user) or track hazards.
  __attribute__((always_inline)) void add(Buffer* b, uint32_t access) {
    Buffer* a = b->allocation();
    const bool tracked = a->tracked();
    tracked_ |= tracked;
    record_ |= tracked | (a->last_use.load(std::memory_order_relaxed) != q_);
    if (n_ < kInline) [[likely]] inline_[n_] = {b, access};
    else add_past_inline({b, access});
    ++n_;
  }
  // The first time moves the inline ones to heap_.
  void add_past_inline(BufferUse u);
  // Counts what the body got enqueued, so run() can tell a refused op from
  // one that failed halfway. Every op a body may call more than once, or
  // after another, goes through it; the single-call paths (launch, the
  // inline host copies' own direction) need not: when they fail they were
  // the body's only step.
  axl_status step(axl_status s) {
    steps_ += s == AXL_SUCCESS;
    return s;
  }
  axl_status copy_steps(End dst, End src, uint64_t bytes);
  // The statuses that refuse the request itself, as made, rather than
  // report a failure of the device or the host while doing it.
  static constexpr bool refused(axl_status s) {
    return s == AXL_ERROR_INVALID_ARGUMENT || s == AXL_ERROR_OUT_OF_RANGE || s == AXL_ERROR_NOT_FOUND ||
           s == AXL_ERROR_UNSUPPORTED || s == AXL_ERROR_INVALID_HANDLE || s == AXL_ERROR_INVALID_STATE;
  }
  const BufferUse* uses() const { return n_ > kInline ? heap_.data() : inline_; }
  // Steps a and b of run() (out of line: the common case skips them).
  axl_status record_and_wait();

  Queue* q_;
  Stamps stamps_;
  bool tracked_ = false;  // a buffer is under host hazard tracking
  bool record_ = false;   // a use to record or a hazard to check
  uint32_t n_ = 0;
  uint32_t steps_ = 0;  // steps of the body enqueued (step())
  BufferUse inline_[kInline];
  std::vector<BufferUse> heap_;  // all of them, once there are more than kInline
};

}  // namespace axl::core
