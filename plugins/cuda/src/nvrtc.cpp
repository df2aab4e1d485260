// NVRTC's entry points and library names (nvrtc.hpp).
#include "nvrtc.hpp"

#include <cstddef>

namespace axl::cuda {

namespace {

#define AXL_NVRTC_ENTRY(member, name) {#name, 0, true, offsetof(NvrtcApi, member)}
constexpr common::DriverSymbol kNvrtcSymbols[] = {
    AXL_NVRTC_ENTRY(get_error_string, nvrtcGetErrorString),
    AXL_NVRTC_ENTRY(version, nvrtcVersion),
    AXL_NVRTC_ENTRY(create_program, nvrtcCreateProgram),
    AXL_NVRTC_ENTRY(destroy_program, nvrtcDestroyProgram),
    AXL_NVRTC_ENTRY(compile_program, nvrtcCompileProgram),
    AXL_NVRTC_ENTRY(get_ptx_size, nvrtcGetPTXSize),
    AXL_NVRTC_ENTRY(get_ptx, nvrtcGetPTX),
    AXL_NVRTC_ENTRY(get_cubin_size, nvrtcGetCUBINSize),
    AXL_NVRTC_ENTRY(get_cubin, nvrtcGetCUBIN),
    AXL_NVRTC_ENTRY(get_program_log_size, nvrtcGetProgramLogSize),
    AXL_NVRTC_ENTRY(get_program_log, nvrtcGetProgramLog),
};
#undef AXL_NVRTC_ENTRY

}  // namespace

const common::DriverSymbol* NvrtcTraits::symbols(size_t* count) noexcept {
  *count = std::size(kNvrtcSymbols);
  return kNvrtcSymbols;
}

const std::vector<std::string>& NvrtcTraits::library_names() {
  static const std::vector<std::string> names = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2",
                                                 "libnvrtc.so"};
  return names;
}

}  // namespace axl::cuda
