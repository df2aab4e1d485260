// The queue_* slots of DriverPlugin<D>: streams, copies, fills, event and flag waits, host callbacks and launches.
// Part of driver_plugin_slots.hpp, which includes every part; included by
// exactly one translation unit of each driver-API plugin (its plugin.cpp).
#pragma once

#include <algorithm>
#include <cstring>

#include "axl/common/driver_plugin.hpp"
#include "axl/common/slot_checks.hpp"

namespace axl::common {

// ---- queues -----------------------------------------------------------------

template <class D>
axl_status DriverPlugin<D>::queue_create(axl_pdevice device, const axl_queue_desc* desc,
                                         axl_pqueue* out_queue) noexcept {
  return guarded("queue_create", [&]() -> axl_status {
    if (axl_status s = check_queue_create(fail, desc, out_queue)) return s;
    // desc->max_pending (1.2) is accepted and left to the driver, which
    // blocks the host once a stream holds about 1024 pending launches.
    Device& d = *from(device);
    if (axl_status s = make_current(d)) return s;
    auto q = std::make_unique<Queue>();
    q->device = &d;
    q->trace_id = desc->trace_id;
    // Non-blocking: no implicit synchronisation with the legacy default
    // stream, which other libraries in the process may use.
    if (axl_status s = check(api().stream_create(&q->stream, D::kStreamNonBlocking), D::names.stream_create))
      return s;
    State& b = state();
    {
      std::lock_guard<std::mutex> lk(b.queues_mu);
      b.queues.insert(q.get());
    }
    *out_queue = reinterpret_cast<axl_pqueue>(q.release());
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::queue_destroy(axl_pqueue queue) noexcept {
  return guarded("queue_destroy", [&]() -> axl_status {
    Queue* q = from(queue);
    State& b = state();
    {
      std::lock_guard<std::mutex> lk(b.queues_mu);
      if (b.queues.erase(q) == 0) return AXL_SUCCESS;  // stopped by backend_shutdown
    }
    std::unique_ptr<Queue> owned(q);
    if (axl_status s = make_current(*q->device)) return s;
    const Result sync = api().stream_synchronize(q->stream);
    const Result destroy = api().stream_destroy(q->stream);
    b.graveyard.sweep();
    if (sync != D::kSuccess)
      return fail_driver(sync, D::names.stream_synchronize, "draining a queue before destroying it");
    return check(destroy, D::names.stream_destroy);
  });
}

template <class D>
axl_status DriverPlugin<D>::queue_synchronize(axl_pqueue queue) noexcept {
  return guarded("queue_synchronize", [&]() -> axl_status {
    Queue& q = *from(queue);
    if (axl_status s = make_current(*q.device)) return s;
    const axl_status s = check(api().stream_synchronize(q.stream), D::names.stream_synchronize);
    state().graveyard.sweep();
    return s;
  });
}

template <class D>
axl_status DriverPlugin<D>::queue_copy_htod(axl_pqueue queue, axl_devaddr dst, const void* src,
                                            uint64_t bytes) noexcept {
  return guarded("queue_copy_htod", [&]() -> axl_status {
    Queue& q = *from(queue);
    if (axl_status s = make_current(*q.device)) return s;
    // HIP's prototype takes a non-const source; neither driver writes it.
    if (axl_status s = check(api().copy_htod(D::ptr(dst), const_cast<void*>(src), bytes, q.stream),
                             D::names.copy_htod))
      return s;
    State& b = state();
    if (b.tracer.enabled()) b.tracer.memcpy(q.trace_id, AXL_MEMCPY_HTOD, D::names.copy_htod, bytes);
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::queue_copy_dtoh(axl_pqueue queue, void* dst, axl_devaddr src, uint64_t bytes) noexcept {
  return guarded("queue_copy_dtoh", [&]() -> axl_status {
    Queue& q = *from(queue);
    if (axl_status s = make_current(*q.device)) return s;
    if (axl_status s = check(api().copy_dtoh(dst, D::ptr(src), bytes, q.stream), D::names.copy_dtoh))
      return s;
    State& b = state();
    if (b.tracer.enabled()) b.tracer.memcpy(q.trace_id, AXL_MEMCPY_DTOH, D::names.copy_dtoh, bytes);
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::queue_copy_dtod(axl_pqueue queue, axl_devaddr dst, axl_devaddr src,
                                            uint64_t bytes) noexcept {
  return guarded("queue_copy_dtod", [&]() -> axl_status {
    Queue& q = *from(queue);
    if (axl_status s = make_current(*q.device)) return s;
    if (axl_status s = check(api().copy_dtod(D::ptr(dst), D::ptr(src), bytes, q.stream), D::names.copy_dtod))
      return s;
    State& b = state();
    if (b.tracer.enabled()) b.tracer.memcpy(q.trace_id, AXL_MEMCPY_DTOD, D::names.copy_dtod, bytes);
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::queue_copy_peer(axl_pqueue queue, axl_pdevice dst_device, axl_devaddr dst,
                                            axl_pdevice src_device, axl_devaddr src, uint64_t bytes) noexcept {
  return guarded("queue_copy_peer", [&]() -> axl_status {
    Queue& q = *from(queue);
    if (axl_status s = make_current(*q.device)) return s;
    Device& dd = *from(dst_device);
    Device& sd = *from(src_device);
    if (axl_status s = check(api().copy_peer(D::ptr(dst), dd.ctx, D::ptr(src), sd.ctx, bytes, q.stream),
                             D::names.copy_peer, str("device ", sd.index, " -> device ", dd.index)))
      return s;
    State& b = state();
    if (b.tracer.enabled()) b.tracer.memcpy(q.trace_id, AXL_MEMCPY_DTOD, D::names.copy_peer, bytes);
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::queue_fill(axl_pqueue queue, axl_devaddr dst, uint64_t bytes, uint32_t pattern,
                                       uint32_t pattern_size) noexcept {
  return guarded("queue_fill", [&]() -> axl_status {
    Queue& q = *from(queue);
    if (axl_status s = make_current(*q.device)) return s;
    if ((pattern_size != 1 && pattern_size != 2 && pattern_size != 4) || bytes % pattern_size != 0)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  str("queue_fill: pattern_size ", pattern_size, " with ", bytes,
                      " bytes; expected 1, 2 or 4 dividing the byte count"));
    const Api& a = api();
    const char* call = nullptr;
    Result r = D::kSuccess;
    const uint64_t n = bytes / pattern_size;
    switch (pattern_size) {
      case 1:
        call = D::names.memset_d8;
        r = a.memset_d8(D::ptr(dst), static_cast<unsigned char>(pattern), n, q.stream);
        break;
      case 2:
        call = D::names.memset_d16;
        r = a.memset_d16(D::ptr(dst), static_cast<unsigned short>(pattern), n, q.stream);
        break;
      default:
        call = D::names.memset_d32;
        r = a.memset_d32(D::ptr(dst), D::d32_pattern(pattern), n, q.stream);
        break;
    }
    if (axl_status s = check(r, call)) return s;
    State& b = state();
    if (b.tracer.enabled()) b.tracer.memset(q.trace_id, call, bytes, pattern, pattern_size);
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::queue_record_event(axl_pqueue queue, axl_pevent event) noexcept {
  return guarded("queue_record_event", [&]() -> axl_status {
    Queue& q = *from(queue);
    if (axl_status s = make_current(*q.device)) return s;
    return check(api().event_record(from(event)->event, q.stream), D::names.event_record);
  });
}

template <class D>
axl_status DriverPlugin<D>::queue_wait_event(axl_pqueue queue, axl_pevent event) noexcept {
  return guarded("queue_wait_event", [&]() -> axl_status {
    Queue& q = *from(queue);
    if (axl_status s = make_current(*q.device)) return s;
    return check(api().stream_wait_event(q.stream, from(event)->event, 0), D::names.stream_wait_event);
  });
}

template <class D>
axl_status DriverPlugin<D>::require_mem_ops(const Queue& q, const char* call) {
  if (q.device->stream_mem_ops) return AXL_SUCCESS;
  return fail(AXL_ERROR_UNSUPPORTED,
              str(call, " is not available on ", D::text.vendor, " device ", q.device->index, " (",
                  q.device->props.model_name,
                  "): the driver or device lacks 64-bit stream memory operations, "
                  "which completion flags need"));
}

template <class D>
axl_status DriverPlugin<D>::queue_wait_flag(axl_pqueue queue, axl_pflag flag, uint64_t value) noexcept {
  return guarded("queue_wait_flag", [&]() -> axl_status {
    Queue& q = *from(queue);
    if (axl_status s = make_current(*q.device)) return s;
    if (axl_status s = require_mem_ops(q, D::names.stream_wait_value64)) return s;
    // ">=": the flag's contract is "value >= v" (plugin.h).
    return check(D::wait_geq(api(), q.stream, from(flag)->address, value), D::names.stream_wait_value64);
  });
}

template <class D>
axl_status DriverPlugin<D>::queue_write_flag(axl_pqueue queue, axl_pflag flag, uint64_t value) noexcept {
  return guarded("queue_write_flag", [&]() -> axl_status {
    Queue& q = *from(queue);
    if (axl_status s = make_current(*q.device)) return s;
    if (axl_status s = require_mem_ops(q, D::names.stream_write_value64)) return s;
    return check(api().stream_write_value64(q.stream, from(flag)->address, value, D::kWriteValueDefault),
                 D::names.stream_write_value64);
  });
}

template <class D>
axl_status DriverPlugin<D>::queue_enqueue_host_fn(axl_pqueue queue, axl_host_fn fn, void* user_data) noexcept {
  return guarded("queue_enqueue_host_fn", [&]() -> axl_status {
    if (fn == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "queue_enqueue_host_fn: fn is NULL");
    Queue& q = *from(queue);
    if (axl_status s = make_current(*q.device)) return s;
    const char* call = nullptr;
    const Result r = D::host_fn(api(), q.stream, fn, user_data, &call);
    return check(r, call);
  });
}

template <class D>
axl_status DriverPlugin<D>::queue_get_native_handle(axl_pqueue queue, uint64_t* out_handle) noexcept {
  return guarded("queue_get_native_handle", [&]() -> axl_status {
    if (out_handle == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "queue_get_native_handle: out_handle is NULL");
    // The stream itself, as DLPack's __dlpack__(stream=...) exchanges it.
    *out_handle = reinterpret_cast<uint64_t>(from(queue)->stream);
    return AXL_SUCCESS;
  });
}

// Launches asking for more dynamic shared memory than a kernel gets by
// default (CUDA: 48 KiB) must opt in first, per kernel; the request is
// checked against the device's opt-in limit so the error says what the
// limit is, not just that the launch failed.
template <class D>
axl_status DriverPlugin<D>::allow_shared(const Device& d, Kernel& k, uint64_t bytes) {
  // 0: the device did not say; the driver's own check then decides.
  const uint64_t limit = d.max_dynamic_shared != 0 ? d.max_dynamic_shared : uint64_t{INT32_MAX};
  if (bytes > limit)
    return fail(AXL_ERROR_INVALID_ARGUMENT,
                str("launch of '", k.name, "' asks for ", bytes, " bytes of dynamic shared memory; ",
                    D::text.vendor, " device ", d.index, " (", d.props.model_name, ") allows at most ", limit,
                    " per block (", D::text.shared_limit, ")"));
  if (bytes <= D::kSharedWithoutOptIn || bytes <= k.shared_allowed.load(std::memory_order_acquire))
    return AXL_SUCCESS;
  std::lock_guard<std::mutex> lk(k.shared_mu);
  if (bytes <= k.shared_allowed.load(std::memory_order_relaxed)) return AXL_SUCCESS;
  const char* call = nullptr;
  if (axl_status s = check(D::allow_dynamic_shared(api(), k.fn, static_cast<int>(bytes), &call), call,
                           str("kernel '", k.name, "', ", bytes, " bytes of dynamic shared memory")))
    return s;
  k.shared_allowed.store(static_cast<uint32_t>(bytes), std::memory_order_release);
  return AXL_SUCCESS;
}

template <class D>
axl_status DriverPlugin<D>::queue_launch(axl_pqueue queue, axl_pkernel kernel, const axl_launch_config* config,
                                         const axl_kernel_arg* args, uint32_t num_args) noexcept {
  return guarded("queue_launch", [&]() -> axl_status {
    Queue& q = *from(queue);
    Kernel& k = *from(kernel);
    if (config == nullptr || config->struct_size < sizeof(axl_launch_config))
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  str("launch of '", k.name, "': config is NULL or its struct_size is too small"));
    const std::string bad =
        check_launch_args(k.name.c_str(), k.params, k.param_count, args, num_args, D::kArgLimits);
    if (!bad.empty()) return fail(AXL_ERROR_INVALID_ARGUMENT, bad);
    if (axl_status s = make_current(*q.device)) return s;
    if (axl_status s = allow_shared(*q.device, k, config->shared_mem_bytes)) return s;
    // The arguments' own addresses as kernelParams: no copy.
    ArgPointers params(args, num_args);
    const Result r = api().launch_kernel(k.fn, config->grid[0], config->grid[1], config->grid[2],
                                         config->block[0], config->block[1], config->block[2],
                                         static_cast<unsigned>(config->shared_mem_bytes), q.stream,
                                         params.data(), nullptr);
    if (r != D::kSuccess)
      return fail_driver(r, D::names.launch_kernel,
                         str("kernel '", k.name, "', grid ", config->grid[0], "x", config->grid[1], "x",
                             config->grid[2], ", block ", config->block[0], "x", config->block[1], "x",
                             config->block[2], ", ", config->shared_mem_bytes, " bytes shared memory"));
    State& b = state();
    if (b.tracer.enabled())
      b.tracer.launch(q.trace_id, k.name.c_str(), config->grid, config->block, config->shared_mem_bytes,
                      Tracer::hash_args(args, num_args));
    return AXL_SUCCESS;
  });
}

}  // namespace axl::common
