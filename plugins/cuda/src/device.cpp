// What a CUDA device is: its properties (sm_XY, name, memory) and whether it
// has memory pools and 64-bit stream memory operations.
#include <cstdio>

#include "cuda_backend.hpp"

namespace axl::cuda {

namespace {

// Compute capability below which axl's kernels (the PTX of the test
// kernels, .target sm_50) cannot run.
constexpr int kMinComputeMajor = 5;

int attribute(const CudaDriver::Device& d, CUdevice_attribute which) {
  int v = 0;
  if (Plugin::api().device_get_attribute(&v, which, d.dev) != CUDA_SUCCESS) return 0;
  return v;
}

}  // namespace

axl_status CudaDriver::describe(Device& d) {
  const DriverApi& a = Plugin::api();
  axl_device_properties& p = d.props;
  std::snprintf(p.label, sizeof p.label, "%s", "gpu");
  std::snprintf(p.api, sizeof p.api, "%s", "cuda");
  const int major = attribute(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  const int minor = attribute(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  std::snprintf(p.architecture_name, sizeof p.architecture_name, "sm_%d%d", major, minor);
  if (a.device_get_name(p.model_name, sizeof p.model_name, d.dev) != CUDA_SUCCESS)
    std::snprintf(p.model_name, sizeof p.model_name, "%s", "CUDA device");
  size_t total = 0;
  if (axl_status s = Plugin::check(a.device_total_mem(&total, d.dev), names.device_total_mem)) return s;
  p.total_memory_bytes = total;
  // CUDA has no per-allocation cap below the device's memory.
  p.max_single_alloc_bytes = total;
  p.is_host = 0;
  p.is_host_unified = attribute(d, CU_DEVICE_ATTRIBUTE_INTEGRATED) != 0 ? 1 : 0;
  p.is_compatible = major >= kMinComputeMajor &&
                    attribute(d, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING) != 0 ? 1 : 0;

  d.stream_mem_ops = a.stream_wait_value64 != nullptr && a.stream_write_value64 != nullptr &&
                     attribute(d, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS) != 0;
  d.pools = a.malloc_async != nullptr && a.free_async != nullptr && a.pool_get_default != nullptr &&
            attribute(d, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) != 0;
  return AXL_SUCCESS;
}

}  // namespace axl::cuda
