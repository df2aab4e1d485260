// NVRTC, the CUDA run-time compiler, loaded like the driver: dlopen at run
// time, entry points from one data table, nothing linked. Independent of the
// driver and of any device, so it is unit-tested on machines without a GPU.
//
// Library choice (docs/backends.md): AXL_NVRTC_PATH if set (secure_getenv),
// else libnvrtc.so.13, .so.12, .so.11.2 (newest first), then the
// unversioned libnvrtc.so as a last resort. Unlike libcuda, the unversioned
// NVRTC name cannot be a stub: it is the toolkit's development link to a
// real compiler, so trying it last only helps.
#pragma once

#include <nvrtc.h>

#include <mutex>
#include <string>
#include <vector>

#include "axl/common/driver_library.hpp"
#include "axl/common/driver_plugin.hpp"
#include "axl/common/plugin_support.hpp"

namespace axl::cuda {

struct NvrtcApi {
  const char* (*nvrtcGetErrorString)(nvrtcResult) = nullptr;
  nvrtcResult (*nvrtcVersion)(int*, int*) = nullptr;
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                                    const char* const*) = nullptr;
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram*) = nullptr;
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char*) = nullptr;
};

using common::CompileResult;

class Nvrtc {
 public:
  // The process-wide instance (loaded on first use, never unloaded).
  static Nvrtc& instance();

  // Loads the library once; AXL_SUCCESS or BACKEND_UNAVAILABLE with `why`.
  axl_status load(std::string* why);
  const std::string& path() const noexcept { return lib_.path(); }
  // "13.0".
  std::string version() const;

  // Compiles `source` for `arch` ("sm_90" gives a cubin for that GPU;
  // "compute_90" gives PTX the driver JIT-compiles). `options` are passed
  // through; an -arch/--gpu-architecture among them replaces `arch`.
  CompileResult compile(const std::string& source, const std::string& name,
                        const std::vector<std::string>& options, const std::string& arch);

 private:
  std::once_flag once_;
  axl_status status_ = AXL_SUCCESS;
  std::string why_;
  common::DriverLibrary lib_;
  NvrtcApi api_;
};

}  // namespace axl::cuda
