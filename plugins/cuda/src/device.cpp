// What a CUDA device is beyond what DriverPlugin reads (name, memory): its
// sm_XY architecture, and whether it has memory pools and 64-bit stream memory operations.
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
  axl_device_properties& p = d.props;
  const int major = attribute(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  const int minor = attribute(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  std::snprintf(p.architecture_name, sizeof p.architecture_name, "sm_%d%d", major, minor);
  p.is_host_unified = attribute(d, CU_DEVICE_ATTRIBUTE_INTEGRATED) != 0 ? 1 : 0;
  p.is_compatible = major >= kMinComputeMajor &&
                    attribute(d, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING) != 0 ? 1 : 0;

  // DriverPlugin checks that the entry points exist too.
  d.stream_mem_ops = attribute(d, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS) != 0;
  d.pools = attribute(d, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) != 0;
  d.max_dynamic_shared = static_cast<uint32_t>(attribute(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
  return AXL_SUCCESS;
}

}  // namespace axl::cuda
