// The memory and pinned-memory slots of DriverPlugin<D>.
// Part of driver_plugin_slots.hpp, which includes every part; included by
// exactly one translation unit of each driver-API plugin (its plugin.cpp).
#pragma once

#include <algorithm>
#include <cstring>

#include "axl/common/driver_plugin.hpp"

namespace axl::common {

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

}  // namespace axl::common
