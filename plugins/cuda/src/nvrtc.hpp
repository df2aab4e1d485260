// NVRTC, the CUDA run-time compiler, as common::RuntimeCompiler's NVRTC
// traits: loaded like the driver (dlopen at run time, entry points from one
// data table, nothing linked), independent of the driver and of any device,
// so it is unit-tested on machines without a GPU.
//
// Library choice (docs/backends.md): AXL_NVRTC_PATH if set (secure_getenv),
// else libnvrtc.so.13, .so.12, .so.11.2 (newest first), then the
// unversioned libnvrtc.so as a last resort. Unlike libcuda, the unversioned
// NVRTC name cannot be a stub: it is the toolkit's development link to a
// real compiler, so trying it last only helps.
#pragma once

#include <nvrtc.h>

#include <string>
#include <vector>

#include "axl/common/runtime_compiler.hpp"

namespace axl::cuda {

struct NvrtcApi {
  const char* (*get_error_string)(nvrtcResult) = nullptr;
  nvrtcResult (*version)(int*, int*) = nullptr;
  nvrtcResult (*create_program)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                                const char* const*) = nullptr;
  nvrtcResult (*destroy_program)(nvrtcProgram*) = nullptr;
  nvrtcResult (*compile_program)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*get_ptx_size)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*get_ptx)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*get_cubin_size)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*get_cubin)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*get_program_log_size)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*get_program_log)(nvrtcProgram, char*) = nullptr;
};

struct NvrtcTraits : common::CompilerTypes<NvrtcApi, nvrtcProgram, NVRTC_SUCCESS> {
  static constexpr common::CompilerText text{"AXL_NVRTC_PATH", "NVRTC", "NVRTC (the CUDA run-time compiler)",
                                            "nvrtcCreateProgram"};

  static const common::DriverSymbol* symbols(size_t* count) noexcept;
  static const std::vector<std::string>& library_names();
  // "sm_90" gives a cubin for that GPU; "compute_90" PTX the driver JIT-compiles.
  static bool is_arch_option(const std::string& o) {
    return o.rfind("-arch", 0) == 0 || o.rfind("--gpu-architecture", 0) == 0;
  }
  static std::string arch_option(const std::string& arch) { return "--gpu-architecture=" + arch; }
  static bool is_user_error(Result r) noexcept {
    return r == NVRTC_ERROR_COMPILATION || r == NVRTC_ERROR_INVALID_OPTION;
  }
  static bool is_out_of_memory(Result r) noexcept { return r == NVRTC_ERROR_OUT_OF_MEMORY; }
  // The cubin, or PTX (NUL-terminated, is_ptx) for a virtual architecture.
  template <class Fail>
  static common::CompileResult fetch_image(const Api& api, Program prog, common::CompileResult& out, Fail fail);
};

// Nvrtc::instance().compile(source, name, options, "sm_90").
using Nvrtc = common::RuntimeCompiler<NvrtcTraits>;
using common::CompileResult;

template <class Fail>
common::CompileResult NvrtcTraits::fetch_image(const Api& api, Program prog, common::CompileResult& out,
                                               Fail fail) {
  // A real-architecture target gives a cubin; a virtual one (compute_XY)
  // gives PTX only, and nvrtcGetCUBINSize answers 0.
  size_t size = 0;
  if (api.get_cubin_size(prog, &size) == NVRTC_SUCCESS && size > 0) {
    out.image.resize(size);
    if (nvrtcResult r = api.get_cubin(prog, out.image.data()); r != NVRTC_SUCCESS) return fail(r, "nvrtcGetCUBIN");
    return out;
  }
  if (nvrtcResult r = api.get_ptx_size(prog, &size); r != NVRTC_SUCCESS) return fail(r, "nvrtcGetPTXSize");
  out.image.resize(size);
  if (nvrtcResult r = api.get_ptx(prog, out.image.data()); r != NVRTC_SUCCESS) return fail(r, "nvrtcGetPTX");
  out.is_ptx = true;
  return out;
}

}  // namespace axl::cuda
