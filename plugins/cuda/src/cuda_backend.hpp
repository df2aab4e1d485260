// The cuda backend as the CUDA side of common::DriverPlugin: the traits that
// name the Driver API's types, flag values and the few calls whose shape
// differs from HIP's; every slot body lives in plugins/common
// (driver_plugin_slots.hpp) and is shared with the hip backend.
//
// Devices run on their primary contexts (the ones the CUDA runtime, and so
// PyTorch and CuPy, use), queues are non-blocking streams, events are
// CUevents, completion flags are 8 bytes of mapped pinned memory driven by
// the stream memory operations, kernels come from cuModuleLoadDataEx (PTX,
// cubin, fatbin) or from NVRTC (module_compile). docs/backends.md maps every
// slot to the driver call behind it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "axl/common/driver_traits.hpp"
#include "axl/plugin.h"
#include "cuda_driver.hpp"

namespace axl::cuda {

struct CudaDriver
    : common::DriverTypes<CudaDriver, DriverApi, DriverNames, CUresult, CUdeviceptr, CUdevice, CUcontext,
                          CUstream, CUevent, CUmodule, CUfunction, CUmemoryPool, CUmemAccessDesc>,
      common::DriverValues<CUDA_SUCCESS, CUDA_ERROR_NOT_READY, CUDA_ERROR_NOT_FOUND, CUDA_ERROR_OUT_OF_MEMORY,
                           CUDA_ERROR_NOT_SUPPORTED, CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, CU_STREAM_NON_BLOCKING, CU_EVENT_DEFAULT,
                           CU_EVENT_DISABLE_TIMING,
                           // PORTABLE: pinned for every context, so a buffer made on one
                           // device copies at full speed to the others; DEVICEMAP:
                           // kernels can read it.
                           CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP, CU_STREAM_WRITE_VALUE_DEFAULT,
                           CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, CU_MEM_LOCATION_TYPE_DEVICE,
                           CU_MEM_ACCESS_FLAGS_PROT_READWRITE> {
  static constexpr DriverNames names{};
  static constexpr common::DriverText text{
      "CUDA", "cuda", "cuDevicePrimaryCtxRetain",
      "(CUDA C++ kernels need extern \"C\" to keep their names)", "PTX, CUBIN, FATBIN or AUTO",
      "AXL_SOURCE_LANGUAGE_CUDA (1)", "NVRTC", "axl_program.cu",
      "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"};
  // CUDA's parameter space is 32764 bytes (4 KiB before CUDA 12.1 / Volta);
  // the driver checks the total, these bound each argument and the count.
  static constexpr common::ArgLimits kArgLimits{4096, 32764};
  static constexpr bool kHasCompiler = true;
  static constexpr int32_t kLanguage = AXL_SOURCE_LANGUAGE_CUDA;

  // Discovery (driver_plugin.hpp, "probe"): census, open, then init at first use.
  static common::Census census() { return cuda::census(); }
  static DriverProbe open(common::DriverLibrary& lib, Api& api) { return open_driver(lib, api); }
  static DriverProbe init(const common::DriverLibrary& lib, Api& api, DriverProbe opened) {
    return init_driver(lib, api, std::move(opened));
  }
  static const common::DriverErrors& errors() noexcept { return driver_errors(); }
  static const char* error_name(const Api& a, Result r) noexcept {
    const char* name = nullptr;
    if (a.get_error_name == nullptr || a.get_error_name(r, &name) != CUDA_SUCCESS) return nullptr;
    return name;
  }
  static const char* error_string(const Api& a, Result r) noexcept {
    const char* text = nullptr;
    if (a.get_error_string == nullptr || a.get_error_string(r, &text) != CUDA_SUCCESS) return nullptr;
    return text;
  }

  static Result retain(const Api& a, Context* ctx, DeviceId dev) noexcept {
    return a.primary_ctx_retain(ctx, dev);
  }
  static void release(const Api& a, DeviceId dev) noexcept { a.primary_ctx_release(dev); }

  // A device-memory pool of axl's own on `dev` (see DriverDevice::pool).
  static Result pool_create(const Api& a, Pool* pool, DeviceId dev) noexcept {
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = dev;
    return a.pool_create(pool, &props);
  }

  // A kernel gets 48 KiB of dynamic shared memory per block; more (up to
  // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN) only once its
  // maximum is raised, or the launch fails with CUDA_ERROR_INVALID_VALUE.
  static constexpr uint64_t kSharedWithoutOptIn = 48 << 10;
  static Result allow_dynamic_shared(const Api& a, Function fn, int bytes, const char** call) noexcept {
    *call = names.func_set_attribute;
    return a.func_set_attribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
  }

  // Multicast groups (driver_plugin/multicast.hpp): a multicast object
  // (CUDA 12.1) over memory of cuMemCreate, mapped with cuMemMap.
  static constexpr bool kHasMulticast = true;
  using MemHandle = CUmemGenericAllocationHandle;
  static constexpr const char* kMulticastAttribute = "CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED";
  static bool has_multicast(const Api& a) noexcept {
    return a.mc_get_granularity && a.mc_create && a.mc_add_device && a.mc_bind_mem && a.mc_unbind &&
           a.mem_create && a.mem_release && a.mem_address_reserve && a.mem_address_free && a.mem_map &&
           a.mem_unmap && a.mem_set_access;
  }
  static Result multicast_attribute(const Api& a, DeviceId dev, int* out) noexcept {
    return a.device_get_attribute(out, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, dev);
  }
  // handleTypes 0: the group lives in this process (nothing is exported).
  static CUmulticastObjectProp multicast_props(uint32_t devices, uint64_t bytes) noexcept {
    CUmulticastObjectProp prop{};
    prop.numDevices = devices;
    prop.size = bytes;
    prop.handleTypes = 0;
    return prop;
  }
  // RECOMMENDED, not MINIMUM: the size NVIDIA advises for full bandwidth.
  static Result multicast_granularity(const Api& a, uint32_t devices, uint64_t bytes, size_t* out) noexcept {
    const CUmulticastObjectProp prop = multicast_props(devices, bytes);
    return a.mc_get_granularity(out, &prop, CU_MULTICAST_GRANULARITY_RECOMMENDED);
  }
  static Result multicast_object(const Api& a, uint32_t devices, uint64_t bytes, MemHandle* out) noexcept {
    const CUmulticastObjectProp prop = multicast_props(devices, bytes);
    return a.mc_create(out, &prop);
  }
  // Pinned device memory on `dev`, what cuMulticastBindMem accepts.
  static Result physical_memory(const Api& a, MemHandle* out, uint64_t bytes, DeviceId dev) noexcept {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    return a.mem_create(out, bytes, &prop, 0);
  }

  static DevicePtr ptr(axl_devaddr address) noexcept { return address; }
  static axl_devaddr addr(DevicePtr p) noexcept { return p; }
  static unsigned d32_pattern(uint32_t pattern) noexcept { return pattern; }

  static Result wait_geq(const Api& a, Stream s, DevicePtr address, uint64_t value) noexcept {
    return a.stream_wait_value64(s, address, value, CU_STREAM_WAIT_VALUE_GEQ);
  }
  // axl_host_fn and CUhostFn have the same signature, void(void*).
  static Result host_fn(const Api& a, Stream s, axl_host_fn fn, void* user, const char** call) noexcept {
    *call = names.launch_host_func;
    return a.launch_host_func(s, fn, user);
  }

  static bool accepts_format(int32_t format) noexcept {
    return format == AXL_MODULE_FORMAT_AUTO || format == AXL_MODULE_FORMAT_PTX ||
           format == AXL_MODULE_FORMAT_CUBIN || format == AXL_MODULE_FORMAT_FATBIN;
  }
  static const char* image_kind(const common::CompileResult& r) noexcept { return r.is_ptx ? "PTX" : "cubin"; }

  // device.cpp: the properties (sm_XY, name, memory) and capabilities.
  static axl_status describe(Device& d);
  // module.cpp: PTX, cubin or fatbin through cuModuleLoadDataEx with the
  // JIT's error log in the message; the embedded test-kernel PTX; NVRTC.
  static axl_status load_image(Device& d, const void* image, size_t size, const char* what, Module** out);
  static axl_status load_test_module(Device& d, Module** out);
  static common::CompileResult compile(Device& d, const std::string& source, const std::string& name,
                                       const std::vector<std::string>& options);
};

using Plugin = common::DriverPlugin<CudaDriver>;

}  // namespace axl::cuda
