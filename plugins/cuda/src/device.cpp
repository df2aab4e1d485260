// Devices on their primary contexts, properties and peer access.
#include <cstdio>
#include <cstring>

#include "cuda_backend.hpp"

namespace axl::cuda {

namespace {

// Compute capability below which axl's kernels (the PTX of the test
// kernels, .target sm_50) cannot run.
constexpr int kMinComputeMajor = 5;

int attribute(const Device& d, CUdevice_attribute which) {
  int v = 0;
  if (api().cuDeviceGetAttribute(&v, which, d.dev) != CUDA_SUCCESS) return 0;
  return v;
}

void copy_text(char* dst, size_t cap, const char* src) {
  std::snprintf(dst, cap, "%s", src);
}

// Retains the primary context and reads what never changes. The caller
// holds dev_mu.
axl_status set_up(uint32_t index, std::unique_ptr<Device>& out) {
  const DriverApi& a = api();
  auto d = std::make_unique<Device>();
  d->index = index;
  if (axl_status s = check(a.cuDeviceGet(&d->dev, static_cast<int>(index)), "cuDeviceGet",
                           common::str("device ", index)))
    return s;
  if (axl_status s = check(a.cuDevicePrimaryCtxRetain(&d->ctx, d->dev), "cuDevicePrimaryCtxRetain",
                           common::str("device ", index)))
    return s;
  if (axl_status s = make_current(*d)) {
    a.cuDevicePrimaryCtxRelease(d->dev);
    return s;
  }
  axl_device_properties& p = d->props;
  p.struct_size = sizeof p;
  copy_text(p.label, sizeof p.label, "gpu");
  copy_text(p.api, sizeof p.api, "cuda");
  const int major = attribute(*d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  const int minor = attribute(*d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  std::snprintf(p.architecture_name, sizeof p.architecture_name, "sm_%d%d", major, minor);
  if (a.cuDeviceGetName(p.model_name, sizeof p.model_name, d->dev) != CUDA_SUCCESS)
    copy_text(p.model_name, sizeof p.model_name, "CUDA device");
  size_t total = 0;
  if (axl_status s = check(a.cuDeviceTotalMem(&total, d->dev), "cuDeviceTotalMem")) {
    a.cuDevicePrimaryCtxRelease(d->dev);
    return s;
  }
  p.total_memory_bytes = total;
  // CUDA has no per-allocation cap below the device's memory.
  p.max_single_alloc_bytes = total;
  p.is_host = 0;
  p.is_host_unified = attribute(*d, CU_DEVICE_ATTRIBUTE_INTEGRATED) != 0 ? 1 : 0;
  p.is_compatible = major >= kMinComputeMajor &&
                    attribute(*d, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING) != 0 ? 1 : 0;

  d->stream_mem_ops = a.cuStreamWaitValue64 != nullptr && a.cuStreamWriteValue64 != nullptr &&
                      attribute(*d, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS) != 0;
  d->pools = a.cuMemAllocAsync != nullptr && a.cuMemFreeAsync != nullptr &&
             a.cuDeviceGetDefaultMemPool != nullptr &&
             attribute(*d, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) != 0;
  if (d->pools) {
    // Pool memory is cached by the pool instead of returned to the driver at
    // every synchronisation: what makes stream-ordered allocation cheap.
    cuuint64_t keep = ~cuuint64_t{0};
    if (a.cuDeviceGetDefaultMemPool(&d->pool, d->dev) != CUDA_SUCCESS ||
        a.cuMemPoolSetAttribute == nullptr ||
        a.cuMemPoolSetAttribute(d->pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep) != CUDA_SUCCESS ||
        a.cuStreamCreate(&d->alloc_stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
      d->pools = false;
      d->pool = nullptr;
    }
  }
  out = std::move(d);
  return AXL_SUCCESS;
}

}  // namespace

axl_status device_get(uint32_t index, axl_pdevice* out_device) noexcept {
  return guarded("device_get", [&]() -> axl_status {
    if (out_device == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "device_get: out_device is NULL");
    Backend& b = backend();
    std::lock_guard<std::mutex> lk(b.dev_mu);
    if (index >= b.devices.size())
      return fail(AXL_ERROR_OUT_OF_RANGE,
                  common::str("device_get: index ", index, " is not below the ", b.devices.size(),
                              " CUDA device(s)"));
    if (!b.devices[index])
      if (axl_status s = set_up(index, b.devices[index])) return s;
    *out_device = reinterpret_cast<axl_pdevice>(b.devices[index].get());
    return AXL_SUCCESS;
  });
}

axl_status device_get_properties(axl_pdevice device, axl_device_properties* props) noexcept {
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

axl_status device_get_memory_info(axl_pdevice device, uint64_t* out_free,
                                  uint64_t* out_total) noexcept {
  return guarded("device_get_memory_info", [&]() -> axl_status {
    if (out_free == nullptr || out_total == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "device_get_memory_info: an output pointer is NULL");
    Device& d = *from(device);
    if (axl_status s = make_current(d)) return s;
    size_t free_bytes = 0, total = 0;
    if (axl_status s = check(api().cuMemGetInfo(&free_bytes, &total), "cuMemGetInfo")) return s;
    *out_free = free_bytes;
    *out_total = total;
    return AXL_SUCCESS;
  });
}

axl_status device_can_access_peer(axl_pdevice device, axl_pdevice peer, uint8_t* out) noexcept {
  return guarded("device_can_access_peer", [&]() -> axl_status {
    if (out == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "device_can_access_peer: out is NULL");
    Device& d = *from(device);
    Device& p = *from(peer);
    *out = 0;
    if (&d == &p) return AXL_SUCCESS;  // MAX's rule: a device is not its own peer
    int can = 0;
    if (axl_status s = check(api().cuDeviceCanAccessPeer(&can, d.dev, p.dev), "cuDeviceCanAccessPeer",
                             common::str("devices ", d.index, " -> ", p.index)))
      return s;
    *out = can != 0 ? 1 : 0;
    return AXL_SUCCESS;
  });
}

axl_status device_enable_peer_access(axl_pdevice device, axl_pdevice peer) noexcept {
  return guarded("device_enable_peer_access", [&]() -> axl_status {
    Device& d = *from(device);
    Device& p = *from(peer);
    const std::string pair = common::str("CUDA device ", d.index, " (", d.props.model_name,
                                         ") accessing device ", p.index, " (", p.props.model_name, ")");
    if (&d == &p) return AXL_SUCCESS;
    const DriverApi& a = api();
    int can = 0;
    if (axl_status s = check(a.cuDeviceCanAccessPeer(&can, d.dev, p.dev), "cuDeviceCanAccessPeer", pair))
      return s;
    if (can == 0)
      return fail(AXL_ERROR_UNSUPPORTED, "peer access is not possible for " + pair +
                                             " (cuDeviceCanAccessPeer answered 0)");
    if (axl_status s = make_current(d)) return s;
    const CUresult r = a.cuCtxEnablePeerAccess(p.ctx, 0);
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
      return fail_cu(r, "cuCtxEnablePeerAccess", pair);
    // Stream-ordered (pool) allocations ignore context peer access: the
    // peer's pool must grant it separately.
    if (p.pools && a.cuMemPoolSetAccess != nullptr) {
      CUmemAccessDesc access{};
      access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      access.location.id = d.dev;
      access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      if (axl_status s = check(a.cuMemPoolSetAccess(p.pool, &access, 1), "cuMemPoolSetAccess", pair))
        return s;
    }
    return AXL_SUCCESS;
  });
}

}  // namespace axl::cuda
