#include "nvrtc.hpp"

#include <cstddef>

#include "axl/common/driver_symbols.hpp"

namespace axl::cuda {

namespace {

#define AXL_NVRTC_ENTRY(name) {#name, 0, true, offsetof(NvrtcApi, name)}
constexpr common::DriverSymbol kNvrtcSymbols[] = {
    AXL_NVRTC_ENTRY(nvrtcGetErrorString),    AXL_NVRTC_ENTRY(nvrtcVersion),
    AXL_NVRTC_ENTRY(nvrtcCreateProgram),     AXL_NVRTC_ENTRY(nvrtcDestroyProgram),
    AXL_NVRTC_ENTRY(nvrtcCompileProgram),    AXL_NVRTC_ENTRY(nvrtcGetPTXSize),
    AXL_NVRTC_ENTRY(nvrtcGetPTX),            AXL_NVRTC_ENTRY(nvrtcGetCUBINSize),
    AXL_NVRTC_ENTRY(nvrtcGetCUBIN),          AXL_NVRTC_ENTRY(nvrtcGetProgramLogSize),
    AXL_NVRTC_ENTRY(nvrtcGetProgramLog),
};
#undef AXL_NVRTC_ENTRY

bool is_arch_option(const std::string& o) {
  return o.rfind("-arch", 0) == 0 || o.rfind("--gpu-architecture", 0) == 0;
}

}  // namespace

Nvrtc& Nvrtc::instance() {
  alignas(Nvrtc) static unsigned char storage[sizeof(Nvrtc)];
  static Nvrtc* const n = ::new (static_cast<void*>(storage)) Nvrtc();
  return *n;
}

axl_status Nvrtc::load(std::string* why) {
  std::call_once(once_, [this] {
    std::string detail;
    if (!lib_.open("AXL_NVRTC_PATH",
                   {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}, &detail)) {
      status_ = AXL_ERROR_BACKEND_UNAVAILABLE;
      why_ = "NVRTC (the CUDA run-time compiler) is not available: " + detail;
      return;
    }
    const common::SymbolResolution r = common::resolve_driver_symbols(
        kNvrtcSymbols, std::size(kNvrtcSymbols), &api_,
        [this](const char* name, int, std::string*) { return lib_.symbol(name); });
    if (!r.ok()) {
      status_ = AXL_ERROR_BACKEND_UNAVAILABLE;
      why_ = "NVRTC at " + lib_.path() + " lacks " + common::join(r.missing_required);
    }
  });
  if (why != nullptr) *why = why_;
  return status_;
}

std::string Nvrtc::version() const {
  int major = 0, minor = 0;
  if (api_.nvrtcVersion == nullptr || api_.nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "?";
  return std::to_string(major) + "." + std::to_string(minor);
}

CompileResult Nvrtc::compile(const std::string& source, const std::string& name,
                             const std::vector<std::string>& options, const std::string& arch) {
  CompileResult out;
  if (axl_status s = load(&out.message); s != AXL_SUCCESS) {
    out.status = s;
    return out;
  }
  auto nv_fail = [&](nvrtcResult r, const char* call) {
    out.status = r == NVRTC_ERROR_OUT_OF_MEMORY ? AXL_ERROR_OUT_OF_HOST_MEMORY : AXL_ERROR_INTERNAL;
    out.message = common::str(call, " failed: ", api_.nvrtcGetErrorString(r), " (", static_cast<int>(r), ")");
    return out;
  };
  nvrtcProgram prog = nullptr;
  if (nvrtcResult r = api_.nvrtcCreateProgram(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr);
      r != NVRTC_SUCCESS)
    return nv_fail(r, "nvrtcCreateProgram");
  struct Destroy {
    const NvrtcApi& api;
    nvrtcProgram& prog;
    ~Destroy() { api.nvrtcDestroyProgram(&prog); }
  } destroy{api_, prog};

  std::vector<std::string> all = options;
  bool has_arch = false;
  for (const std::string& o : options) has_arch = has_arch || is_arch_option(o);
  if (!has_arch) all.push_back("--gpu-architecture=" + arch);
  std::vector<const char*> argv;
  for (const std::string& o : all) argv.push_back(o.c_str());

  const nvrtcResult cr = api_.nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  if (api_.nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    out.log.resize(log_size);
    if (api_.nvrtcGetProgramLog(prog, out.log.data()) == NVRTC_SUCCESS)
      out.log.resize(log_size - 1);  // drop the NUL
    else
      out.log.clear();
  }
  if (cr != NVRTC_SUCCESS) {
    std::string options_text;
    for (const std::string& o : all) options_text += " " + o;
    out.status = cr == NVRTC_ERROR_COMPILATION || cr == NVRTC_ERROR_INVALID_OPTION
                     ? AXL_ERROR_INVALID_ARGUMENT
                     : AXL_ERROR_INTERNAL;
    out.message = common::str("NVRTC ", version(), " could not compile '", name, "' (options:",
                              options_text, "): ", api_.nvrtcGetErrorString(cr),
                              out.log.empty() ? "" : "\n", out.log);
    return out;
  }
  // A real-architecture target gives a cubin; a virtual one (compute_XY)
  // gives PTX only, and nvrtcGetCUBINSize answers 0.
  size_t size = 0;
  if (api_.nvrtcGetCUBINSize(prog, &size) == NVRTC_SUCCESS && size > 0) {
    out.image.resize(size);
    if (nvrtcResult r = api_.nvrtcGetCUBIN(prog, out.image.data()); r != NVRTC_SUCCESS)
      return nv_fail(r, "nvrtcGetCUBIN");
    return out;
  }
  if (nvrtcResult r = api_.nvrtcGetPTXSize(prog, &size); r != NVRTC_SUCCESS)
    return nv_fail(r, "nvrtcGetPTXSize");
  out.image.resize(size);
  if (nvrtcResult r = api_.nvrtcGetPTX(prog, out.image.data()); r != NVRTC_SUCCESS)
    return nv_fail(r, "nvrtcGetPTX");
  out.is_ptx = true;
  return out;
}

}  // namespace axl::cuda
