// hiprtc, HIP's run-time compiler, as common::RuntimeCompiler's hiprtc
// traits: dlopen at run time, entry points from one data table, nothing
// linked; independent of any device (it compiles for a named gfx target),
// so it is unit-tested on machines without a GPU.
//
// Library choice (docs/backends.md): AXL_HIPRTC_PATH if set (secure_getenv),
// else libhiprtc.so.7, .so.6, .so.5 (HIP 5.3 moved hiprtc out of the
// runtime), then libamdhip64.so.5, which carries hiprtc itself in HIP 5.2
// (Debian 12).
#pragma once

#include <hip/hiprtc.h>

#include <cstddef>
#include <iterator>
#include <string>
#include <vector>

#include "axl/common/runtime_compiler.hpp"

namespace axl::hip {

// libhiprtc.so.7, .6, .5, then libamdhip64.so.5 (hiprtc.cpp).
const std::vector<std::string>& hiprtc_library_names();

// X(member, name): hiprtc's entry points, all required.
#define AXL_HIPRTC_SYMBOLS(X)                            \
  X(get_error_string, hiprtcGetErrorString)              \
  X(version, hiprtcVersion)                              \
  X(create_program, hiprtcCreateProgram)                 \
  X(destroy_program, hiprtcDestroyProgram)               \
  X(compile_program, hiprtcCompileProgram)               \
  X(get_program_log_size, hiprtcGetProgramLogSize)       \
  X(get_program_log, hiprtcGetProgramLog)                \
  X(get_code_size, hiprtcGetCodeSize)                    \
  X(get_code, hiprtcGetCode)

struct HiprtcApi {
#define AXL_HIPRTC_MEMBER(member, name) decltype(&name) member = nullptr;
  AXL_HIPRTC_SYMBOLS(AXL_HIPRTC_MEMBER)
#undef AXL_HIPRTC_MEMBER
};

struct HiprtcTraits : common::CompilerTypes<HiprtcApi, hiprtcProgram, HIPRTC_SUCCESS> {
  static constexpr common::CompilerText text{"AXL_HIPRTC_PATH", "hiprtc", "hiprtc (the HIP run-time compiler)",
                                            "hiprtcCreateProgram"};
#define AXL_HIPRTC_ENTRY(member, name) {#name, 0, true, offsetof(HiprtcApi, member)},
  static constexpr common::DriverSymbol kSymbols[] = {AXL_HIPRTC_SYMBOLS(AXL_HIPRTC_ENTRY)};
#undef AXL_HIPRTC_ENTRY

  static const common::DriverSymbol* symbols(size_t* count) noexcept { return *count = std::size(kSymbols), kSymbols; }
  static const std::vector<std::string>& library_names() { return hiprtc_library_names(); }
  // The target id, e.g. "gfx90a:sramecc+:xnack-" (the device's gcnArchName).
  static bool is_arch_option(const std::string& o) {
    return o.rfind("--offload-arch", 0) == 0 || o.rfind("--gpu-architecture", 0) == 0 || o.rfind("-arch", 0) == 0;
  }
  static std::string arch_option(const std::string& arch) { return "--offload-arch=" + arch; }
  static bool is_user_error(Result r) noexcept {
    return r == HIPRTC_ERROR_COMPILATION || r == HIPRTC_ERROR_INVALID_OPTION;
  }
  static bool is_out_of_memory(Result r) noexcept { return r == HIPRTC_ERROR_OUT_OF_MEMORY; }
  // The code object hipModuleLoadData takes.
  template <class Fail>
  static common::CompileResult fetch_image(const Api& api, Program prog, common::CompileResult& out, Fail fail) {
    size_t size = 0;
    if (Result r = api.get_code_size(prog, &size); r != HIPRTC_SUCCESS) return fail(r, "hiprtcGetCodeSize");
    out.image.resize(size);
    if (Result r = api.get_code(prog, out.image.data()); r != HIPRTC_SUCCESS) return fail(r, "hiprtcGetCode");
    return out;
  }
};

// Hiprtc::instance().compile(source, name, options, "gfx90a").
using Hiprtc = common::RuntimeCompiler<HiprtcTraits>;

// The HIP C++ source of plugin.h's test kernels (AXL_TEST_KERNEL_*), the
// same contracts as the cuda backend's PTX: grid-stride loops over n.
extern const char* const kTestKernelsSource;

}  // namespace axl::hip
