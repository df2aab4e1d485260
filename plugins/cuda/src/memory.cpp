// Device memory (stream-ordered from the device's pool where supported,
// else cuMemAlloc) and pinned host memory.
#include "cuda_backend.hpp"

namespace axl::cuda {

axl_status memory_alloc(axl_pdevice device, uint64_t bytes, axl_devaddr* out_address) noexcept {
  return guarded("memory_alloc", [&]() -> axl_status {
    if (out_address == nullptr || bytes == 0)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("memory_alloc: ", bytes, " bytes into ", static_cast<void*>(out_address),
                              "; expected > 0 bytes and an output pointer"));
    Device& d = *from(device);
    if (axl_status s = make_current(d)) return s;
    const DriverApi& a = api();
    CUdeviceptr p = 0;
    const std::string what = common::str(bytes, " bytes on CUDA device ", d.index);
    if (d.pools) {
      if (axl_status s = check(a.cuMemAllocAsync(&p, bytes, d.alloc_stream), "cuMemAllocAsync", what))
        return s;
      // Usable from every queue once the allocating stream reached it; that
      // stream carries nothing else, so this wait is short.
      if (axl_status s = check(a.cuStreamSynchronize(d.alloc_stream), "cuStreamSynchronize", what)) {
        a.cuMemFreeAsync(p, d.alloc_stream);
        return s;
      }
    } else if (axl_status s = check(a.cuMemAlloc(&p, bytes), "cuMemAlloc", what)) {
      return s;
    }
    *out_address = p;
    return AXL_SUCCESS;
  });
}

axl_status memory_free(axl_pdevice device, axl_devaddr address) noexcept {
  return guarded("memory_free", [&]() -> axl_status {
    Device& d = *from(device);
    if (axl_status s = make_current(d)) return s;
    // The core guarantees no queued work uses the memory any more, so the
    // free need not wait for anything.
    if (d.pools) return check(api().cuMemFreeAsync(address, d.alloc_stream), "cuMemFreeAsync");
    return check(api().cuMemFree(address), "cuMemFree");
  });
}

axl_status pinned_alloc(axl_pdevice device, uint64_t bytes, void** out_host) noexcept {
  return guarded("pinned_alloc", [&]() -> axl_status {
    if (out_host == nullptr || bytes == 0)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "pinned_alloc: expected > 0 bytes and an output pointer");
    Device& d = *from(device);
    if (axl_status s = make_current(d)) return s;
    void* p = nullptr;
    // PORTABLE: pinned for every context, so a buffer made on one device
    // copies at full speed to the others; DEVICEMAP: kernels can read it.
    const CUresult r = api().cuMemHostAlloc(&p, bytes, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
    if (r != CUDA_SUCCESS)
      return fail_cu(r, "cuMemHostAlloc", common::str(bytes, " bytes of pinned host memory"),
                     r == CUDA_ERROR_OUT_OF_MEMORY ? AXL_ERROR_OUT_OF_HOST_MEMORY : AXL_SUCCESS);
    *out_host = p;
    return AXL_SUCCESS;
  });
}

axl_status pinned_free(axl_pdevice device, void* host) noexcept {
  return guarded("pinned_free", [&]() -> axl_status {
    if (axl_status s = make_current(*from(device))) return s;
    return check(api().cuMemFreeHost(host), "cuMemFreeHost");
  });
}

}  // namespace axl::cuda
