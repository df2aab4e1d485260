// The CUDA Driver API as this plugin uses it: the one table of entry points
// (name, pinned API version, required or optional), the struct of function
// pointers it fills, and loading/initialising the driver. Types come from
// the toolkit's cuda.h and cudaTypedefs.h; nothing links against libcuda.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <string>

#include "axl/common/census.hpp"
#include "axl/common/driver_errors.hpp"
#include "axl/common/driver_library.hpp"
#include "axl/common/driver_plugin.hpp"
#include "axl/common/driver_symbols.hpp"

namespace axl::cuda {

// The oldest driver accepted: 12.0 brought cuGetProcAddress_v2 (with the
// symbol status) and every required entry point below at its pinned
// version; the multicast ones (12.1) are optional.
constexpr int kMinDriverVersion = 12000;

// X(member, name, version, required): every entry point, once. The member
// is the operation's generic name, the one common::DriverPlugin calls for
// every driver-API backend; the version pins the prototype (the
// PFN_<name>_v<version> typedef of cudaTypedefs.h) that cuGetProcAddress
// returns, so a newer driver never hands out a function with another
// signature.
#define AXL_CUDA_DRIVER_SYMBOLS(X)                  \
  X(init, cuInit, 2000, true)                                         \
  X(driver_get_version, cuDriverGetVersion, 2020, true)               \
  X(get_error_name, cuGetErrorName, 6000, true)                       \
  X(get_error_string, cuGetErrorString, 6000, true)                   \
  X(device_get, cuDeviceGet, 2000, true)                              \
  X(device_get_count, cuDeviceGetCount, 2000, true)                   \
  X(device_get_name, cuDeviceGetName, 2000, true)                     \
  X(device_get_attribute, cuDeviceGetAttribute, 2000, true)           \
  X(device_total_mem, cuDeviceTotalMem, 3020, true)                   \
  X(device_can_access_peer, cuDeviceCanAccessPeer, 4000, true)        \
  X(primary_ctx_retain, cuDevicePrimaryCtxRetain, 7000, true)         \
  X(primary_ctx_release, cuDevicePrimaryCtxRelease, 11000, true)      \
  X(get_current, cuCtxGetCurrent, 4000, true)                         \
  X(set_current, cuCtxSetCurrent, 4000, true)                         \
  X(enable_peer_access, cuCtxEnablePeerAccess, 4000, true)            \
  X(ctx_synchronize, cuCtxSynchronize, 2000, true)                    \
  X(mem_get_info, cuMemGetInfo, 3020, true)                           \
  X(malloc, cuMemAlloc, 3020, true)                                   \
  X(free, cuMemFree, 3020, true)                                      \
  X(malloc_from_pool, cuMemAllocFromPoolAsync, 11020, false)          \
  X(free_async, cuMemFreeAsync, 11020, false)                         \
  X(pool_create, cuMemPoolCreate, 11020, false)                       \
  X(pool_destroy, cuMemPoolDestroy, 11020, false)                     \
  X(pool_trim, cuMemPoolTrimTo, 11020, false)                         \
  X(pool_set_attribute, cuMemPoolSetAttribute, 11020, false)          \
  X(pool_set_access, cuMemPoolSetAccess, 11020, false)                \
  X(host_alloc, cuMemHostAlloc, 2020, true)                           \
  X(host_free, cuMemFreeHost, 2000, true)                             \
  X(host_get_device_pointer, cuMemHostGetDevicePointer, 3020, true)   \
  X(stream_create, cuStreamCreate, 2000, true)                        \
  X(stream_destroy, cuStreamDestroy, 4000, true)                      \
  X(stream_synchronize, cuStreamSynchronize, 2000, true)              \
  X(stream_wait_event, cuStreamWaitEvent, 3020, true)                 \
  X(copy_htod, cuMemcpyHtoDAsync, 3020, true)                         \
  X(copy_dtoh, cuMemcpyDtoHAsync, 3020, true)                         \
  X(copy_dtod, cuMemcpyDtoDAsync, 3020, true)                         \
  X(copy_peer, cuMemcpyPeerAsync, 4000, true)                         \
  X(memset_d8, cuMemsetD8Async, 3020, true)                           \
  X(memset_d16, cuMemsetD16Async, 3020, true)                         \
  X(memset_d32, cuMemsetD32Async, 3020, true)                         \
  X(event_create, cuEventCreate, 2000, true)                          \
  X(event_destroy, cuEventDestroy, 4000, true)                        \
  X(event_record, cuEventRecord, 2000, true)                          \
  X(event_synchronize, cuEventSynchronize, 2000, true)                \
  X(event_query, cuEventQuery, 2000, true)                            \
  X(event_elapsed_time, cuEventElapsedTime, 2000, true)               \
  X(launch_host_func, cuLaunchHostFunc, 10000, true)                  \
  X(stream_wait_value64, cuStreamWaitValue64, 11070, false)           \
  X(stream_write_value64, cuStreamWriteValue64, 11070, false)         \
  X(module_load_data, cuModuleLoadDataEx, 2010, true)                 \
  X(module_unload, cuModuleUnload, 2000, true)                        \
  X(module_get_function, cuModuleGetFunction, 2000, true)             \
  X(func_set_attribute, cuFuncSetAttribute, 9000, true)               \
  X(launch_kernel, cuLaunchKernel, 4000, true)                       \
  /* Multicast groups (multicast_* slots): virtual memory management and \
   * multicast objects, optional (a driver without them has no groups). */ \
  X(mem_create, cuMemCreate, 10020, false)                            \
  X(mem_release, cuMemRelease, 10020, false)                          \
  X(mem_address_reserve, cuMemAddressReserve, 10020, false)           \
  X(mem_address_free, cuMemAddressFree, 10020, false)                 \
  X(mem_map, cuMemMap, 10020, false)                                  \
  X(mem_unmap, cuMemUnmap, 10020, false)                              \
  X(mem_set_access, cuMemSetAccess, 10020, false)                     \
  X(mc_get_granularity, cuMulticastGetGranularity, 12010, false)      \
  X(mc_create, cuMulticastCreate, 12010, false)                       \
  X(mc_add_device, cuMulticastAddDevice, 12010, false)                \
  X(mc_bind_mem, cuMulticastBindMem, 12010, false)                    \
  X(mc_unbind, cuMulticastUnbind, 12010, false)

// The resolved entry points; NULL for an optional one the driver lacks.
struct DriverApi {
#define AXL_CUDA_MEMBER(member, name, version, required) PFN_##name##_v##version member = nullptr;
  AXL_CUDA_DRIVER_SYMBOLS(AXL_CUDA_MEMBER)
#undef AXL_CUDA_MEMBER
};

// The driver's name of each entry point, for messages and launch traces.
struct DriverNames {
#define AXL_CUDA_NAME(member, name, version, required) const char* member = #name;
  AXL_CUDA_DRIVER_SYMBOLS(AXL_CUDA_NAME)
#undef AXL_CUDA_NAME
};

// The table resolve_driver_symbols walks (driver.cpp).
const common::DriverSymbol* driver_symbols(size_t* count) noexcept;

// The CUresult codes this plugin maps, with their axl statuses.
const common::DriverErrors& driver_errors() noexcept;

using common::DriverProbe;

// Loads the library (AXL_CUDA_DRIVER_PATH or libcuda.so.1) and resolves the
// table through cuGetProcAddress_v2, checking the driver's version: cheap,
// and it initialises nothing (no cuInit). Fills `lib` and `api`.
DriverProbe open_driver(common::DriverLibrary& lib, DriverApi& api);
// cuInit and cuDeviceGetCount, after open_driver succeeded (`opened`).
DriverProbe init_driver(const common::DriverLibrary& lib, const DriverApi& api, DriverProbe opened);
// The devices CUDA will see, counted without initialising it (census.cpp).
common::Census census();

}  // namespace axl::cuda
