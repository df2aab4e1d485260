// Loading the HIP runtime: the symbol table, the result-code table, and the
// probe that decides whether the backend can run here.
#include <cstddef>

#include "hip_runtime.hpp"

namespace axl::hip {

namespace {

// hipGetProcAddress (HIP 6.2+), declared here because the headers built
// against may predate it. The version asks for the prototypes of those
// headers (HIP_VERSION), the ones RuntimeApi was compiled with.
using GetProcAddress = hipError_t (*)(const char* symbol, void** fn, int hip_version, uint64_t flags,
                                      int* symbol_status);

#define AXL_HIP_ENTRY(member, name, required) {#name, HIP_VERSION, required, offsetof(RuntimeApi, member)},
constexpr common::DriverSymbol kSymbols[] = {AXL_HIP_RUNTIME_SYMBOLS(AXL_HIP_ENTRY)};
#undef AXL_HIP_ENTRY

// The codes worth a name of our own (a broken library cannot name its
// errors), and the status each means for the user.
#define AXL_HIP_CODE(code, status) {code, #code, status}
constexpr common::DriverErrorCode kErrors[] = {
    AXL_HIP_CODE(hipSuccess, AXL_SUCCESS),
    AXL_HIP_CODE(hipErrorInvalidValue, AXL_ERROR_INVALID_ARGUMENT),
    AXL_HIP_CODE(hipErrorOutOfMemory, AXL_ERROR_OUT_OF_DEVICE_MEMORY),
    AXL_HIP_CODE(hipErrorNotInitialized, AXL_ERROR_BACKEND_UNAVAILABLE),
    AXL_HIP_CODE(hipErrorDeinitialized, AXL_ERROR_DEVICE_LOST),
    AXL_HIP_CODE(hipErrorInvalidDevicePointer, AXL_ERROR_INVALID_ARGUMENT),
    AXL_HIP_CODE(hipErrorInsufficientDriver, AXL_ERROR_BACKEND_UNAVAILABLE),
    AXL_HIP_CODE(hipErrorNoDevice, AXL_ERROR_BACKEND_UNAVAILABLE),
    AXL_HIP_CODE(hipErrorInvalidDevice, AXL_ERROR_INVALID_ARGUMENT),
    AXL_HIP_CODE(hipErrorInvalidImage, AXL_ERROR_INVALID_ARGUMENT),
    AXL_HIP_CODE(hipErrorInvalidContext, AXL_ERROR_INVALID_STATE),
    AXL_HIP_CODE(hipErrorNoBinaryForGpu, AXL_ERROR_INVALID_ARGUMENT),
    AXL_HIP_CODE(hipErrorPeerAccessUnsupported, AXL_ERROR_UNSUPPORTED),
    AXL_HIP_CODE(hipErrorInvalidKernelFile, AXL_ERROR_INVALID_ARGUMENT),
    AXL_HIP_CODE(hipErrorSharedObjectInitFailed, AXL_ERROR_INVALID_ARGUMENT),
    AXL_HIP_CODE(hipErrorFileNotFound, AXL_ERROR_NOT_FOUND),
    AXL_HIP_CODE(hipErrorInvalidHandle, AXL_ERROR_INVALID_HANDLE),
    AXL_HIP_CODE(hipErrorIllegalState, AXL_ERROR_INVALID_STATE),
    AXL_HIP_CODE(hipErrorNotFound, AXL_ERROR_NOT_FOUND),
    AXL_HIP_CODE(hipErrorNotReady, AXL_ERROR_NOT_READY),
    AXL_HIP_CODE(hipErrorIllegalAddress, AXL_ERROR_DEVICE_LOST),
    AXL_HIP_CODE(hipErrorLaunchOutOfResources, AXL_ERROR_INVALID_ARGUMENT),
    AXL_HIP_CODE(hipErrorLaunchTimeOut, AXL_ERROR_DEVICE_LOST),
    AXL_HIP_CODE(hipErrorPeerAccessAlreadyEnabled, AXL_ERROR_INVALID_STATE),
    AXL_HIP_CODE(hipErrorPeerAccessNotEnabled, AXL_ERROR_INVALID_STATE),
    AXL_HIP_CODE(hipErrorContextIsDestroyed, AXL_ERROR_DEVICE_LOST),
    AXL_HIP_CODE(hipErrorAssert, AXL_ERROR_DEVICE_LOST),
    AXL_HIP_CODE(hipErrorLaunchFailure, AXL_ERROR_DEVICE_LOST),
    AXL_HIP_CODE(hipErrorNotSupported, AXL_ERROR_UNSUPPORTED),
    AXL_HIP_CODE(hipErrorUnknown, AXL_ERROR_INTERNAL),
    AXL_HIP_CODE(hipErrorRuntimeOther, AXL_ERROR_INTERNAL),
};
#undef AXL_HIP_CODE

const common::DriverErrors kErrorMap(kErrors, std::size(kErrors), AXL_ERROR_INTERNAL);

// The runtime's name of `r` when it can say, else ours.
std::string name_of(const RuntimeApi& api, hipError_t r) {
  const char* name = api.get_error_name != nullptr ? api.get_error_name(r) : nullptr;
  return name != nullptr && *name != '\0' ? name : kErrorMap.name_of(r);
}

// "hipErrorNoDevice (100)".
std::string code_text(const RuntimeApi& api, hipError_t r) {
  return name_of(api, r) + " (" + std::to_string(static_cast<int>(r)) + ")";
}

// What a user should know about an initialisation error.
std::string hint_for(hipError_t r) {
  if (r == hipErrorNoDevice)
    return ": no AMD GPU is visible (check the amdgpu kernel driver, access to /dev/kfd and "
           "HIP_VISIBLE_DEVICES)";
  return "";
}

// 50221153 -> "5.2.21153" (HIP_VERSION's encoding).
std::string version_text(int v) {
  return std::to_string(v / 10000000) + "." + std::to_string(v / 100000 % 100) + "." +
         std::to_string(v % 100000);
}

}  // namespace

const common::DriverErrors& runtime_errors() noexcept { return kErrorMap; }

common::DriverProbe open_runtime(common::DriverLibrary& lib, RuntimeApi&) {
  using common::DriverProbe;
  std::string why;
  if (!lib.open("AXL_HIP_RUNTIME_PATH", runtime_library_names(), &why))
    return DriverProbe::unavailable("no HIP runtime: " + why);
  // Only the library's own exports here: every HIP call, hipGetProcAddress
  // included, initialises the runtime, which counting must not do.
  if (lib.symbol("hipInit") == nullptr && lib.symbol("hipGetProcAddress") == nullptr)
    return DriverProbe::unavailable("the library lacks hipInit: not a HIP runtime (HIP runtime library " +
                                    lib.path() + ")");
  return {};
}

common::DriverProbe init_runtime(const common::DriverLibrary& lib, RuntimeApi& api, common::DriverProbe) {
  using common::DriverProbe;
  const std::string where = " (HIP runtime library " + lib.path() + ")";

  // hipGetProcAddress where the runtime has it, else the library's own
  // exports; a symbol the first does not know is looked for by the second.
  auto get_proc = reinterpret_cast<GetProcAddress>(lib.symbol("hipGetProcAddress"));
  const common::SymbolLookup lookup = [&](const char* name, int version, std::string* detail) -> void* {
    void* fn = nullptr;
    int found = 0;
    if (get_proc != nullptr && get_proc(name, &fn, version, 0, &found) == hipSuccess && fn != nullptr)
      return fn;
    fn = lib.symbol(name);
    if (fn == nullptr) *detail = "not found";
    return fn;
  };

  // hipInit first, so that a machine without a GPU is reported as such,
  // not as missing symbols.
  std::string detail;
  auto init = reinterpret_cast<decltype(&::hipInit)>(lookup("hipInit", HIP_VERSION, &detail));
  if (init == nullptr) return DriverProbe::unavailable("the library lacks hipInit: not a HIP runtime" + where);
  api.get_error_name = reinterpret_cast<decltype(&::hipGetErrorName)>(lookup("hipGetErrorName", HIP_VERSION, &detail));
  const hipError_t ir = init(0);
  if (ir != hipSuccess) {
    // HIP 5.x answers hipErrorInvalidDevice from hipInit on a machine
    // without a GPU; hipGetDeviceCount says what that means.
    auto count = reinterpret_cast<decltype(&::hipGetDeviceCount)>(lookup("hipGetDeviceCount", HIP_VERSION, &detail));
    int n = 0;
    const hipError_t cr = count != nullptr ? count(&n) : ir;
    const hipError_t code = cr != hipSuccess ? cr : ir;
    std::string message = "hipInit failed: " + code_text(api, ir);
    if (cr != hipSuccess && cr != ir) message += "; hipGetDeviceCount: " + code_text(api, cr);
    return DriverProbe::unavailable(message + hint_for(code) + where, code, name_of(api, code));
  }

  const common::SymbolResolution res =
      common::resolve_driver_symbols(kSymbols, std::size(kSymbols), &api, lookup);
  if (!res.ok())
    return DriverProbe::unavailable(common::str("the HIP runtime lacks required entry point(s) ",
                                                common::join(res.missing_required), where));
  // A failed query after a successful hipInit: the runtime is unusable.
  auto failed = [&](const char* call, hipError_t r) {
    return DriverProbe::unavailable(common::str(call, " failed: ", code_text(api, r), hint_for(r), where), r,
                                    name_of(api, r));
  };
  DriverProbe ok;
  if (hipError_t r = api.driver_get_version(&ok.driver_version); r != hipSuccess)
    return failed("hipDriverGetVersion", r);
  if (hipError_t r = api.device_get_count(&ok.device_count); r != hipSuccess)
    return failed("hipGetDeviceCount", r);
  ok.message = common::str("HIP runtime ", version_text(ok.driver_version), ", ", ok.device_count,
                           " device(s)", where);
  if (!res.missing_optional.empty())
    ok.message += "; optional entry points missing: " + common::join(res.missing_optional);
  return ok;
}

}  // namespace axl::hip
