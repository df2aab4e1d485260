// The hip backend as the HIP side of common::DriverPlugin: the traits that
// name HIP's types, flag values and the few calls whose shape differs from
// CUDA's. HIP's driver-style API mirrors the CUDA Driver API call for call,
// so every slot body is the one plugins/common/driver_plugin_slots.hpp
// shares with the cuda backend.
//
// Devices are selected with hipSetDevice (HIP's "context" is the device
// ordinal; its primary contexts are deprecated), queues are non-blocking
// streams, events are hipEvent_t, completion flags are 8 bytes of mapped
// pinned memory driven by hipStreamWaitValue64/hipStreamWriteValue64,
// kernels come from code objects (HSACO) through hipModuleLoadData or from
// hiprtc (module_compile).
// docs/backends.md maps every slot to the HIP call behind it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "axl/common/driver_traits.hpp"
#include "axl/plugin.h"
#include "hip_runtime.hpp"

namespace axl::hip {

struct HipDriver
    : common::DriverTypes<HipDriver, RuntimeApi, RuntimeNames, hipError_t, hipDeviceptr_t, hipDevice_t,
                          int, hipStream_t, hipEvent_t, hipModule_t, hipFunction_t, hipMemPool_t,
                          hipMemAccessDesc>,
      common::DriverValues<hipSuccess, hipErrorNotReady, hipErrorNotFound, hipErrorOutOfMemory,
                           hipErrorNotSupported, hipErrorPeerAccessAlreadyEnabled, hipStreamNonBlocking, hipEventDefault,
                           hipEventDisableTiming, hipHostMallocPortable | hipHostMallocMapped,
                           0u /* hipStreamWriteValue64 has no flags yet */, hipMemPoolAttrReleaseThreshold,
                           hipMemLocationTypeDevice, hipMemAccessFlagsProtReadWrite> {
  static constexpr RuntimeNames names{};
  static constexpr common::DriverText text{
      "HIP", "hip", "hipDeviceGet", "(HIP C++ kernels need extern \"C\" to keep their names)",
      "HSACO (an AMD GPU code object) or AUTO", "AXL_SOURCE_LANGUAGE_HIP (2)", "hiprtc", "axl_program.hip",
      "hipDeviceAttributeMaxSharedMemoryPerBlock"};
  // HIP's kernel argument space is 4 KiB, as CUDA's was before 12.1.
  static constexpr common::ArgLimits kArgLimits{4096, 4096};
  static constexpr bool kHasCompiler = true;  // hiprtc
  // HIP has no multicast objects: the multicast-group slots stay NULL.
  static constexpr bool kHasMulticast = false;
  static constexpr int32_t kLanguage = AXL_SOURCE_LANGUAGE_HIP;

  // The vendor-only parts. module.cpp: HIP C++ compiled by hiprtc for the
  // device's gfx target, code objects through hipModuleLoadData, the test
  // kernels; device.cpp: the gfx architecture and capabilities.
  static common::CompileResult compile(Device& d, const std::string& source, const std::string& name,
                                       const std::vector<std::string>& options);
  static axl_status load_image(Device& d, const void* image, size_t size, const char* what, Module** out);
  static axl_status load_test_module(Device& d, Module** out);
  static axl_status describe(Device& d);

  // Discovery (driver_plugin.hpp, "probe"): census, open, then init at first use.
  static common::Census census() { return hip::census(); }
  static common::DriverProbe open(common::DriverLibrary& lib, Api& api) { return open_runtime(lib, api); }
  static common::DriverProbe init(const common::DriverLibrary& lib, Api& api, common::DriverProbe opened) {
    return init_runtime(lib, api, std::move(opened));
  }
  static const common::DriverErrors& errors() noexcept { return runtime_errors(); }
  // hipGetErrorName answers "unknown" strings rather than failing; the
  // error table has the fallback when the entry point is missing.
  static const char* error_name(const Api& a, Result r) noexcept {
    return a.get_error_name != nullptr ? a.get_error_name(r) : nullptr;
  }
  static const char* error_string(const Api& a, Result r) noexcept {
    return a.get_error_string != nullptr ? a.get_error_string(r) : nullptr;
  }

  // The device's "context" is its ordinal, made current by hipSetDevice;
  // nothing to retain or release.
  static Result retain(const Api&, Context* ctx, DeviceId dev) noexcept {
    *ctx = dev;
    return hipSuccess;
  }
  static void release(const Api&, DeviceId) noexcept {}

  // A device-memory pool of axl's own on `dev` (see DriverDevice::pool).
  static Result pool_create(const Api& a, Pool* pool, DeviceId dev) noexcept {
    hipMemPoolProps props{};
    props.allocType = hipMemAllocationTypePinned;
    props.handleTypes = hipMemHandleTypeNone;
    props.location.type = hipMemLocationTypeDevice;
    props.location.id = dev;
    return a.pool_create(pool, &props);
  }

  // No opt-in: on AMD GPUs hipModuleLaunchKernel accepts dynamic shared
  // memory (LDS) up to hipDeviceAttributeMaxSharedMemoryPerBlock as is, and
  // hipFuncSetAttribute takes a runtime-API function symbol, not a module's
  // hipFunction_t. allow_shared still checks the device's limit.
  static constexpr uint64_t kSharedWithoutOptIn = ~uint64_t{0};
  static Result allow_dynamic_shared(const Api&, Function, int, const char** call) noexcept {
    *call = "hipModuleLaunchKernel";
    return hipSuccess;
  }

  static DevicePtr ptr(axl_devaddr address) noexcept { return reinterpret_cast<DevicePtr>(address); }
  static axl_devaddr addr(DevicePtr p) noexcept { return reinterpret_cast<axl_devaddr>(p); }
  // hipMemsetD32Async takes the 32-bit pattern as an int.
  static int d32_pattern(uint32_t pattern) noexcept { return static_cast<int>(pattern); }

  static Result wait_geq(const Api& a, Stream s, DevicePtr address, uint64_t value) noexcept {
    // All 64 bits compared (the mask), ">=" as the flag's contract says.
    return a.stream_wait_value64(s, address, value, hipStreamWaitValueGte, ~uint64_t{0});
  }
  // hipLaunchHostFunc where the runtime has it (5.3+), else a stream
  // callback that calls `fn` (device.cpp).
  static Result host_fn(const Api& a, Stream s, axl_host_fn fn, void* user, const char** call) noexcept;

  static bool accepts_format(int32_t format) noexcept {
    return format == AXL_MODULE_FORMAT_AUTO || format == AXL_MODULE_FORMAT_HSACO;
  }
  static const char* image_kind(const common::CompileResult&) noexcept { return "code object"; }
};

using Plugin = common::DriverPlugin<HipDriver>;

}  // namespace axl::hip
