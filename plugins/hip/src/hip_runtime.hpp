// The HIP runtime as this plugin uses it: the one table of entry points
// (generic member, HIP name, required or optional), the struct of function
// pointers it fills, and loading/initialising the runtime. Types come from
// the HIP headers (hip_runtime_api.h, the prototypes of the version built
// against); nothing links against libamdhip64.
#pragma once

#include <hip/hip_runtime_api.h>

#include "axl/common/census.hpp"
#include "axl/common/driver_errors.hpp"
#include "axl/common/driver_library.hpp"
#include "axl/common/driver_plugin.hpp"
#include "axl/common/driver_symbols.hpp"

namespace axl::hip {

// X(member, name, required): every entry point, once. The member is the
// operation's generic name, the one common::DriverPlugin calls for every
// driver-API backend (cuda_driver.hpp lists the CUDA calls behind the same
// members). Optional: stream-ordered allocation (HIP 5.1+),
// hipLaunchHostFunc (HIP 5.3+; hipStreamAddCallback stands in) and the
// 64-bit stream memory operations (completion flags).
#define AXL_HIP_RUNTIME_SYMBOLS(X)                                   \
  X(init, hipInit, true)                                             \
  X(driver_get_version, hipDriverGetVersion, true)                   \
  X(get_error_name, hipGetErrorName, true)                           \
  X(get_error_string, hipGetErrorString, true)                       \
  X(device_get_count, hipGetDeviceCount, true)                       \
  X(device_get, hipDeviceGet, true)                                  \
  X(device_get_name, hipDeviceGetName, true)                         \
  X(device_get_attribute, hipDeviceGetAttribute, true)               \
  X(get_device_properties, hipGetDeviceProperties, true)             \
  X(device_total_mem, hipDeviceTotalMem, true)                       \
  X(get_current, hipGetDevice, true)                                 \
  X(set_current, hipSetDevice, true)                                 \
  X(ctx_synchronize, hipDeviceSynchronize, true)                     \
  X(device_can_access_peer, hipDeviceCanAccessPeer, true)            \
  X(enable_peer_access, hipDeviceEnablePeerAccess, true)             \
  X(mem_get_info, hipMemGetInfo, true)                               \
  X(malloc, hipMalloc, true)                                         \
  X(free, hipFree, true)                                             \
  X(malloc_from_pool, hipMallocFromPoolAsync, false)                 \
  X(free_async, hipFreeAsync, false)                                 \
  X(pool_create, hipMemPoolCreate, false)                            \
  X(pool_destroy, hipMemPoolDestroy, false)                          \
  X(pool_trim, hipMemPoolTrimTo, false)                              \
  X(pool_set_attribute, hipMemPoolSetAttribute, false)               \
  X(pool_set_access, hipMemPoolSetAccess, false)                     \
  X(host_alloc, hipHostMalloc, true)                                 \
  X(host_free, hipHostFree, true)                                    \
  X(host_get_device_pointer, hipHostGetDevicePointer, true)          \
  X(stream_create, hipStreamCreateWithFlags, true)                   \
  X(stream_destroy, hipStreamDestroy, true)                          \
  X(stream_synchronize, hipStreamSynchronize, true)                  \
  X(stream_wait_event, hipStreamWaitEvent, true)                     \
  X(stream_add_callback, hipStreamAddCallback, true)                 \
  X(launch_host_func, hipLaunchHostFunc, false)                      \
  X(stream_wait_value64, hipStreamWaitValue64, false)                \
  X(stream_write_value64, hipStreamWriteValue64, false)              \
  X(copy_htod, hipMemcpyHtoDAsync, true)                             \
  X(copy_dtoh, hipMemcpyDtoHAsync, true)                             \
  X(copy_dtod, hipMemcpyDtoDAsync, true)                             \
  X(copy_peer, hipMemcpyPeerAsync, true)                             \
  X(memset_d8, hipMemsetD8Async, true)                               \
  X(memset_d16, hipMemsetD16Async, true)                             \
  X(memset_d32, hipMemsetD32Async, true)                             \
  X(event_create, hipEventCreateWithFlags, true)                     \
  X(event_destroy, hipEventDestroy, true)                            \
  X(event_record, hipEventRecord, true)                              \
  X(event_synchronize, hipEventSynchronize, true)                    \
  X(event_query, hipEventQuery, true)                                \
  X(event_elapsed_time, hipEventElapsedTime, true)                   \
  X(module_load_data, hipModuleLoadData, true)                       \
  X(module_unload, hipModuleUnload, true)                            \
  X(module_get_function, hipModuleGetFunction, true)                 \
  X(launch_kernel, hipModuleLaunchKernel, true)

// hipMallocFromPoolAsync's C prototype, declared again here so that the
// unqualified name below finds it alone: the headers also overload it for
// C++ outside what __HIP_DISABLE_CPP_FUNCTIONS__ turns off. Never called
// directly.
extern "C" hipError_t hipMallocFromPoolAsync(void** dev_ptr, size_t size, hipMemPool_t mem_pool,
                                             hipStream_t stream);

// The resolved entry points, with the prototypes of the headers built
// against; NULL for an optional one the runtime lacks.
struct RuntimeApi {
#define AXL_HIP_MEMBER(member, name, required) decltype(&name) member = nullptr;
  AXL_HIP_RUNTIME_SYMBOLS(AXL_HIP_MEMBER)
#undef AXL_HIP_MEMBER
};

// The runtime's name of each entry point, for messages and launch traces.
struct RuntimeNames {
#define AXL_HIP_NAME(member, name, required) const char* member = #name;
  AXL_HIP_RUNTIME_SYMBOLS(AXL_HIP_NAME)
#undef AXL_HIP_NAME
};

// The hipError_t codes this plugin maps, with their axl statuses.
const common::DriverErrors& runtime_errors() noexcept;

// The library names tried, newest first, when AXL_HIP_RUNTIME_PATH is unset.
inline const std::vector<std::string>& runtime_library_names() {
  static const std::vector<std::string> names = {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"};
  return names;
}

// Loads the library (AXL_HIP_RUNTIME_PATH or the names above) and checks
// that it exports hipInit: nothing else, since every HIP call initialises
// the runtime. Fills `lib`.
common::DriverProbe open_runtime(common::DriverLibrary& lib, RuntimeApi& api);
// hipInit, then the table through hipGetProcAddress where the runtime
// exports it (HIP 6.2+) and dlsym otherwise, then counts devices. Fills `api`.
common::DriverProbe init_runtime(const common::DriverLibrary& lib, RuntimeApi& api, common::DriverProbe opened);
// The AMD GPUs HIP will see, counted from the KFD topology (census.cpp).
common::Census census();

}  // namespace axl::hip
