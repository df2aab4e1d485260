// The slot bodies of DriverPlugin<D> (driver_plugin.hpp) and its plugin
// table. Included by exactly one translation unit of each driver-API plugin
// (its plugin.cpp), after the traits `D` are complete. Every message names
// the vendor's call (D::names) and the vendor (D::text.vendor); launch-trace
// records use the vendor's call names for copies and fills.
#pragma once

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string_view>

#include "axl/common/driver_plugin.hpp"
#include "axl/common/slots.hpp"

namespace axl::common {

inline const char* module_format_name(int32_t f) noexcept {
  switch (f) {
    case AXL_MODULE_FORMAT_AUTO: return "AUTO";
    case AXL_MODULE_FORMAT_SHARED_OBJECT: return "SHARED_OBJECT";
    case AXL_MODULE_FORMAT_PTX: return "PTX";
    case AXL_MODULE_FORMAT_CUBIN: return "CUBIN";
    case AXL_MODULE_FORMAT_FATBIN: return "FATBIN";
    case AXL_MODULE_FORMAT_HSACO: return "HSACO";
    case AXL_MODULE_FORMAT_SPIRV: return "SPIRV";
    default: return "unknown";
  }
}

// ---- backend ----------------------------------------------------------------

template <class D>
axl_status DriverPlugin<D>::backend_init() noexcept {
  return guarded("backend_init", []() -> axl_status {
    if (axl_status s = require_driver()) return s;
    State& b = state();
    std::lock_guard<std::mutex> lk(b.dev_mu);
    b.devices.resize(static_cast<size_t>(b.probe.device_count));
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::backend_shutdown() noexcept {
  return guarded("backend_shutdown", []() -> axl_status {
    State& b = state();
    const Api& a = api();
    for (auto& d : b.devices)
      if (d && make_current(*d) == AXL_SUCCESS) (void)a.ctx_synchronize();
    if (size_t left = b.graveyard.release_all())
      b.host.log(AXL_LOG_WARN, str("backend_shutdown released ", left,
                                   " module(s)/flag(s) whose queued work had not finished"));
    {
      std::lock_guard<std::mutex> lk(b.queues_mu);
      if (!b.queues.empty())
        b.host.log(AXL_LOG_WARN, str("backend_shutdown found ", b.queues.size(),
                                     " queue(s) still alive; destroying their streams"));
      for (Queue* q : b.queues) (void)a.stream_destroy(q->stream);
      b.queues.clear();
    }
    std::lock_guard<std::mutex> lk(b.dev_mu);
    for (auto& d : b.devices) {
      if (!d) continue;
      if (make_current(*d) == AXL_SUCCESS) {
        if (d->test_module != nullptr) (void)a.module_unload(d->test_module->module);
        if (d->alloc_stream != nullptr) (void)a.stream_destroy(d->alloc_stream);
        // After the synchronisation above no free is pending; the driver
        // releases what outstanding allocations hold once they are freed.
        if (d->pools) (void)a.pool_destroy(d->pool);
      }
      D::release(a, d->dev);
      // The Device stays allocated: a late handle must not dangle.
      d.release();
    }
    b.devices.clear();
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::backend_device_count(uint32_t* out_count) noexcept {
  return guarded("backend_device_count", [&]() -> axl_status {
    if (out_count == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "backend_device_count: out_count is NULL");
    State& b = state();
    // Before the driver is up: the census, so that counting starts no
    // driver and fork() after accelerator_count() stays safe
    // (axl/common/census.hpp).
    if (!b.probed.load(std::memory_order_acquire)) {
      const Census& c = census();
      if (c.known) {
        if (c.count == 0) return fail(AXL_ERROR_BACKEND_UNAVAILABLE, c.reason);
        // Devices exist: the library must load (reported now, not at first use).
        if (axl_status s = report_probe(opened())) return s;
        b.host.log(AXL_LOG_DEBUG, str(D::text.plugin, ": ", c.count, " device(s) by ", c.source,
                                      "; the driver is initialised at the first device use"));
        *out_count = c.count;
        return AXL_SUCCESS;
      }
      b.host.log(AXL_LOG_DEBUG, str(D::text.plugin, ": no device census here (", D::text.vendor,
                                    "'s kernel driver publishes none); counting initialises the driver"));
    }
    // The driver's own count: once it is up (the core asks again after
    // backend_init, so MIG and visible-device subtleties come out right),
    // or where only it can count.
    if (axl_status s = require_driver()) return s;
    *out_count = static_cast<uint32_t>(probe().device_count);
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::backend_set_tracing(uint8_t enabled) noexcept {
  state().tracer.set_enabled(enabled != 0);
  return AXL_SUCCESS;
}

// The driver backends take no options: every key is refused by name (a
// NULL slot would only say "unsupported", not which key was wrong).
template <class D>
axl_status DriverPlugin<D>::backend_set_option(const char* key, const char* value) noexcept {
  return fail(AXL_ERROR_INVALID_ARGUMENT,
              str(D::text.plugin, ": no backend option '", key ? key : "(null)", "' (value '", value ? value : "(null)",
                  "'); the ", D::text.plugin, " backend has no options"));
}

// ---- devices ----------------------------------------------------------------

// Retains the primary context, reads what never changes (the vendor part in
// D::describe) and sets up stream-ordered allocation. The caller holds dev_mu.
template <class D>
axl_status DriverPlugin<D>::set_up(uint32_t index, std::unique_ptr<Device>& out) {
  const Api& a = api();
  auto d = std::make_unique<Device>();
  d->index = index;
  if (axl_status s = check(a.device_get(&d->dev, static_cast<int>(index)), D::names.device_get,
                           str("device ", index)))
    return s;
  if (axl_status s = check(D::retain(a, &d->ctx, d->dev), D::text.retain_call, str("device ", index)))
    return s;
  if (axl_status s = make_current(*d)) {
    D::release(a, d->dev);
    return s;
  }
  axl_device_properties& p = d->props;
  p.struct_size = sizeof p;
  std::snprintf(p.label, sizeof p.label, "%s", "gpu");
  std::snprintf(p.api, sizeof p.api, "%s", D::text.plugin);
  if (a.device_get_name(p.model_name, static_cast<int>(sizeof p.model_name), d->dev) != D::kSuccess)
    std::snprintf(p.model_name, sizeof p.model_name, "%s device", D::text.vendor);
  size_t total = 0;
  axl_status s = check(a.device_total_mem(&total, d->dev), D::names.device_total_mem);
  p.total_memory_bytes = total;
  // Neither API has a per-allocation cap below the device's memory.
  p.max_single_alloc_bytes = total;
  p.is_host = 0;
  // The architecture, unified memory, compatibility, pools and stream
  // memory operations: the vendor's own queries.
  if (s == AXL_SUCCESS) s = D::describe(*d);
  if (s != AXL_SUCCESS) {
    D::release(a, d->dev);
    return s;
  }
  // What the device supports, usable only where the runtime has the calls.
  d->stream_mem_ops = d->stream_mem_ops && a.stream_wait_value64 != nullptr && a.stream_write_value64 != nullptr;
  d->pools = d->pools && a.malloc_from_pool != nullptr && a.free_async != nullptr && a.pool_create != nullptr &&
             a.pool_destroy != nullptr && a.pool_set_attribute != nullptr;
  if (d->pools) {
    // A pool of axl's own: the device's default pool is process-wide (the
    // CUDA runtime's cudaMallocAsync, PyTorch and CuPy allocate from it), so
    // its release threshold is not axl's to change. This one caches freed
    // memory instead of returning it to the driver at every
    // synchronisation (what makes stream-ordered allocation cheap), and
    // gives it back when an allocation runs out of memory (memory_alloc).
    uint64_t keep = ~uint64_t{0};
    if (D::pool_create(a, &d->pool, d->dev) != D::kSuccess) {
      d->pools = false;
      d->pool = nullptr;
    } else if (a.pool_set_attribute(d->pool, D::kPoolReleaseThreshold, &keep) != D::kSuccess ||
               a.stream_create(&d->alloc_stream, D::kStreamNonBlocking) != D::kSuccess) {
      (void)a.pool_destroy(d->pool);
      d->pools = false;
      d->pool = nullptr;
    }
  }
  d->pool_alloc.store(d->pools);
  out = std::move(d);
  return AXL_SUCCESS;
}

template <class D>
axl_status DriverPlugin<D>::device_get(uint32_t index, axl_pdevice* out_device) noexcept {
  return guarded("device_get", [&]() -> axl_status {
    if (out_device == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "device_get: out_device is NULL");
    State& b = state();
    std::lock_guard<std::mutex> lk(b.dev_mu);
    if (index >= b.devices.size())
      return fail(AXL_ERROR_OUT_OF_RANGE, str("device_get: index ", index, " is not below the ",
                                              b.devices.size(), " ", D::text.vendor, " device(s)"));
    if (!b.devices[index])
      if (axl_status s = set_up(index, b.devices[index])) return s;
    *out_device = reinterpret_cast<axl_pdevice>(b.devices[index].get());
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::device_get_properties(axl_pdevice device, axl_device_properties* props) noexcept {
  return guarded("device_get_properties", [&]() -> axl_status {
    if (props == nullptr || props->struct_size < sizeof(size_t))
      return fail(AXL_ERROR_INVALID_ARGUMENT, "device_get_properties: props is NULL or its struct_size is 0");
    const size_t n = std::min(props->struct_size, sizeof(axl_device_properties));
    const size_t caller_size = props->struct_size;
    std::memcpy(props, &from(device)->props, n);
    props->struct_size = caller_size;
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::device_get_memory_info(axl_pdevice device, uint64_t* out_free,
                                                   uint64_t* out_total) noexcept {
  return guarded("device_get_memory_info", [&]() -> axl_status {
    if (out_free == nullptr || out_total == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "device_get_memory_info: an output pointer is NULL");
    Device& d = *from(device);
    if (axl_status s = make_current(d)) return s;
    size_t free_bytes = 0, total = 0;
    if (axl_status s = check(api().mem_get_info(&free_bytes, &total), D::names.mem_get_info)) return s;
    *out_free = free_bytes;
    *out_total = total;
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::device_can_access_peer(axl_pdevice device, axl_pdevice peer, uint8_t* out) noexcept {
  return guarded("device_can_access_peer", [&]() -> axl_status {
    if (out == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "device_can_access_peer: out is NULL");
    Device& d = *from(device);
    Device& p = *from(peer);
    *out = 0;
    if (&d == &p) return AXL_SUCCESS;  // MAX's rule: a device is not its own peer
    int can = 0;
    if (axl_status s = check(api().device_can_access_peer(&can, d.dev, p.dev), D::names.device_can_access_peer,
                             str("devices ", d.index, " -> ", p.index)))
      return s;
    *out = can != 0 ? 1 : 0;
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::device_enable_peer_access(axl_pdevice device, axl_pdevice peer) noexcept {
  return guarded("device_enable_peer_access", [&]() -> axl_status {
    Device& d = *from(device);
    Device& p = *from(peer);
    const std::string pair = str(D::text.vendor, " device ", d.index, " (", d.props.model_name,
                                 ") accessing device ", p.index, " (", p.props.model_name, ")");
    if (&d == &p) return AXL_SUCCESS;
    const Api& a = api();
    int can = 0;
    if (axl_status s = check(a.device_can_access_peer(&can, d.dev, p.dev), D::names.device_can_access_peer, pair))
      return s;
    if (can == 0)
      return fail(AXL_ERROR_UNSUPPORTED, str("peer access is not possible for ", pair, " (",
                                             D::names.device_can_access_peer, " answered 0)"));
    if (axl_status s = make_current(d)) return s;
    const Result r = a.enable_peer_access(p.ctx, 0);
    if (r != D::kSuccess && r != D::kPeerAlreadyEnabled)
      return fail_driver(r, D::names.enable_peer_access, pair);
    // Stream-ordered (pool) allocations ignore peer access granted above:
    // the peer's pool must grant it separately.
    if (p.pools && a.pool_set_access != nullptr) {
      typename D::AccessDesc access{};
      access.location.type = D::kLocationDevice;
      access.location.id = d.dev;
      access.flags = D::kProtReadWrite;
      if (axl_status s = check(a.pool_set_access(p.pool, &access, 1), D::names.pool_set_access, pair))
        return s;
    }
    return AXL_SUCCESS;
  });
}

// ---- memory -----------------------------------------------------------------

template <class D>
axl_status DriverPlugin<D>::memory_alloc(axl_pdevice device, uint64_t bytes, axl_devaddr* out_address) noexcept {
  return guarded("memory_alloc", [&]() -> axl_status {
    if (out_address == nullptr || bytes == 0)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  str("memory_alloc: ", bytes, " bytes into ", static_cast<void*>(out_address),
                      "; expected > 0 bytes and an output pointer"));
    Device& d = *from(device);
    if (axl_status s = make_current(d)) return s;
    const Api& a = api();
    typename D::DevicePtr p{};
    const std::string what = str(bytes, " bytes on ", D::text.vendor, " device ", d.index);
    // Out of memory while axl's pool holds freed memory (its release
    // threshold keeps everything): return that to the driver and retry
    // once. The trim waits for the frees queued on the allocation stream,
    // so they are returned too.
    auto retry_after_trim = [&](auto&& alloc) -> Result {
      Result r = alloc();
      if (r != D::kOutOfMemory || !d.pools || a.pool_trim == nullptr) return r;
      if (a.stream_synchronize(d.alloc_stream) != D::kSuccess || a.pool_trim(d.pool, 0) != D::kSuccess)
        return r;
      state().host.log(AXL_LOG_DEBUG, str("memory_alloc: ", what, " ran out of memory; trimmed axl's pool "
                                          "and tried once more"));
      return alloc();
    };
    if (d.pool_alloc.load()) {
      const Result r = retry_after_trim([&] { return a.malloc_from_pool(&p, bytes, d.pool, d.alloc_stream); });
      if (r == D::kSuccess) {
        // Usable from every queue once the allocating stream reached it;
        // that stream carries nothing else, so this wait is short.
        if (axl_status s = check(a.stream_synchronize(d.alloc_stream), D::names.stream_synchronize, what)) {
          (void)a.free_async(p, d.alloc_stream);
          return s;
        }
        *out_address = D::addr(p);
        return AXL_SUCCESS;
      }
      if (r != D::kNotSupported) return fail_driver(r, D::names.malloc_from_pool, what);
      // The device reports pools but the driver refuses stream-ordered
      // allocation (seen on virtualised GPUs): plain allocations from now on.
      if (d.pool_alloc.exchange(false))
        state().host.log(AXL_LOG_WARN, str(D::names.malloc_from_pool, " answered not supported on ",
                                           D::text.vendor, " device ", d.index, "; using ", D::names.malloc,
                                           " for its allocations from now on"));
    }
    if (axl_status s = check(retry_after_trim([&] { return a.malloc(&p, bytes); }), D::names.malloc, what))
      return s;
    if (d.pools) {
      // Freed with the plain call, not into the pool (memory_free).
      std::lock_guard<std::mutex> lk(d.plain_mu);
      d.plain.insert(D::addr(p));
    }
    *out_address = D::addr(p);
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::memory_free(axl_pdevice device, axl_devaddr address) noexcept {
  return guarded("memory_free", [&]() -> axl_status {
    Device& d = *from(device);
    if (axl_status s = make_current(d)) return s;
    // The core guarantees no queued work uses the memory any more, so the
    // free need not wait for anything.
    bool plain = !d.pools;
    if (!plain && !d.pool_alloc.load()) {
      std::lock_guard<std::mutex> lk(d.plain_mu);
      plain = d.plain.erase(address) != 0;
    }
    if (!plain) return check(api().free_async(D::ptr(address), d.alloc_stream), D::names.free_async);
    return check(api().free(D::ptr(address)), D::names.free);
  });
}

template <class D>
axl_status DriverPlugin<D>::pinned_alloc(axl_pdevice device, uint64_t bytes, void** out_host) noexcept {
  return guarded("pinned_alloc", [&]() -> axl_status {
    if (out_host == nullptr || bytes == 0)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "pinned_alloc: expected > 0 bytes and an output pointer");
    Device& d = *from(device);
    if (axl_status s = make_current(d)) return s;
    void* p = nullptr;
    // PORTABLE: pinned for every device, so a buffer made on one device
    // copies at full speed to the others; mapped: kernels can read it.
    const Result r = api().host_alloc(&p, bytes, D::kHostAllocFlags);
    if (r != D::kSuccess)
      return fail_driver(r, D::names.host_alloc, str(bytes, " bytes of pinned host memory"),
                         r == D::kOutOfMemory ? AXL_ERROR_OUT_OF_HOST_MEMORY : AXL_SUCCESS);
    *out_host = p;
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::pinned_free(axl_pdevice device, void* host) noexcept {
  return guarded("pinned_free", [&]() -> axl_status {
    if (axl_status s = make_current(*from(device))) return s;
    return check(api().host_free(host), D::names.host_free);
  });
}

// ---- queues -----------------------------------------------------------------

template <class D>
axl_status DriverPlugin<D>::queue_create(axl_pdevice device, const axl_queue_desc* desc,
                                         axl_pqueue* out_queue) noexcept {
  return guarded("queue_create", [&]() -> axl_status {
    if (desc == nullptr || out_queue == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "queue_create: desc or out_queue is NULL");
    if (desc->flags != AXL_QUEUE_FLAG_NONE)
      return fail(AXL_ERROR_INVALID_ARGUMENT, str("queue_create: unknown flags 0x", std::hex, desc->flags));
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

// ---- events -----------------------------------------------------------------

// Timing only when asked (both runtimes time by default, axl does not:
// untimed events are cheaper to record and wait on).
template <class D>
axl_status DriverPlugin<D>::event_create(axl_pdevice device, uint32_t flags, axl_pevent* out_event) noexcept {
  return guarded("event_create", [&]() -> axl_status {
    if (out_event == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "event_create: out_event is NULL");
    if ((flags & ~uint32_t{AXL_EVENT_FLAG_TIMING}) != 0)
      return fail(AXL_ERROR_INVALID_ARGUMENT, str("event_create: unknown flags 0x", std::hex, flags,
                                                  "; only AXL_EVENT_FLAG_TIMING (1) is defined"));
    Device& d = *from(device);
    if (axl_status s = make_current(d)) return s;
    auto e = std::make_unique<Event>();
    e->device = &d;
    const unsigned native = (flags & AXL_EVENT_FLAG_TIMING) ? D::kEventDefault : D::kEventDisableTiming;
    if (axl_status s = check(api().event_create(&e->event, native), D::names.event_create)) return s;
    *out_event = reinterpret_cast<axl_pevent>(e.release());
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::event_destroy(axl_pevent event) noexcept {
  return guarded("event_destroy", [&]() -> axl_status {
    std::unique_ptr<Event> e(from(event));
    if (axl_status s = make_current(*e->device)) return s;
    // Destroying an event with a record or wait still pending is allowed:
    // the driver frees it once that work is done, as plugin.h asks.
    return check(api().event_destroy(e->event), D::names.event_destroy);
  });
}

template <class D>
axl_status DriverPlugin<D>::event_synchronize(axl_pevent event) noexcept {
  return guarded("event_synchronize", [&]() -> axl_status {
    // The core calls this from threads of its own (the reaper among them)
    // where no context need be current.
    Event& e = *from(event);
    if (axl_status s = make_current(*e.device)) return s;
    return check(api().event_synchronize(e.event), D::names.event_synchronize);
  });
}

template <class D>
axl_status DriverPlugin<D>::event_query(axl_pevent event) noexcept {
  return guarded("event_query", [&]() -> axl_status {
    Event& e = *from(event);
    if (axl_status s = make_current(*e.device)) return s;
    const Result r = api().event_query(e.event);
    if (r == D::kNotReady) return AXL_ERROR_NOT_READY;  // not a failure: no report
    return check(r, D::names.event_query);
  });
}

template <class D>
axl_status DriverPlugin<D>::event_elapsed_ms(axl_pevent start, axl_pevent end, float* out_ms) noexcept {
  return guarded("event_elapsed_ms", [&]() -> axl_status {
    if (out_ms == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "event_elapsed_ms: out_ms is NULL");
    if (axl_status s = make_current(*from(start)->device)) return s;
    return check(api().event_elapsed_time(out_ms, from(start)->event, from(end)->event),
                 D::names.event_elapsed_time);
  });
}

// ---- completion flags: 8 bytes of pinned, device-mapped host memory; the
// host uses atomics (the core), the device the 64-bit stream wait/write.

template <class D>
axl_status DriverPlugin<D>::flag_create(axl_pdevice device, axl_pflag* out_flag) noexcept {
  return guarded("flag_create", [&]() -> axl_status {
    if (out_flag == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "flag_create: out_flag is NULL");
    Device& d = *from(device);
    if (axl_status s = make_current(d)) return s;
    const Api& a = api();
    auto f = std::make_unique<Flag>();
    f->device = &d;
    void* p = nullptr;
    if (axl_status s = check(a.host_alloc(&p, sizeof(uint64_t), D::kHostAllocFlags), D::names.host_alloc,
                             "an 8-byte completion flag"))
      return s;
    f->host = static_cast<uint64_t*>(p);
    std::memset(p, 0, sizeof(uint64_t));
    if (axl_status s = check(a.host_get_device_pointer(&f->address, p, 0), D::names.host_get_device_pointer)) {
      (void)a.host_free(p);
      return s;
    }
    state().graveyard.sweep();
    *out_flag = reinterpret_cast<axl_pflag>(f.release());
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::flag_destroy(axl_pflag flag) noexcept {
  return guarded("flag_destroy", [&]() -> axl_status {
    Flag* f = from(flag);
    // A stream may still be waiting on or writing to it.
    return release_after_queued_work(*f->device, [f] {
      (void)api().host_free(f->host);
      delete f;
    });
  });
}

template <class D>
axl_status DriverPlugin<D>::flag_get_device_address(axl_pflag flag, axl_devaddr* out) noexcept {
  return guarded("flag_get_device_address", [&]() -> axl_status {
    if (out == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "flag_get_device_address: out is NULL");
    *out = D::addr(from(flag)->address);
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::flag_get_host_address(axl_pflag flag, uint64_t** out) noexcept {
  return guarded("flag_get_host_address", [&]() -> axl_status {
    if (out == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "flag_get_host_address: out is NULL");
    *out = from(flag)->host;
    return AXL_SUCCESS;
  });
}

// ---- modules ----------------------------------------------------------------

template <class D>
axl_status DriverPlugin<D>::module_load(axl_pdevice device, const axl_module_desc* desc,
                                        axl_pmodule* out_module) noexcept {
  return guarded("module_load", [&]() -> axl_status {
    if (desc == nullptr || out_module == nullptr || desc->struct_size < sizeof(axl_module_desc))
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "module_load: desc or out_module is NULL, or desc->struct_size is too small");
    if (!D::accepts_format(desc->format))
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  str("module_load: format ", module_format_name(desc->format), " (", desc->format,
                      ") cannot be loaded by the ", D::text.vendor, " driver; expected ", D::text.module_formats));
    std::vector<char> file;
    const void* data = desc->data;
    size_t size = desc->size;
    std::string what = module_format_name(desc->format);
    if (desc->path != nullptr) {
      std::ifstream in(desc->path, std::ios::binary);
      if (!in) return fail(AXL_ERROR_NOT_FOUND, str("module_load: cannot open '", desc->path, "'"));
      file.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      if (file.empty()) return fail(AXL_ERROR_INVALID_ARGUMENT, str("module_load: '", desc->path, "' is empty"));
      data = file.data();
      size = file.size();
      what += str(" module '", desc->path, "'");
    } else {
      what += " module";
    }
    if (data == nullptr || size == 0) return fail(AXL_ERROR_INVALID_ARGUMENT, "module_load: no data and no path");
    Module* m = nullptr;
    if (axl_status s = D::load_image(*from(device), data, size, what.c_str(), &m)) return s;
    *out_module = reinterpret_cast<axl_pmodule>(m);
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::module_unload(axl_pmodule module) noexcept {
  return guarded("module_unload", [&]() -> axl_status {
    Module* m = from(module);
    // Launches of its kernels may still be queued.
    return release_after_queued_work(*m->device, [m] {
      (void)api().module_unload(m->module);
      delete m;
    });
  });
}

template <class D>
axl_status DriverPlugin<D>::module_get_kernel(axl_pmodule module, const char* name,
                                              axl_pkernel* out_kernel) noexcept {
  return guarded("module_get_kernel", [&]() -> axl_status {
    if (name == nullptr || out_kernel == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "module_get_kernel: name or out_kernel is NULL");
    Module& m = *from(module);
    std::lock_guard<std::mutex> lk(m.mu);
    auto it = m.kernels.find(name);
    if (it == m.kernels.end()) {
      if (axl_status s = make_current(*m.device)) return s;
      auto k = std::make_unique<Kernel>();
      k->name = name;
      const Result r = api().module_get_function(&k->fn, m.module, name);
      if (r == D::kNotFound)
        return fail_driver(r, D::names.module_get_function,
                           str("the module has no kernel named '", name, "' ", D::text.missing_kernel_hint),
                           AXL_ERROR_NOT_FOUND);
      if (axl_status s = check(r, D::names.module_get_function, str("kernel '", name, "'"))) return s;
      it = m.kernels.emplace(name, std::move(k)).first;
    }
    *out_kernel = reinterpret_cast<axl_pkernel>(it->second.get());
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::device_get_test_kernel(axl_pdevice device, int32_t which,
                                                   axl_pkernel* out_kernel) noexcept {
  return guarded("device_get_test_kernel", [&]() -> axl_status {
    if (out_kernel == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "device_get_test_kernel: out_kernel is NULL");
    if (which != AXL_TEST_KERNEL_INCREMENT_U32 && which != AXL_TEST_KERNEL_FILL_U32)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  str("device_get_test_kernel: ", which,
                      " is not AXL_TEST_KERNEL_INCREMENT_U32 (0) or AXL_TEST_KERNEL_FILL_U32 (1)"));
    static constexpr KernelParam kIncrementParams[] = {{AXL_ARG_DEVADDR, 8}, {AXL_ARG_SCALAR, 4}};
    static constexpr KernelParam kFillParams[] = {{AXL_ARG_DEVADDR, 8}, {AXL_ARG_SCALAR, 4}, {AXL_ARG_SCALAR, 4}};
    Device& d = *from(device);
    std::lock_guard<std::mutex> lk(d.test_mu);
    if (d.test_module == nullptr) {
      Module* m = nullptr;
      if (axl_status s = D::load_test_module(d, &m)) return s;
      const char* names[2] = {"axl_test_increment_u32", "axl_test_fill_u32"};
      for (int i = 0; i < 2; ++i) {
        Kernel& k = d.test_kernels[i];
        k.name = names[i];
        k.params = i == 0 ? kIncrementParams : kFillParams;
        k.param_count = i == 0 ? 2 : 3;
        if (axl_status s = check(api().module_get_function(&k.fn, m->module, names[i]),
                                 D::names.module_get_function, names[i])) {
          (void)api().module_unload(m->module);
          delete m;
          return s;
        }
      }
      d.test_module = m;
    }
    *out_kernel = reinterpret_cast<axl_pkernel>(&d.test_kernels[which]);
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::module_compile(axl_pdevice device, const axl_compile_desc* desc,
                                           axl_pmodule* out_module) noexcept {
  return guarded("module_compile", [&]() -> axl_status {
    if constexpr (!D::kHasCompiler) {
      (void)device, (void)desc, (void)out_module;
      return fail(AXL_ERROR_UNSUPPORTED, str("module_compile: the ", D::text.vendor, " backend has no run-time compiler"));
    } else {
      if (desc == nullptr || out_module == nullptr || desc->struct_size < sizeof(axl_compile_desc) ||
          desc->source == nullptr)
        return fail(AXL_ERROR_INVALID_ARGUMENT,
                    "module_compile: desc, desc->source or out_module is NULL, or desc->struct_size is too small");
      if (desc->language != D::kLanguage)
        return fail(AXL_ERROR_UNSUPPORTED, str("module_compile: the ", D::text.plugin, " backend compiles ",
                                               D::text.language, " only, not language ", desc->language));
      Device& d = *from(device);
      std::vector<std::string> options;
      for (uint32_t i = 0; i < desc->num_options; ++i) options.emplace_back(desc->options[i]);
      const std::string name = desc->name != nullptr && *desc->name ? desc->name : D::text.default_source_name;
      CompileResult r = D::compile(d, desc->source, name, options);
      if (r.status != AXL_SUCCESS) return fail(r.status, r.message);
      if (!r.log.empty()) state().host.log(AXL_LOG_DEBUG, str(D::text.compiler, " log for ", name, ":\n", r.log));
      Module* m = nullptr;
      const std::string what = str(D::image_kind(r), " compiled by ", D::text.compiler, " from '", name, "'");
      if (axl_status s = D::load_image(d, r.image.data(), r.image.size(), what.c_str(), &m)) return s;
      *out_module = reinterpret_cast<axl_pmodule>(m);
      return AXL_SUCCESS;
    }
  });
}

// ---- the table ----------------------------------------------------------------

inline constexpr std::array<std::string_view, 0> kDriverSlotsOmitted{};
inline constexpr std::array<std::string_view, 1> kDriverSlotsOmittedNoCompiler{"module_compile"};

template <class D>
constexpr axl_plugin_table DriverPlugin<D>::table() noexcept {
  // module_compile only with a run-time compiler (a NULL slot: the core
  // answers AXL_ERROR_UNSUPPORTED naming it).
  if constexpr (D::kHasCompiler)
    return AXL_PLUGIN_TABLE(kDriverSlotsOmitted);
  else
    return AXL_PLUGIN_TABLE(kDriverSlotsOmittedNoCompiler);
}

template <class D>
axl_status DriverPlugin<D>::negotiate(axl_negotiate_args* args) noexcept {
  // Constant-initialised: negotiation allocates nothing.
  static constexpr axl_plugin_info kInfo = {
      sizeof(axl_plugin_info), D::text.plugin, D::text.plugin, "0.1.0",
      0u,  // accelerators; not fork-safe (require_driver refuses in a child)
      0u,
  };
  static constexpr axl_plugin_table kTable = table();
  return common::negotiate(args, state().host, &kInfo, &kTable);
}

}  // namespace axl::common
