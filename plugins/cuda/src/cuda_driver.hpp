// The CUDA Driver API as this plugin uses it: the one table of entry points
// (name, pinned API version, required or optional), the struct of function
// pointers it fills, and loading/initialising the driver. Types come from
// the toolkit's cuda.h and cudaTypedefs.h; nothing links against libcuda.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <string>

#include "axl/common/driver_errors.hpp"
#include "axl/common/driver_library.hpp"
#include "axl/common/driver_symbols.hpp"

namespace axl::cuda {

// The oldest driver accepted: 12.0 brought cuGetProcAddress_v2 (with the
// symbol status) and every entry point below at its pinned version.
constexpr int kMinDriverVersion = 12000;

// X(name, version, required): every entry point, once. The version pins the
// prototype (the PFN_<name>_v<version> typedef of cudaTypedefs.h) that
// cuGetProcAddress returns, so a newer driver never hands out a function
// with another signature.
#define AXL_CUDA_DRIVER_SYMBOLS(X)                  \
  X(cuInit, 2000, true)                             \
  X(cuDriverGetVersion, 2020, true)                 \
  X(cuGetErrorName, 6000, true)                     \
  X(cuGetErrorString, 6000, true)                   \
  X(cuDeviceGet, 2000, true)                        \
  X(cuDeviceGetCount, 2000, true)                   \
  X(cuDeviceGetName, 2000, true)                    \
  X(cuDeviceGetAttribute, 2000, true)               \
  X(cuDeviceTotalMem, 3020, true)                   \
  X(cuDeviceCanAccessPeer, 4000, true)              \
  X(cuDevicePrimaryCtxRetain, 7000, true)           \
  X(cuDevicePrimaryCtxRelease, 11000, true)         \
  X(cuCtxGetCurrent, 4000, true)                    \
  X(cuCtxSetCurrent, 4000, true)                    \
  X(cuCtxEnablePeerAccess, 4000, true)              \
  X(cuCtxSynchronize, 2000, true)                   \
  X(cuMemGetInfo, 3020, true)                       \
  X(cuMemAlloc, 3020, true)                         \
  X(cuMemFree, 3020, true)                          \
  X(cuMemAllocAsync, 11020, false)                  \
  X(cuMemFreeAsync, 11020, false)                   \
  X(cuDeviceGetDefaultMemPool, 11020, false)        \
  X(cuMemPoolSetAttribute, 11020, false)            \
  X(cuMemPoolSetAccess, 11020, false)               \
  X(cuMemHostAlloc, 2020, true)                     \
  X(cuMemFreeHost, 2000, true)                      \
  X(cuMemHostGetDevicePointer, 3020, true)          \
  X(cuStreamCreate, 2000, true)                     \
  X(cuStreamDestroy, 4000, true)                    \
  X(cuStreamSynchronize, 2000, true)                \
  X(cuStreamWaitEvent, 3020, true)                  \
  X(cuMemcpyHtoDAsync, 3020, true)                  \
  X(cuMemcpyDtoHAsync, 3020, true)                  \
  X(cuMemcpyDtoDAsync, 3020, true)                  \
  X(cuMemcpyPeerAsync, 4000, true)                  \
  X(cuMemsetD8Async, 3020, true)                    \
  X(cuMemsetD16Async, 3020, true)                   \
  X(cuMemsetD32Async, 3020, true)                   \
  X(cuEventCreate, 2000, true)                      \
  X(cuEventDestroy, 4000, true)                     \
  X(cuEventRecord, 2000, true)                      \
  X(cuEventSynchronize, 2000, true)                 \
  X(cuEventQuery, 2000, true)                       \
  X(cuEventElapsedTime, 2000, true)                 \
  X(cuLaunchHostFunc, 10000, true)                  \
  X(cuStreamWaitValue64, 11070, false)              \
  X(cuStreamWriteValue64, 11070, false)             \
  X(cuModuleLoadDataEx, 2010, true)                 \
  X(cuModuleUnload, 2000, true)                     \
  X(cuModuleGetFunction, 2000, true)                \
  X(cuLaunchKernel, 4000, true)

// The resolved entry points; NULL for an optional one the driver lacks.
struct DriverApi {
#define AXL_CUDA_MEMBER(name, version, required) PFN_##name##_v##version name = nullptr;
  AXL_CUDA_DRIVER_SYMBOLS(AXL_CUDA_MEMBER)
#undef AXL_CUDA_MEMBER
};

// The table resolve_driver_symbols walks (driver.cpp).
const common::DriverSymbol* driver_symbols(size_t* count) noexcept;

// The CUresult codes this plugin maps, with their axl statuses.
const common::DriverErrors& driver_errors() noexcept;

// What loading and initialising the driver found: ok, or the status and
// message that make the backend unavailable.
struct DriverProbe {
  axl_status status = AXL_SUCCESS;
  int64_t native_code = 0;
  std::string native_name;
  std::string message;
  int driver_version = 0;  // cuDriverGetVersion, e.g. 12080
  int device_count = 0;
};

// Loads the library (AXL_CUDA_DRIVER_PATH or libcuda.so.1), resolves the
// table through cuGetProcAddress_v2, calls cuInit and counts devices.
// Fills `lib` and `api`.
DriverProbe load_driver(common::DriverLibrary& lib, DriverApi& api);

}  // namespace axl::cuda
