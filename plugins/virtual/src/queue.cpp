// Queues: each is a WorkQueue whose worker moves the bytes of copies and
// fills in enqueue order, taking the simulated time the cost hook prices.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>
#include <thread>

#include "axl/common/host_queue_slots.hpp"
#include "virtual_backend.hpp"

namespace axl::virt {

using common::OpInfo;
using common::OpKind;

namespace {

// Native handles look like driver handles: opaque, non-zero, unique per
// queue ("VIRT" in the high half so they stand out in a debugger).
constexpr uint64_t kNativeHandleTag = 0x5649'5254'0000'0000ull;

// The names the launch trace shows, modelled on the CUDA driver API's.
constexpr const char* kTraceHtoD = "virtMemcpyHtoDAsync";
constexpr const char* kTraceDtoH = "virtMemcpyDtoHAsync";
constexpr const char* kTraceDtoD = "virtMemcpyDtoDAsync";
constexpr const char* kTracePeer = "virtMemcpyPeerAsync";

const char* fill_trace_name(uint32_t pattern_size) {
  return pattern_size == 1 ? "virtMemsetD8Async"
                           : pattern_size == 2 ? "virtMemsetD16Async" : "virtMemsetD32Async";
}

common::WorkQueue::Options queue_options() {
  common::WorkQueue::Options o;
  o.thread_name = "axl-virt-queue";
  o.cost_hook = [](const OpInfo& op) { return backend().sim.cost_ns(op); };
  return o;
}

// An enqueue fails once the queue was stopped by backend_shutdown, or when a
// full queue cannot make room (WorkQueue::enqueue says which).
axl_status enqueue_failed(axl_status status, const char* what) {
  return common::enqueue_result(fail, status, what);
}

// Instead of the operation, an @async injected failure: priced like the
// operation, it does nothing and fails, so the error surfaces at the next
// synchronize.
axl_status enqueue_failure(Queue& q, OpInfo info, const FaultHit& hit) {
  return q.work.enqueue(info, [status = hit.status, text = hit.message](std::string& message) {
    message = text;
    return status;
  });
}

// Sleeps until `deadline` with better than scheduler-tick precision, as the
// work queue does after an operation: simulated times are often a few
// hundred microseconds.
void wait_until(std::chrono::steady_clock::time_point deadline) {
  using namespace std::chrono;
  constexpr auto kSpinWindow = microseconds(60);
  if (deadline - steady_clock::now() > kSpinWindow) std::this_thread::sleep_until(deadline - kSpinWindow);
  while (steady_clock::now() < deadline) std::this_thread::yield();
}

// Moves `bytes` from src to dst on the queue, priced as `info`. Without
// simulated time this is one memmove (the core may pass overlapping ranges of
// one allocation). With it, the cost hook keeps the queue busy for the
// operation's simulated time, and the operation places its own work inside
// that time: it reads the source when it starts and writes the destination
// as late as the time allows (the write takes about as long as the read did).
// A reader that does not wait for a writer sees the old bytes, and a writer's
// bytes land late, so a missing wait fails every run instead of once in a
// while; and the time an event measures stays the simulated one.
axl_status enqueue_move(Queue& q, OpInfo info, unsigned char* dst, const unsigned char* src,
                        uint64_t bytes) {
  if (!backend().sim.enabled())
    return q.work.enqueue(info, [dst, src, bytes] { std::memmove(dst, src, bytes); });
  return q.work.enqueue(info, [info, dst, src, bytes](std::string& message) -> axl_status {
    using namespace std::chrono;
    const auto start = steady_clock::now();
    const nanoseconds cost(backend().sim.cost_ns(info));  // the hook's price for this operation
    std::unique_ptr<unsigned char[]> stage(new (std::nothrow) unsigned char[bytes]);
    if (!stage) {
      message = common::str("no host memory to stage a ", bytes, "-byte timed copy");
      return AXL_ERROR_OUT_OF_HOST_MEMORY;
    }
    std::memcpy(stage.get(), src, bytes);
    const auto read = steady_clock::now() - start;
    if (cost > read) wait_until(start + cost - read);
    std::memcpy(dst, stage.get(), bytes);
    return AXL_SUCCESS;
  });
}

// Repeats the low `size` bytes of `value` (in native byte order, as the
// device stores the integer) over `bytes` bytes at dst.
void fill_pattern(unsigned char* dst, uint64_t bytes, uint32_t value, uint32_t size) noexcept {
  unsigned char pattern[4];
  if (size == 1) {
    pattern[0] = static_cast<unsigned char>(value);
  } else if (size == 2) {
    const uint16_t v = static_cast<uint16_t>(value);
    std::memcpy(pattern, &v, 2);
  } else {
    std::memcpy(pattern, &value, 4);
  }
  if (std::all_of(pattern, pattern + size, [&](unsigned char c) { return c == pattern[0]; })) {
    std::memset(dst, pattern[0], bytes);
    return;
  }
  unsigned char run[256];
  for (size_t i = 0; i < sizeof run; ++i) run[i] = pattern[i % size];
  for (uint64_t done = 0; done < bytes;) {
    const uint64_t n = std::min<uint64_t>(sizeof run, bytes - done);
    std::memcpy(dst + done, run, n);
    done += n;
  }
}

// A fill; with simulated time it lands when that time is over, like
// enqueue_move's writes.
axl_status enqueue_fill(Queue& q, unsigned char* dst, uint64_t bytes, uint32_t value,
                        uint32_t size) {
  const OpInfo info{OpKind::kFill, bytes};
  if (!backend().sim.enabled())
    return q.work.enqueue(info, [dst, bytes, value, size] { fill_pattern(dst, bytes, value, size); });
  return q.work.enqueue(info, [info, dst, bytes, value, size] {
    const auto start = std::chrono::steady_clock::now();
    wait_until(start + std::chrono::nanoseconds(backend().sim.cost_ns(info)));
    fill_pattern(dst, bytes, value, size);
  });
}

// After a write into a multicast mapping: the bytes it wrote reach every
// other member's unicast memory at the same offset, as a multicast store's
// do. A second operation right behind the write on the same in-order queue,
// so it copies what the write left (whatever the source was, even memory
// it overwrote), priced as a peer copy per member.
axl_status enqueue_broadcast(Queue& q, const unsigned char* written, std::vector<unsigned char*> mirrors,
                             uint64_t bytes) {
  if (mirrors.empty()) return AXL_SUCCESS;
  const OpInfo info{OpKind::kCopyPeer, bytes * mirrors.size()};
  return q.work.enqueue(info, [written, mirrors = std::move(mirrors), bytes] {
    for (unsigned char* m : mirrors) std::memcpy(m, written, bytes);
  });
}

}  // namespace

Queue::Queue(Device* d, uint64_t trace, uint64_t handle, const axl_queue_desc& desc)
    : work(common::WorkQueue::from_desc(queue_options(), desc)), device(d), trace_id(trace), native_handle(handle) {}

axl_status queue_create(axl_pdevice device, const axl_queue_desc* desc,
                        axl_pqueue* out_queue) noexcept {
  return guarded("queue_create", [&]() -> axl_status {
    Backend& b = backend();
    if (axl_status s = common::check_queue_create(fail, desc, out_queue)) return s;
    if (std::optional<FaultHit> hit = b.faults.check(FaultOp::kQueueCreate)) return fail(*hit);
    const uint64_t handle = kNativeHandleTag | b.next_native_handle.fetch_add(1);
    auto q = std::make_unique<Queue>(from(device), desc->trace_id, handle, *desc);
    b.queues.add(q.get());
    *out_queue = common::to_handle<axl_pqueue>(q.release());
    return AXL_SUCCESS;
  });
}

axl_status queue_destroy(axl_pqueue queue) noexcept {
  return guarded("queue_destroy", [&]() -> axl_status {
    return common::destroy_queue(fail, backend().queues, from(queue));
  });
}

axl_status queue_synchronize(axl_pqueue queue) noexcept {
  return guarded("queue_synchronize", [&]() -> axl_status {
    common::SyncResult r = from(queue)->work.synchronize();
    if (std::optional<FaultHit> hit = backend().faults.check(FaultOp::kQueueSync)) {
      // The wait happened; the injected error replaces the queue's own,
      // which is kept in the message rather than lost.
      if (r.status != AXL_SUCCESS)
        hit->message += common::str("; the queue's own first error was ",
                                    native_name(r.status), ": ", r.message);
      return fail(*hit);
    }
    return common::report_sync(fail, std::move(r));
  });
}

axl_status queue_copy_htod(axl_pqueue queue, axl_devaddr dst, const void* src,
                           uint64_t bytes) noexcept {
  return guarded("queue_copy_htod", [&]() -> axl_status {
    if (src == nullptr || bytes == 0)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("queue_copy_htod: src is NULL or bytes is 0 (bytes = ", bytes, ")"));
    Queue* q = from(queue);
    unsigned char* d = nullptr;
    std::vector<unsigned char*> mirrors;
    if (axl_status s = resolve(*q->device, dst, bytes, "destination of a host-to-device copy", &d, &mirrors))
      return s;
    const OpInfo info{OpKind::kCopyHtoD, bytes};
    std::optional<FaultHit> hit = backend().faults.check(FaultOp::kMemcpyHtoD);
    if (hit && !hit->async) return fail(*hit);
    axl_status s = hit ? enqueue_failure(*q, info, *hit)
                       : enqueue_move(*q, info, d, static_cast<const unsigned char*>(src), bytes);
    if (s == AXL_SUCCESS && !hit) s = enqueue_broadcast(*q, d, std::move(mirrors), bytes);
    if (s != AXL_SUCCESS) return enqueue_failed(s, "a copy");
    const common::Tracer& t = backend().tracer;
    if (t.enabled()) t.memcpy(q->trace_id, AXL_MEMCPY_HTOD, kTraceHtoD, bytes);
    return AXL_SUCCESS;
  });
}

axl_status queue_copy_dtoh(axl_pqueue queue, void* dst, axl_devaddr src, uint64_t bytes) noexcept {
  return guarded("queue_copy_dtoh", [&]() -> axl_status {
    if (dst == nullptr || bytes == 0)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("queue_copy_dtoh: dst is NULL or bytes is 0 (bytes = ", bytes, ")"));
    Queue* q = from(queue);
    unsigned char* s_ptr = nullptr;
    if (axl_status s = resolve(*q->device, src, bytes, "source of a device-to-host copy", &s_ptr))
      return s;
    const OpInfo info{OpKind::kCopyDtoH, bytes};
    std::optional<FaultHit> hit = backend().faults.check(FaultOp::kMemcpyDtoH);
    if (hit && !hit->async) return fail(*hit);
    const axl_status s = hit ? enqueue_failure(*q, info, *hit)
                             : enqueue_move(*q, info, static_cast<unsigned char*>(dst), s_ptr, bytes);
    if (s != AXL_SUCCESS) return enqueue_failed(s, "a copy");
    const common::Tracer& t = backend().tracer;
    if (t.enabled()) t.memcpy(q->trace_id, AXL_MEMCPY_DTOH, kTraceDtoH, bytes);
    return AXL_SUCCESS;
  });
}

axl_status queue_copy_dtod(axl_pqueue queue, axl_devaddr dst, axl_devaddr src,
                           uint64_t bytes) noexcept {
  return guarded("queue_copy_dtod", [&]() -> axl_status {
    if (bytes == 0) return fail(AXL_ERROR_INVALID_ARGUMENT, "queue_copy_dtod: bytes is 0");
    Queue* q = from(queue);
    unsigned char* d = nullptr;
    unsigned char* s_ptr = nullptr;
    std::vector<unsigned char*> mirrors;
    if (axl_status s = resolve(*q->device, dst, bytes, "destination of a device-to-device copy", &d, &mirrors))
      return s;
    if (axl_status s = resolve(*q->device, src, bytes, "source of a device-to-device copy", &s_ptr))
      return s;
    const OpInfo info{OpKind::kCopyDtoD, bytes};
    std::optional<FaultHit> hit = backend().faults.check(FaultOp::kMemcpyDtoD);
    if (hit && !hit->async) return fail(*hit);
    axl_status s = hit ? enqueue_failure(*q, info, *hit) : enqueue_move(*q, info, d, s_ptr, bytes);
    if (s == AXL_SUCCESS && !hit) s = enqueue_broadcast(*q, d, std::move(mirrors), bytes);
    if (s != AXL_SUCCESS) return enqueue_failed(s, "a copy");
    const common::Tracer& t = backend().tracer;
    if (t.enabled()) t.memcpy(q->trace_id, AXL_MEMCPY_DTOD, kTraceDtoD, bytes);
    return AXL_SUCCESS;
  });
}

axl_status queue_copy_peer(axl_pqueue queue, axl_pdevice dst_device, axl_devaddr dst,
                           axl_pdevice src_device, axl_devaddr src, uint64_t bytes) noexcept {
  return guarded("queue_copy_peer", [&]() -> axl_status {
    if (dst_device == nullptr || src_device == nullptr || bytes == 0)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("queue_copy_peer: a device is NULL or bytes is 0 (bytes = ", bytes, ")"));
    Queue* q = from(queue);
    Device* dd = from(dst_device);
    Device* sd = from(src_device);
    if (q->device != dd && q->device != sd)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("queue_copy_peer: the queue belongs to virtual device ", q->device->index,
                              ", which is neither the source (", sd->index, ") nor the destination (",
                              dd->index, ")"));
    unsigned char* d = nullptr;
    unsigned char* s_ptr = nullptr;
    std::vector<unsigned char*> mirrors;
    if (axl_status s = resolve(*dd, dst, bytes, "destination of a peer copy", &d, &mirrors)) return s;
    if (axl_status s = resolve(*sd, src, bytes, "source of a peer copy", &s_ptr)) return s;
    const OpInfo info{OpKind::kCopyPeer, bytes};
    std::optional<FaultHit> hit = backend().faults.check(FaultOp::kMemcpyPeer);
    if (hit && !hit->async) return fail(*hit);
    axl_status s = hit ? enqueue_failure(*q, info, *hit) : enqueue_move(*q, info, d, s_ptr, bytes);
    if (s == AXL_SUCCESS && !hit) s = enqueue_broadcast(*q, d, std::move(mirrors), bytes);
    if (s != AXL_SUCCESS) return enqueue_failed(s, "a copy");
    const common::Tracer& t = backend().tracer;
    if (t.enabled()) t.memcpy(q->trace_id, AXL_MEMCPY_DTOD, kTracePeer, bytes);
    return AXL_SUCCESS;
  });
}

axl_status queue_fill(axl_pqueue queue, axl_devaddr dst, uint64_t bytes, uint32_t pattern,
                      uint32_t pattern_size) noexcept {
  return guarded("queue_fill", [&]() -> axl_status {
    if (pattern_size != 1 && pattern_size != 2 && pattern_size != 4)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("queue_fill: pattern_size is ", pattern_size, "; expected 1, 2 or 4"));
    if (bytes == 0 || bytes % pattern_size != 0)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("queue_fill: bytes (", bytes,
                              ") must be a non-zero multiple of pattern_size (", pattern_size, ")"));
    Queue* q = from(queue);
    unsigned char* d = nullptr;
    std::vector<unsigned char*> mirrors;
    if (axl_status s = resolve(*q->device, dst, bytes, "destination of a fill", &d, &mirrors)) return s;
    std::optional<FaultHit> hit = backend().faults.check(FaultOp::kMemset);
    if (hit && !hit->async) return fail(*hit);
    axl_status s = hit ? enqueue_failure(*q, OpInfo{OpKind::kFill, bytes}, *hit)
                       : enqueue_fill(*q, d, bytes, pattern, pattern_size);
    if (s == AXL_SUCCESS && !hit) s = enqueue_broadcast(*q, d, std::move(mirrors), bytes);
    if (s != AXL_SUCCESS) return enqueue_failed(s, "a fill");
    const common::Tracer& t = backend().tracer;
    if (t.enabled()) t.memset(q->trace_id, fill_trace_name(pattern_size), bytes, pattern, pattern_size);
    return AXL_SUCCESS;
  });
}

axl_status queue_record_event(axl_pqueue queue, axl_pevent event) noexcept {
  return guarded("queue_record_event", [&]() -> axl_status {
    Queue* q = from(queue);
    std::optional<FaultHit> hit = backend().faults.check(FaultOp::kEventRecord);
    if (hit && !hit->async) return fail(*hit);
    // An @async failure precedes the record, which still completes: waiters
    // on the event must not hang; the error is the queue's to report.
    if (hit) {
      if (axl_status s = enqueue_failure(*q, OpInfo{OpKind::kEventRecord, 0}, *hit))
        return enqueue_failed(s, "an event record");
    }
    return common::record_event(fail, q->work, event);
  });
}

axl_status queue_wait_event(axl_pqueue queue, axl_pevent event) noexcept {
  return guarded("queue_wait_event", [&] { return common::wait_event(fail, from(queue)->work, event); });
}

axl_status queue_wait_flag(axl_pqueue queue, axl_pflag flag, uint64_t value) noexcept {
  return guarded("queue_wait_flag",
                 [&] { return common::wait_flag(fail, from(queue)->work, *from(flag)->flag, value); });
}

axl_status queue_write_flag(axl_pqueue queue, axl_pflag flag, uint64_t value) noexcept {
  return guarded("queue_write_flag",
                 [&] { return common::write_flag(fail, from(queue)->work, *from(flag)->flag, value); });
}

axl_status queue_enqueue_host_fn(axl_pqueue queue, axl_host_fn fn, void* user_data) noexcept {
  return guarded("queue_enqueue_host_fn", [&]() -> axl_status {
    if (fn == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "queue_enqueue_host_fn: fn is NULL");
    Queue* q = from(queue);
    std::optional<FaultHit> hit = backend().faults.check(FaultOp::kHostFn);
    if (hit && !hit->async) return fail(*hit);
    // @async: the callback never runs, as work dropped after a device fault;
    // whatever waits for it (a cross-backend wait's flag) waits forever.
    if (hit) return enqueue_failed(enqueue_failure(*q, OpInfo{OpKind::kHostFn, 0}, *hit), "a host function");
    return common::enqueue_host_callback(fail, q->work, fn, user_data);
  });
}

axl_status queue_get_native_handle(axl_pqueue queue, uint64_t* out_handle) noexcept {
  return guarded("queue_get_native_handle", [&]() -> axl_status {
    if (out_handle == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "queue_get_native_handle: out_handle is NULL");
    *out_handle = from(queue)->native_handle;
    return AXL_SUCCESS;
  });
}

}  // namespace axl::virt
