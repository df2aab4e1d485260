// Queues: one in-order cl_command_queue with profiling per axl queue;
// copies (clEnqueueWrite/Read/CopyBuffer), fills (clEnqueueFillBuffer) and
// host callbacks (the queue's host thread waits for a marker, runs the
// callback and releases a user event that the queue's later work waits
// behind).
#include <memory>
#include <new>

#include "axl/common/slot_checks.hpp"
#include "cl_backend.hpp"

namespace axl::opencl {

namespace {

// OpenCL may hold enqueued commands until a flush; the ABI's queues run
// work as soon as it is enqueued (another queue or the host may wait on it),
// so every enqueue is flushed.
axl_status submitted(Queue& q, const char* call, cl_int r, const std::string& context = "") {
  if (r != CL_SUCCESS) return cl_fail(call, r, context);
  if ((r = cl().clFlush(q.queue)) != CL_SUCCESS) return cl_fail("clFlush", r);
  return AXL_SUCCESS;
}

}  // namespace

common::WorkQueue& host_queue(Queue& q) {
  std::lock_guard<std::mutex> lk(q.host_mu);
  if (!q.host) {
    common::WorkQueue::Options o;
    o.thread_name = "axl-cl-host";
    q.host = std::make_unique<common::WorkQueue>(o);
  }
  return *q.host;
}


axl_status queue_create(axl_pdevice device, const axl_queue_desc* desc, axl_pqueue* out_queue) noexcept {
  return guarded("queue_create", [&]() -> axl_status {
    if (axl_status s = common::check_queue_create(fail, desc, out_queue)) return s;
    Device& d = *from(device);
    cl_int r = CL_SUCCESS;
    // Profiling is always on: an event's timing is decided when it is
    // created, not when the queue is (the ABI's events are the queue's
    // markers), and on PoCL it costs a timestamp read per command.
    cl_command_queue cq = cl().clCreateCommandQueue(d.context(), d.id, CL_QUEUE_PROFILING_ENABLE, &r);
    if (r != CL_SUCCESS || cq == nullptr) return cl_fail("clCreateCommandQueue", r);
    auto* q = new Queue;
    q->device = &d;
    q->trace_id = desc->trace_id;
    q->queue = cq;
    backend().queues.add(q);
    *out_queue = common::to_handle<axl_pqueue>(q);
    return AXL_SUCCESS;
  });
}

axl_status queue_synchronize(axl_pqueue queue) noexcept {
  return guarded("queue_synchronize", [&]() -> axl_status {
    Queue& q = *from(queue);
    common::WorkQueue* host = nullptr;
    {
      std::lock_guard<std::mutex> lk(q.host_mu);
      host = q.host.get();
    }
    if (host != nullptr && host->on_worker_thread())
      return fail(AXL_ERROR_INVALID_STATE, "queue_synchronize called from a host callback of the same queue");
    // The gates of host callbacks are in the queue, so clFinish also waits
    // for the callbacks; their failures are the host thread's to report.
    if (cl_int r = cl().clFinish(q.queue)) return cl_fail("clFinish", r);
    if (host != nullptr) {
      const common::SyncResult hr = host->synchronize();
      if (hr.status != AXL_SUCCESS) return fail(hr.status, hr.message);
    }
    return AXL_SUCCESS;
  });
}

axl_status queue_destroy(axl_pqueue queue) noexcept {
  return guarded("queue_destroy", [&]() -> axl_status {
    Queue* q = from(queue);
    const axl_status s = queue_synchronize(queue);
    if (s == AXL_ERROR_INVALID_STATE && q->host && q->host->on_worker_thread()) return s;
    if (q->host) q->host->stop();
    cl().clReleaseCommandQueue(q->queue);
    backend().queues.remove(q);
    delete q;
    return s;
  });
}

axl_status queue_copy_htod(axl_pqueue queue, axl_devaddr dst, const void* src, uint64_t bytes) noexcept {
  return guarded("queue_copy_htod", [&]() -> axl_status {
    Queue& q = *from(queue);
    Located at;
    if (axl_status s = q.device->locate(dst, bytes, "queue_copy_htod", &at)) return s;
    Backend& b = backend();
    if (b.tracer.enabled()) b.tracer.memcpy(q.trace_id, AXL_MEMCPY_HTOD, "clEnqueueWriteBuffer", bytes);
    return submitted(q, "clEnqueueWriteBuffer",
                     b.cl.clEnqueueWriteBuffer(q.queue, at.mem, CL_FALSE, at.offset, bytes, src, 0,
                                               nullptr, nullptr));
  });
}

axl_status queue_copy_dtoh(axl_pqueue queue, void* dst, axl_devaddr src, uint64_t bytes) noexcept {
  return guarded("queue_copy_dtoh", [&]() -> axl_status {
    Queue& q = *from(queue);
    Located at;
    if (axl_status s = q.device->locate(src, bytes, "queue_copy_dtoh", &at)) return s;
    Backend& b = backend();
    if (b.tracer.enabled()) b.tracer.memcpy(q.trace_id, AXL_MEMCPY_DTOH, "clEnqueueReadBuffer", bytes);
    return submitted(q, "clEnqueueReadBuffer",
                     b.cl.clEnqueueReadBuffer(q.queue, at.mem, CL_FALSE, at.offset, bytes, dst, 0,
                                              nullptr, nullptr));
  });
}

axl_status queue_copy_dtod(axl_pqueue queue, axl_devaddr dst, axl_devaddr src, uint64_t bytes) noexcept {
  return guarded("queue_copy_dtod", [&]() -> axl_status {
    Queue& q = *from(queue);
    Located to, at;
    if (axl_status s = q.device->locate(dst, bytes, "queue_copy_dtod (destination)", &to)) return s;
    if (axl_status s = q.device->locate(src, bytes, "queue_copy_dtod (source)", &at)) return s;
    Backend& b = backend();
    if (b.tracer.enabled()) b.tracer.memcpy(q.trace_id, AXL_MEMCPY_DTOD, "clEnqueueCopyBuffer", bytes);
    // OpenCL refuses overlapping ranges of one buffer (CL_MEM_COPY_OVERLAP);
    // the ABI, like cuMemcpyDtoD, leaves an overlapping copy undefined, so
    // that error is passed on as it is.
    return submitted(q, "clEnqueueCopyBuffer",
                     b.cl.clEnqueueCopyBuffer(q.queue, at.mem, to.mem, at.offset, to.offset, bytes,
                                              0, nullptr, nullptr));
  });
}

axl_status queue_fill(axl_pqueue queue, axl_devaddr dst, uint64_t bytes, uint32_t pattern,
                      uint32_t pattern_size) noexcept {
  return guarded("queue_fill", [&]() -> axl_status {
    Queue& q = *from(queue);
    Located at;
    if (axl_status s = q.device->locate(dst, bytes, "queue_fill", &at)) return s;
    Backend& b = backend();
    if (b.tracer.enabled()) b.tracer.memset(q.trace_id, "clEnqueueFillBuffer", bytes, pattern, pattern_size);
    // The pattern is copied by the call (OpenCL 1.2, 5.2.2): no storage to keep.
    // Little-endian hosts: the low pattern_size bytes are the first ones.
    return submitted(q, "clEnqueueFillBuffer",
                     b.cl.clEnqueueFillBuffer(q.queue, at.mem, &pattern, pattern_size, at.offset,
                                              bytes, 0, nullptr, nullptr));
  });
}

axl_status queue_enqueue_host_fn(axl_pqueue queue, axl_host_fn fn, void* user_data) noexcept {
  return guarded("queue_enqueue_host_fn", [&]() -> axl_status {
    if (fn == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "queue_enqueue_host_fn: fn is NULL");
    return host_step(*from(queue), "queue_enqueue_host_fn", [fn, user_data] { fn(user_data); });
  });
}

axl_status queue_get_native_handle(axl_pqueue queue, uint64_t* out_handle) noexcept {
  return guarded("queue_get_native_handle", [&]() -> axl_status {
    return common::give(fail, "queue_get_native_handle", out_handle,
                        reinterpret_cast<uint64_t>(from(queue)->queue));
  });
}

}  // namespace axl::opencl
