// Completion flags: 8 bytes of pinned, device-mapped host memory. The host
// reads and writes them with atomics (the core), the device through
// cuStreamWaitValue64/cuStreamWriteValue64 at the mapped address.
#include <cstring>

#include "cuda_backend.hpp"

namespace axl::cuda {

axl_status flag_create(axl_pdevice device, axl_pflag* out_flag) noexcept {
  return guarded("flag_create", [&]() -> axl_status {
    if (out_flag == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "flag_create: out_flag is NULL");
    Device& d = *from(device);
    if (axl_status s = make_current(d)) return s;
    const DriverApi& a = api();
    auto f = std::make_unique<Flag>();
    f->device = &d;
    void* p = nullptr;
    if (axl_status s = check(a.cuMemHostAlloc(&p, sizeof(uint64_t),
                                              CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
                             "cuMemHostAlloc", "an 8-byte completion flag"))
      return s;
    f->host = static_cast<uint64_t*>(p);
    std::memset(p, 0, sizeof(uint64_t));
    if (axl_status s = check(a.cuMemHostGetDevicePointer(&f->address, p, 0), "cuMemHostGetDevicePointer")) {
      a.cuMemFreeHost(p);
      return s;
    }
    backend().graveyard.sweep();
    *out_flag = reinterpret_cast<axl_pflag>(f.release());
    return AXL_SUCCESS;
  });
}

axl_status flag_destroy(axl_pflag flag) noexcept {
  return guarded("flag_destroy", [&]() -> axl_status {
    Flag* f = from(flag);
    // A stream may still be waiting on or writing to it.
    return release_after_queued_work(*f->device, [f] {
      api().cuMemFreeHost(f->host);
      delete f;
    });
  });
}

axl_status flag_get_device_address(axl_pflag flag, axl_devaddr* out) noexcept {
  return guarded("flag_get_device_address", [&]() -> axl_status {
    if (out == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "flag_get_device_address: out is NULL");
    *out = from(flag)->address;
    return AXL_SUCCESS;
  });
}

axl_status flag_get_host_address(axl_pflag flag, uint64_t** out) noexcept {
  return guarded("flag_get_host_address", [&]() -> axl_status {
    if (out == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "flag_get_host_address: out is NULL");
    *out = from(flag)->host;
    return AXL_SUCCESS;
  });
}

}  // namespace axl::cuda
