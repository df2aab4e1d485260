// Queues are non-blocking streams; copies, fills, event and flag operations
// and host callbacks are the matching asynchronous driver calls, each
// reported to the launch trace under the driver API's name.
#include "cuda_backend.hpp"

namespace axl::cuda {

axl_status queue_create(axl_pdevice device, const axl_queue_desc* desc, axl_pqueue* out_queue) noexcept {
  return guarded("queue_create", [&]() -> axl_status {
    if (desc == nullptr || out_queue == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "queue_create: desc or out_queue is NULL");
    if (desc->flags != AXL_QUEUE_FLAG_NONE)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("queue_create: unknown flags 0x", std::hex, desc->flags));
    Device& d = *from(device);
    if (axl_status s = make_current(d)) return s;
    auto q = std::make_unique<Queue>();
    q->device = &d;
    q->trace_id = desc->trace_id;
    // Non-blocking: no implicit synchronisation with the legacy default
    // stream, which other libraries in the process may use.
    if (axl_status s = check(api().cuStreamCreate(&q->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate"))
      return s;
    Backend& b = backend();
    {
      std::lock_guard<std::mutex> lk(b.queues_mu);
      b.queues.insert(q.get());
    }
    *out_queue = reinterpret_cast<axl_pqueue>(q.release());
    return AXL_SUCCESS;
  });
}

axl_status queue_destroy(axl_pqueue queue) noexcept {
  return guarded("queue_destroy", [&]() -> axl_status {
    Queue* q = from(queue);
    Backend& b = backend();
    {
      std::lock_guard<std::mutex> lk(b.queues_mu);
      if (b.queues.erase(q) == 0) return AXL_SUCCESS;  // stopped by backend_shutdown
    }
    std::unique_ptr<Queue> owned(q);
    if (axl_status s = make_current(*q->device)) return s;
    const CUresult sync = api().cuStreamSynchronize(q->stream);
    const CUresult destroy = api().cuStreamDestroy(q->stream);
    b.graveyard.sweep();
    if (sync != CUDA_SUCCESS) return fail_cu(sync, "cuStreamSynchronize", "draining a queue before destroying it");
    return check(destroy, "cuStreamDestroy");
  });
}

axl_status queue_synchronize(axl_pqueue queue) noexcept {
  return guarded("queue_synchronize", [&]() -> axl_status {
    Queue& q = *from(queue);
    if (axl_status s = make_current(*q.device)) return s;
    const axl_status s = check(api().cuStreamSynchronize(q.stream), "cuStreamSynchronize");
    backend().graveyard.sweep();
    return s;
  });
}

axl_status queue_copy_htod(axl_pqueue queue, axl_devaddr dst, const void* src, uint64_t bytes) noexcept {
  return guarded("queue_copy_htod", [&]() -> axl_status {
    Queue& q = *from(queue);
    if (axl_status s = make_current(*q.device)) return s;
    if (axl_status s = check(api().cuMemcpyHtoDAsync(dst, src, bytes, q.stream), "cuMemcpyHtoDAsync"))
      return s;
    Backend& b = backend();
    if (b.tracer.enabled()) b.tracer.memcpy(q.trace_id, AXL_MEMCPY_HTOD, "cuMemcpyHtoDAsync", bytes);
    return AXL_SUCCESS;
  });
}

axl_status queue_copy_dtoh(axl_pqueue queue, void* dst, axl_devaddr src, uint64_t bytes) noexcept {
  return guarded("queue_copy_dtoh", [&]() -> axl_status {
    Queue& q = *from(queue);
    if (axl_status s = make_current(*q.device)) return s;
    if (axl_status s = check(api().cuMemcpyDtoHAsync(dst, src, bytes, q.stream), "cuMemcpyDtoHAsync"))
      return s;
    Backend& b = backend();
    if (b.tracer.enabled()) b.tracer.memcpy(q.trace_id, AXL_MEMCPY_DTOH, "cuMemcpyDtoHAsync", bytes);
    return AXL_SUCCESS;
  });
}

axl_status queue_copy_dtod(axl_pqueue queue, axl_devaddr dst, axl_devaddr src, uint64_t bytes) noexcept {
  return guarded("queue_copy_dtod", [&]() -> axl_status {
    Queue& q = *from(queue);
    if (axl_status s = make_current(*q.device)) return s;
    if (axl_status s = check(api().cuMemcpyDtoDAsync(dst, src, bytes, q.stream), "cuMemcpyDtoDAsync"))
      return s;
    Backend& b = backend();
    if (b.tracer.enabled()) b.tracer.memcpy(q.trace_id, AXL_MEMCPY_DTOD, "cuMemcpyDtoDAsync", bytes);
    return AXL_SUCCESS;
  });
}

axl_status queue_copy_peer(axl_pqueue queue, axl_pdevice dst_device, axl_devaddr dst,
                           axl_pdevice src_device, axl_devaddr src, uint64_t bytes) noexcept {
  return guarded("queue_copy_peer", [&]() -> axl_status {
    Queue& q = *from(queue);
    if (axl_status s = make_current(*q.device)) return s;
    Device& dd = *from(dst_device);
    Device& sd = *from(src_device);
    if (axl_status s = check(api().cuMemcpyPeerAsync(dst, dd.ctx, src, sd.ctx, bytes, q.stream),
                             "cuMemcpyPeerAsync",
                             common::str("device ", sd.index, " -> device ", dd.index)))
      return s;
    Backend& b = backend();
    if (b.tracer.enabled()) b.tracer.memcpy(q.trace_id, AXL_MEMCPY_DTOD, "cuMemcpyPeerAsync", bytes);
    return AXL_SUCCESS;
  });
}

axl_status queue_fill(axl_pqueue queue, axl_devaddr dst, uint64_t bytes, uint32_t pattern,
                      uint32_t pattern_size) noexcept {
  return guarded("queue_fill", [&]() -> axl_status {
    Queue& q = *from(queue);
    if (axl_status s = make_current(*q.device)) return s;
    if ((pattern_size != 1 && pattern_size != 2 && pattern_size != 4) || bytes % pattern_size != 0)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("queue_fill: pattern_size ", pattern_size, " with ", bytes,
                              " bytes; expected 1, 2 or 4 dividing the byte count"));
    const DriverApi& a = api();
    const char* call = nullptr;
    CUresult r = CUDA_SUCCESS;
    const uint64_t n = bytes / pattern_size;
    switch (pattern_size) {
      case 1:
        call = "cuMemsetD8Async";
        r = a.cuMemsetD8Async(dst, static_cast<unsigned char>(pattern), n, q.stream);
        break;
      case 2:
        call = "cuMemsetD16Async";
        r = a.cuMemsetD16Async(dst, static_cast<unsigned short>(pattern), n, q.stream);
        break;
      default:
        call = "cuMemsetD32Async";
        r = a.cuMemsetD32Async(dst, pattern, n, q.stream);
        break;
    }
    if (axl_status s = check(r, call)) return s;
    Backend& b = backend();
    if (b.tracer.enabled()) b.tracer.memset(q.trace_id, call, bytes, pattern, pattern_size);
    return AXL_SUCCESS;
  });
}

axl_status queue_record_event(axl_pqueue queue, axl_pevent event) noexcept {
  return guarded("queue_record_event", [&]() -> axl_status {
    Queue& q = *from(queue);
    if (axl_status s = make_current(*q.device)) return s;
    return check(api().cuEventRecord(from(event)->event, q.stream), "cuEventRecord");
  });
}

axl_status queue_wait_event(axl_pqueue queue, axl_pevent event) noexcept {
  return guarded("queue_wait_event", [&]() -> axl_status {
    Queue& q = *from(queue);
    if (axl_status s = make_current(*q.device)) return s;
    return check(api().cuStreamWaitEvent(q.stream, from(event)->event, 0),
                 "cuStreamWaitEvent");
  });
}

namespace {

axl_status require_mem_ops(const Queue& q, const char* call) {
  if (q.device->stream_mem_ops) return AXL_SUCCESS;
  return fail(AXL_ERROR_UNSUPPORTED,
              common::str(call, " is not available on CUDA device ", q.device->index, " (",
                          q.device->props.model_name,
                          "): the driver or device lacks 64-bit stream memory operations, "
                          "which completion flags need"));
}

}  // namespace

axl_status queue_wait_flag(axl_pqueue queue, axl_pflag flag, uint64_t value) noexcept {
  return guarded("queue_wait_flag", [&]() -> axl_status {
    Queue& q = *from(queue);
    if (axl_status s = make_current(*q.device)) return s;
    if (axl_status s = require_mem_ops(q, "cuStreamWaitValue64")) return s;
    // GEQ: the flag's contract is "value >= v" (plugin.h).
    return check(api().cuStreamWaitValue64(q.stream, from(flag)->address, value, CU_STREAM_WAIT_VALUE_GEQ),
                 "cuStreamWaitValue64");
  });
}

axl_status queue_write_flag(axl_pqueue queue, axl_pflag flag, uint64_t value) noexcept {
  return guarded("queue_write_flag", [&]() -> axl_status {
    Queue& q = *from(queue);
    if (axl_status s = make_current(*q.device)) return s;
    if (axl_status s = require_mem_ops(q, "cuStreamWriteValue64")) return s;
    return check(api().cuStreamWriteValue64(q.stream, from(flag)->address, value, CU_STREAM_WRITE_VALUE_DEFAULT),
                 "cuStreamWriteValue64");
  });
}

axl_status queue_enqueue_host_fn(axl_pqueue queue, axl_host_fn fn, void* user_data) noexcept {
  return guarded("queue_enqueue_host_fn", [&]() -> axl_status {
    if (fn == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "queue_enqueue_host_fn: fn is NULL");
    // axl_host_fn and CUhostFn have the same signature, void(void*).
    Queue& q = *from(queue);
    if (axl_status s = make_current(*q.device)) return s;
    return check(api().cuLaunchHostFunc(q.stream, fn, user_data), "cuLaunchHostFunc");
  });
}

axl_status queue_get_native_handle(axl_pqueue queue, uint64_t* out_handle) noexcept {
  return guarded("queue_get_native_handle", [&]() -> axl_status {
    if (out_handle == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "queue_get_native_handle: out_handle is NULL");
    // The CUstream itself, as DLPack's __dlpack__(stream=...) exchanges it.
    *out_handle = reinterpret_cast<uint64_t>(from(queue)->stream);
    return AXL_SUCCESS;
  });
}

}  // namespace axl::cuda
