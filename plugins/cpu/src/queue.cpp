// Queues: each is a WorkQueue whose worker thread does the copies and fills
// itself, with memcpy/memset, in enqueue order (a small copy on an idle
// queue runs on the calling thread instead: enqueue_copy).
#include <algorithm>
#include <cstring>

#include "axl/common/host_queue_slots.hpp"
#include "cpu_backend.hpp"

namespace axl::cpu {

using common::OpInfo;
using common::OpKind;

namespace {

void* ptr(axl_devaddr a) noexcept { return reinterpret_cast<void*>(a); }

// A refused enqueue, reported (host_queue_slots.hpp).
axl_status enqueue_failed(axl_status status, const char* what) {
  return common::enqueue_result(fail, status, what);
}

// Copies up to this size run on the calling thread when the queue is idle
// (WorkQueue::enqueue_or_run): a microsecond of memcpy at most, less than
// waking a parked worker and waiting for it. Larger ones stay asynchronous,
// so the caller's own work still overlaps them.
constexpr uint64_t kInlineCopyMaxBytes = 16 * 1024;

// Enqueues one copy, or runs it now when it is small and the queue idle
// (`copy` is noexcept, as enqueue_or_run needs).
template <class Copy>
axl_status enqueue_copy(Queue* q, OpKind kind, uint64_t bytes, Copy copy) {
  const OpInfo info{kind, bytes};
  const axl_status s = bytes <= kInlineCopyMaxBytes ? q->work.enqueue_or_run(info, copy)
                                                    : q->work.enqueue(info, copy);
  return s == AXL_SUCCESS ? s : enqueue_failed(s, "a copy");
}

// Repeats the `size`-byte value `value` (its native byte order, as the
// device would store the integer) over `bytes` bytes at dst.
void fill_pattern(unsigned char* dst, uint64_t bytes, uint32_t value, uint32_t size) noexcept {
  unsigned char pattern[4];
  if (size == 2) {
    const uint16_t v = static_cast<uint16_t>(value);
    std::memcpy(pattern, &v, 2);
  } else if (size == 4) {
    std::memcpy(pattern, &value, 4);
  } else {
    pattern[0] = static_cast<unsigned char>(value);
  }
  // One repeated byte (1-byte fills, zeroing, 0xFFFF...) is memset's job.
  if (std::all_of(pattern, pattern + size, [&](unsigned char c) { return c == pattern[0]; })) {
    std::memset(dst, pattern[0], bytes);
    return;
  }
  const uint64_t count = bytes / size;
  if (reinterpret_cast<uintptr_t>(dst) % size == 0) {
    // Aligned: a typed fill the compiler vectorises.
    if (size == 2) {
      uint16_t v;
      std::memcpy(&v, pattern, 2);
      std::fill_n(reinterpret_cast<uint16_t*>(dst), count, v);
    } else {
      uint32_t v;
      std::memcpy(&v, pattern, 4);
      std::fill_n(reinterpret_cast<uint32_t*>(dst), count, v);
    }
    return;
  }
  // Unaligned destination (a view at an odd offset): write one 256-byte run
  // of the pattern, then copy it forward.
  unsigned char run[256];
  for (size_t i = 0; i < sizeof run; ++i) run[i] = pattern[i % size];
  uint64_t done = 0;
  while (done < bytes) {
    const uint64_t n = std::min<uint64_t>(sizeof run, bytes - done);
    std::memcpy(dst + done, run, n);
    done += n;
  }
}

}  // namespace

axl_status queue_create(axl_pdevice, const axl_queue_desc* desc, axl_pqueue* out_queue) noexcept {
  return guarded("queue_create", [&]() -> axl_status {
    if (axl_status s = common::check_queue_create(fail, desc, out_queue)) return s;
    auto q = std::make_unique<Queue>(desc->trace_id, *desc);
    backend().queues.add(q.get());
    *out_queue = common::to_handle<axl_pqueue>(q.release());
    return AXL_SUCCESS;
  });
}

axl_status queue_destroy(axl_pqueue queue) noexcept {
  return guarded("queue_destroy",
                 [&] { return common::destroy_queue(fail, backend().queues, from(queue)); });
}

axl_status queue_synchronize(axl_pqueue queue) noexcept {
  return guarded("queue_synchronize",
                 [&] { return common::report_sync(fail, from(queue)->work.synchronize()); });
}

axl_status queue_copy_htod(axl_pqueue queue, axl_devaddr dst, const void* src,
                           uint64_t bytes) noexcept {
  return guarded("queue_copy_htod", [&]() -> axl_status {
    Queue* q = from(queue);
    void* d = ptr(dst);
    if (axl_status s = enqueue_copy(q, OpKind::kCopyHtoD, bytes,
                                    [d, src, bytes]() noexcept { std::memcpy(d, src, bytes); }))
      return s;
    const common::Tracer& t = backend().tracer;
    if (t.enabled()) t.memcpy(q->trace_id, AXL_MEMCPY_HTOD, "memcpy_htod", bytes);
    return AXL_SUCCESS;
  });
}

axl_status queue_copy_dtoh(axl_pqueue queue, void* dst, axl_devaddr src, uint64_t bytes) noexcept {
  return guarded("queue_copy_dtoh", [&]() -> axl_status {
    Queue* q = from(queue);
    const void* s_ptr = ptr(src);
    if (axl_status s = enqueue_copy(q, OpKind::kCopyDtoH, bytes,
                                    [dst, s_ptr, bytes]() noexcept { std::memcpy(dst, s_ptr, bytes); }))
      return s;
    const common::Tracer& t = backend().tracer;
    if (t.enabled()) t.memcpy(q->trace_id, AXL_MEMCPY_DTOH, "memcpy_dtoh", bytes);
    return AXL_SUCCESS;
  });
}

axl_status queue_copy_dtod(axl_pqueue queue, axl_devaddr dst, axl_devaddr src,
                           uint64_t bytes) noexcept {
  return guarded("queue_copy_dtod", [&]() -> axl_status {
    Queue* q = from(queue);
    void* d = ptr(dst);
    const void* s_ptr = ptr(src);
    // memmove: the core's strided copies may hand over overlapping ranges of
    // one allocation, and on the host that costs nothing extra.
    if (axl_status s = enqueue_copy(q, OpKind::kCopyDtoD, bytes,
                                    [d, s_ptr, bytes]() noexcept { std::memmove(d, s_ptr, bytes); }))
      return s;
    const common::Tracer& t = backend().tracer;
    if (t.enabled()) t.memcpy(q->trace_id, AXL_MEMCPY_DTOD, "memcpy_dtod", bytes);
    return AXL_SUCCESS;
  });
}

axl_status queue_copy_peer(axl_pqueue queue, axl_pdevice, axl_devaddr dst, axl_pdevice,
                           axl_devaddr src, uint64_t bytes) noexcept {
  return guarded("queue_copy_peer", [&]() -> axl_status {
    // Both devices can only be the host: a peer copy is a plain copy.
    Queue* q = from(queue);
    void* d = ptr(dst);
    const void* s_ptr = ptr(src);
    if (axl_status s = enqueue_copy(q, OpKind::kCopyPeer, bytes,
                                    [d, s_ptr, bytes]() noexcept { std::memmove(d, s_ptr, bytes); }))
      return s;
    const common::Tracer& t = backend().tracer;
    if (t.enabled()) t.memcpy(q->trace_id, AXL_MEMCPY_DTOD, "memcpy_peer", bytes);
    return AXL_SUCCESS;
  });
}

axl_status queue_fill(axl_pqueue queue, axl_devaddr dst, uint64_t bytes, uint32_t pattern,
                      uint32_t pattern_size) noexcept {
  return guarded("queue_fill", [&]() -> axl_status {
    Backend& b = backend();
    if (pattern_size != 1 && pattern_size != 2 && pattern_size != 4) {
      return b.host.report(AXL_ERROR_INVALID_ARGUMENT,
                           common::str("queue_fill: pattern_size is ", pattern_size,
                                       "; expected 1, 2 or 4"));
    }
    if (bytes % pattern_size != 0) {
      return b.host.report(AXL_ERROR_INVALID_ARGUMENT,
                           common::str("queue_fill: bytes (", bytes,
                                       ") is not a multiple of pattern_size (", pattern_size, ")"));
    }
    Queue* q = from(queue);
    auto* d = static_cast<unsigned char*>(ptr(dst));
    const axl_status s =
        q->work.enqueue(OpInfo{OpKind::kFill, bytes}, [d, bytes, pattern, pattern_size] {
          fill_pattern(d, bytes, pattern, pattern_size);
        });
    if (s != AXL_SUCCESS) return enqueue_failed(s, "a fill");
    if (b.tracer.enabled()) b.tracer.memset(q->trace_id, "memset", bytes, pattern, pattern_size);
    return AXL_SUCCESS;
  });
}

axl_status queue_record_event(axl_pqueue queue, axl_pevent event) noexcept {
  return guarded("queue_record_event",
                 [&] { return common::record_event(fail, from(queue)->work, event); });
}

axl_status queue_wait_event(axl_pqueue queue, axl_pevent event) noexcept {
  return guarded("queue_wait_event", [&] { return common::wait_event(fail, from(queue)->work, event); });
}

axl_status queue_wait_flag(axl_pqueue queue, axl_pflag flag, uint64_t value) noexcept {
  return guarded("queue_wait_flag",
                 [&] { return common::wait_flag(fail, from(queue)->work, *from(flag), value); });
}

axl_status queue_write_flag(axl_pqueue queue, axl_pflag flag, uint64_t value) noexcept {
  return guarded("queue_write_flag",
                 [&] { return common::write_flag(fail, from(queue)->work, *from(flag), value); });
}

axl_status queue_enqueue_host_fn(axl_pqueue queue, axl_host_fn fn, void* user_data) noexcept {
  return guarded("queue_enqueue_host_fn", [&] {
    return common::enqueue_host_callback(fail, from(queue)->work, fn, user_data);
  });
}

axl_status queue_get_native_handle(axl_pqueue, uint64_t* out_handle) noexcept {
  if (out_handle == nullptr)
    return fail(AXL_ERROR_INVALID_ARGUMENT, "queue_get_native_handle: out_handle is NULL");
  *out_handle = 0;  // a host thread has no driver handle
  return AXL_SUCCESS;
}

}  // namespace axl::cpu
