// Queues: one immediate command list each, on the device's compute queue
// group. Immediate lists submit as they are appended, which is what an axl
// queue is (work runs asynchronously as soon as it is enqueued); a regular
// list plus a command queue would need an explicit close-and-execute per
// enqueue or a batching policy axl does not have (docs/backends.md).
#include <cstring>

#include "axl/common/slot_checks.hpp"
#include "l0_backend.hpp"

namespace axl::l0 {

namespace {

// The launch trace names the Level Zero call that carried each operation.
constexpr const char* kTraceCopy = "zeCommandListAppendMemoryCopy";
constexpr const char* kTraceFill = "zeCommandListAppendMemoryFill";

void* ptr(axl_devaddr a) noexcept { return reinterpret_cast<void*>(static_cast<uintptr_t>(a)); }

// Appends one device-work command after the ordering barrier; `what` is the
// call's name for the error message.
template <class Append>
axl_status append_work(Queue& q, const char* what, Append&& append) {
  if (axl_status s = order(q)) return s;
  if (ze_result_t r = append()) return ze_fail(what, r);
  q.need_barrier = true;
  return AXL_SUCCESS;
}

axl_status copy(Queue& q, void* dst, const void* src, uint64_t bytes, int32_t kind) {
  if (bytes == 0) return fail(AXL_ERROR_INVALID_ARGUMENT, "copy of 0 bytes; expected bytes > 0");
  {
    std::lock_guard<std::mutex> lk(q.mu);
    if (axl_status s = append_work(q, kTraceCopy, [&] {
          return ze().zeCommandListAppendMemoryCopy(q.list, dst, src, bytes, nullptr, 0, nullptr);
        }))
      return s;
  }
  if (backend().tracer.enabled()) backend().tracer.memcpy(q.trace_id, kind, kTraceCopy, bytes);
  return AXL_SUCCESS;
}

}  // namespace

common::WorkQueue& host_queue(Queue& q) {
  if (!q.host) {
    common::WorkQueue::Options o;
    o.thread_name = "axl-ze-host";
    q.host = std::make_unique<common::WorkQueue>(o);
  }
  return *q.host;
}

axl_status order(Queue& q) {
  if (!q.need_barrier) return AXL_SUCCESS;
  if (ze_result_t r = ze().zeCommandListAppendBarrier(q.list, nullptr, 0, nullptr))
    return ze_fail("zeCommandListAppendBarrier", r);
  q.need_barrier = false;
  return AXL_SUCCESS;
}

void trim(Queue& q) {
  for (size_t i = q.pending.size(); i-- > 0;) {
    const Pending& p = q.pending[i];
    if (!p.marker) continue;
    if (ze().zeEventQueryStatus(p.signal->event) != ZE_RESULT_SUCCESS) continue;
    q.pending.erase(q.pending.begin(), q.pending.begin() + static_cast<ptrdiff_t>(i) + 1);
    return;
  }
}

axl_status queue_create(axl_pdevice device, const axl_queue_desc* desc,
                        axl_pqueue* out_queue) noexcept {
  return guarded("queue_create", [&]() -> axl_status {
    // Through trace_id (1.0): an older core's shorter desc is valid. The 1.2
    // bound (max_pending) is the driver's own here: it blocks the host when
    // a command queue is full.
    if (axl_status s = common::check_queue_create(fail, desc, out_queue)) return s;
    Device& d = *from(device);
    auto q = std::make_unique<Queue>();
    q->device = &d;
    q->trace_id = desc->trace_id;
    ze_command_queue_desc_t qd{};
    qd.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
    qd.ordinal = d.compute_ordinal;
    qd.index = 0;
    qd.mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS;
    qd.priority = ZE_COMMAND_QUEUE_PRIORITY_NORMAL;
    if (ze_result_t r = ze().zeCommandListCreateImmediate(d.context(), d.handle, &qd, &q->list))
      return ze_fail("zeCommandListCreateImmediate", r);
    Backend& b = backend();
    b.queues.add(q.get());
    *out_queue = reinterpret_cast<axl_pqueue>(q.release());
    return AXL_SUCCESS;
  });
}

axl_status queue_synchronize(axl_pqueue queue) noexcept {
  return guarded("queue_synchronize", [&]() -> axl_status {
    Queue& q = *from(queue);
    if (q.host && q.host->on_worker_thread())
      return fail(AXL_ERROR_INVALID_STATE,
                  "queue_synchronize called from a host callback of the same queue");
    common::Ref<Signal> done;
    if (axl_status s = Signal::create(*q.device, false, &done)) return s;
    {
      std::lock_guard<std::mutex> lk(q.mu);
      if (ze_result_t r = ze().zeCommandListAppendBarrier(q.list, done->event, 0, nullptr))
        return ze_fail("zeCommandListAppendBarrier", r);
      q.need_barrier = false;
      Pending p;
      p.signal = done;
      p.marker = true;
      q.pending.push_back(std::move(p));
    }
    // Device errors (a hang, a lost device) surface here: Level Zero has no
    // per-command status.
    if (ze_result_t r = ze().zeEventHostSynchronize(done->event, UINT64_MAX))
      return ze_fail("zeEventHostSynchronize", r, "while synchronizing a queue");
    axl_status s = AXL_SUCCESS;
    if (q.host) {
      common::SyncResult hr = q.host->synchronize();
      if (hr.status != AXL_SUCCESS) s = fail(hr.status, hr.message);
    }
    std::lock_guard<std::mutex> lk(q.mu);
    trim(q);
    return s;
  });
}

axl_status queue_destroy(axl_pqueue queue) noexcept {
  return guarded("queue_destroy", [&]() -> axl_status {
    Queue* q = from(queue);
    axl_status s = queue_synchronize(queue);
    if (q->host) q->host->stop();
    backend().queues.remove(q);
    ze().zeCommandListDestroy(q->list);
    delete q;
    return s;
  });
}

axl_status queue_copy_htod(axl_pqueue queue, axl_devaddr dst, const void* src,
                           uint64_t bytes) noexcept {
  return guarded("queue_copy_htod", [&]() -> axl_status {
    return copy(*from(queue), ptr(dst), src, bytes, AXL_MEMCPY_HTOD);
  });
}

axl_status queue_copy_dtoh(axl_pqueue queue, void* dst, axl_devaddr src, uint64_t bytes) noexcept {
  return guarded("queue_copy_dtoh", [&]() -> axl_status {
    return copy(*from(queue), dst, ptr(src), bytes, AXL_MEMCPY_DTOH);
  });
}

axl_status queue_copy_dtod(axl_pqueue queue, axl_devaddr dst, axl_devaddr src,
                           uint64_t bytes) noexcept {
  return guarded("queue_copy_dtod", [&]() -> axl_status {
    return copy(*from(queue), ptr(dst), ptr(src), bytes, AXL_MEMCPY_DTOD);
  });
}

axl_status queue_copy_peer(axl_pqueue queue, axl_pdevice dst_device, axl_devaddr dst,
                           axl_pdevice src_device, axl_devaddr src, uint64_t bytes) noexcept {
  return guarded("queue_copy_peer", [&]() -> axl_status {
    Queue& q = *from(queue);
    if (from(dst_device)->driver != q.device->driver || from(src_device)->driver != q.device->driver)
      return fail(AXL_ERROR_UNSUPPORTED,
                  "queue_copy_peer: the devices belong to different Level Zero drivers, whose "
                  "contexts cannot share memory");
    return copy(q, ptr(dst), ptr(src), bytes, AXL_MEMCPY_DTOD);
  });
}

axl_status queue_fill(axl_pqueue queue, axl_devaddr dst, uint64_t bytes, uint32_t pattern,
                      uint32_t pattern_size) noexcept {
  return guarded("queue_fill", [&]() -> axl_status {
    Queue& q = *from(queue);
    if (pattern_size != 1 && pattern_size != 2 && pattern_size != 4)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("queue_fill: pattern_size ", pattern_size, "; expected 1, 2 or 4"));
    if (bytes == 0 || bytes % pattern_size != 0)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("queue_fill: bytes ", bytes, " is not a positive multiple of ",
                              "pattern_size ", pattern_size));
    // The specification does not say the pattern is copied at append time,
    // so it lives with the queue until the fill is known to be done.
    auto stored = std::make_unique<uint64_t>(pattern);
    {
      std::lock_guard<std::mutex> lk(q.mu);
      if (axl_status s = append_work(q, kTraceFill, [&] {
            return ze().zeCommandListAppendMemoryFill(q.list, ptr(dst), stored.get(), pattern_size,
                                                      bytes, nullptr, 0, nullptr);
          }))
        return s;
      Pending p;
      p.pattern = std::move(stored);
      q.pending.push_back(std::move(p));
    }
    if (backend().tracer.enabled())
      backend().tracer.memset(q.trace_id, kTraceFill, bytes, pattern, pattern_size);
    return AXL_SUCCESS;
  });
}

axl_status queue_enqueue_host_fn(axl_pqueue queue, axl_host_fn fn, void* user_data) noexcept {
  return guarded("queue_enqueue_host_fn", [&]() -> axl_status {
    if (fn == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "queue_enqueue_host_fn: fn is NULL");
    Queue& q = *from(queue);
    // Level Zero has no host function in a command list. The device signals
    // `reached` once earlier work is done, the queue's host thread runs the
    // callback and then signals `resume`, which later device work waits on.
    common::Ref<Signal> reached, resume;
    if (axl_status s = Signal::create(*q.device, false, &reached)) return s;
    if (axl_status s = Signal::create(*q.device, false, &resume)) return s;
    std::lock_guard<std::mutex> lk(q.mu);
    if (ze_result_t r = ze().zeCommandListAppendBarrier(q.list, reached->event, 0, nullptr))
      return ze_fail("zeCommandListAppendBarrier", r, "for a host callback");
    q.need_barrier = false;
    if (ze_result_t r = ze().zeCommandListAppendWaitOnEvents(q.list, 1, &resume->event)) {
      return ze_fail("zeCommandListAppendWaitOnEvents", r, "for a host callback");
    }
    axl_status s = host_queue(q).enqueue(
        common::OpInfo{common::OpKind::kHostFn, 0},
        [reached, resume, fn, user_data](std::string& message) -> axl_status {
          ze_result_t r = ze().zeEventHostSynchronize(reached->event, UINT64_MAX);
          if (r == ZE_RESULT_SUCCESS) fn(user_data);
          // Signalled even on failure, so the device does not wait forever.
          ze().zeEventHostSignal(resume->event);
          if (r == ZE_RESULT_SUCCESS) return AXL_SUCCESS;
          message = common::str("host callback skipped: zeEventHostSynchronize failed: ",
                                result_name(r));
          return status_of(r);
        });
    if (s != AXL_SUCCESS) {
      ze().zeEventHostSignal(resume->event);  // the device must not wait for it
      return fail(s, common::str("queue_enqueue_host_fn: ", common::WorkQueue::refusal_message()));
    }
    Pending a, b;
    a.signal = reached;
    a.marker = true;
    b.signal = resume;
    q.pending.push_back(std::move(a));
    q.pending.push_back(std::move(b));
    return AXL_SUCCESS;
  });
}

axl_status queue_get_native_handle(axl_pqueue queue, uint64_t* out_handle) noexcept {
  return guarded("queue_get_native_handle", [&]() -> axl_status {
    if (out_handle == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "queue_get_native_handle: out_handle is NULL");
    // The ze_command_list_handle_t of the immediate command list.
    *out_handle = reinterpret_cast<uint64_t>(from(queue)->list);
    return AXL_SUCCESS;
  });
}

}  // namespace axl::l0
