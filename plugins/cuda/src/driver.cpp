// Loading the CUDA driver: the symbol table, the result-code table, and the
// probe that decides whether the backend can run here.
#include <cstddef>

#include "cuda_driver.hpp"

namespace axl::cuda {

namespace {

#define AXL_CUDA_ENTRY(member, name, version, required) \
  {#name, version, required, offsetof(DriverApi, member)},
constexpr common::DriverSymbol kSymbols[] = {AXL_CUDA_DRIVER_SYMBOLS(AXL_CUDA_ENTRY)};
#undef AXL_CUDA_ENTRY

// The codes worth a name of our own: a stub or broken library cannot answer
// cuGetErrorName, and the status decides what the core tells the user.
constexpr common::DriverErrorCode kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", AXL_SUCCESS},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", AXL_ERROR_INVALID_ARGUMENT},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", AXL_ERROR_OUT_OF_DEVICE_MEMORY},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", AXL_ERROR_BACKEND_UNAVAILABLE},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", AXL_ERROR_DEVICE_LOST},
    {CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY", AXL_ERROR_BACKEND_UNAVAILABLE},
    {CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA_ERROR_DEVICE_UNAVAILABLE", AXL_ERROR_BACKEND_UNAVAILABLE},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", AXL_ERROR_BACKEND_UNAVAILABLE},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", AXL_ERROR_INVALID_ARGUMENT},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", AXL_ERROR_INVALID_ARGUMENT},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", AXL_ERROR_INVALID_STATE},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU", AXL_ERROR_INVALID_ARGUMENT},
    {CUDA_ERROR_ECC_UNCORRECTABLE, "CUDA_ERROR_ECC_UNCORRECTABLE", AXL_ERROR_DEVICE_LOST},
    {CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", AXL_ERROR_UNSUPPORTED},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", AXL_ERROR_INVALID_ARGUMENT},
    {CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", AXL_ERROR_INVALID_ARGUMENT},
    {CUDA_ERROR_INVALID_SOURCE, "CUDA_ERROR_INVALID_SOURCE", AXL_ERROR_INVALID_ARGUMENT},
    {CUDA_ERROR_FILE_NOT_FOUND, "CUDA_ERROR_FILE_NOT_FOUND", AXL_ERROR_NOT_FOUND},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", AXL_ERROR_INVALID_HANDLE},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", AXL_ERROR_NOT_FOUND},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", AXL_ERROR_NOT_READY},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", AXL_ERROR_DEVICE_LOST},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", AXL_ERROR_INVALID_ARGUMENT},
    {CUDA_ERROR_LAUNCH_TIMEOUT, "CUDA_ERROR_LAUNCH_TIMEOUT", AXL_ERROR_DEVICE_LOST},
    {CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", AXL_ERROR_INVALID_STATE},
    {CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED", AXL_ERROR_INVALID_STATE},
    {CUDA_ERROR_HARDWARE_STACK_ERROR, "CUDA_ERROR_HARDWARE_STACK_ERROR", AXL_ERROR_DEVICE_LOST},
    {CUDA_ERROR_ILLEGAL_INSTRUCTION, "CUDA_ERROR_ILLEGAL_INSTRUCTION", AXL_ERROR_DEVICE_LOST},
    {CUDA_ERROR_MISALIGNED_ADDRESS, "CUDA_ERROR_MISALIGNED_ADDRESS", AXL_ERROR_DEVICE_LOST},
    {CUDA_ERROR_INVALID_ADDRESS_SPACE, "CUDA_ERROR_INVALID_ADDRESS_SPACE", AXL_ERROR_DEVICE_LOST},
    {CUDA_ERROR_INVALID_PC, "CUDA_ERROR_INVALID_PC", AXL_ERROR_DEVICE_LOST},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", AXL_ERROR_DEVICE_LOST},
    {CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED", AXL_ERROR_INVALID_STATE},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", AXL_ERROR_UNSUPPORTED},
    {CUDA_ERROR_SYSTEM_NOT_READY, "CUDA_ERROR_SYSTEM_NOT_READY", AXL_ERROR_BACKEND_UNAVAILABLE},
    {CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", AXL_ERROR_BACKEND_UNAVAILABLE},
    {CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", AXL_ERROR_BACKEND_UNAVAILABLE},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", AXL_ERROR_INTERNAL},
};

const common::DriverErrors kErrorMap(kErrors, std::size(kErrors), AXL_ERROR_INTERNAL);

// The name of `r`: the driver's when it can say, else ours.
std::string name_of(const DriverApi& api, CUresult r) {
  const char* name = nullptr;
  if (api.get_error_name != nullptr && api.get_error_name(r, &name) == CUDA_SUCCESS && name != nullptr)
    return name;
  return kErrorMap.name_of(r);
}

// What a user should know about an initialisation error.
std::string hint_for(CUresult r) {
  if (r == CUDA_ERROR_STUB_LIBRARY) return ": this is the CUDA toolkit's stub library, not a driver";
  if (r == CUDA_ERROR_NO_DEVICE) return ": no CUDA device is visible (check the driver and CUDA_VISIBLE_DEVICES)";
  return "";
}

}  // namespace

const common::DriverSymbol* driver_symbols(size_t* count) noexcept {
  *count = std::size(kSymbols);
  return kSymbols;
}

const common::DriverErrors& driver_errors() noexcept { return kErrorMap; }

DriverProbe open_driver(common::DriverLibrary& lib, DriverApi& api) {
  std::string why;
  // Never the unversioned libcuda.so: that name is the development symlink
  // (often to the toolkit's stub), not the driver the system installed.
  if (!lib.open("AXL_CUDA_DRIVER_PATH", {"libcuda.so.1"}, &why))
    return DriverProbe::unavailable("no CUDA driver: " + why);
  const std::string where = " (driver library " + lib.path() + ")";

  auto get_proc = reinterpret_cast<PFN_cuGetProcAddress_v12000>(lib.symbol("cuGetProcAddress_v2"));
  if (get_proc == nullptr)
    return DriverProbe::unavailable("the CUDA driver lacks cuGetProcAddress_v2; a driver for CUDA " +
                       std::to_string(kMinDriverVersion / 1000) + ".0 or newer is required" + where);

  // cuGetProcAddress and cuDriverGetVersion work before cuInit (the CUDA
  // runtime finds cuInit this way), so everything here is cheap and starts
  // nothing: the driver is initialised only by init_driver.
  CUresult lookup_error = CUDA_SUCCESS;
  const common::SymbolLookup lookup = [&](const char* name, int version, std::string* detail) -> void* {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    const CUresult r = get_proc(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &found);
    if (r == CUDA_SUCCESS && found == CU_GET_PROC_ADDRESS_SUCCESS) return fn;
    if (r != CUDA_SUCCESS && lookup_error == CUDA_SUCCESS) lookup_error = r;
    *detail = r != CUDA_SUCCESS ? kErrorMap.name_of(r)
              : found == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT ? "driver too old for this version"
                                                                    : "not found";
    return nullptr;
  };

  // cuInit's lookup first, so that a stub library is reported as such, not
  // as missing symbols.
  std::string detail;
  if (lookup("cuInit", 2000, &detail) == nullptr) {
    if (lookup_error != CUDA_SUCCESS)
      return DriverProbe::unavailable("cuGetProcAddress_v2(\"cuInit\") failed: " + kErrorMap.name_of(lookup_error) +
                             " (" + std::to_string(lookup_error) + ")" + hint_for(lookup_error) + where,
                         lookup_error, kErrorMap.name_of(lookup_error));
    return DriverProbe::unavailable("the CUDA driver lacks cuInit: " + detail + where);
  }

  size_t count = 0;
  const common::DriverSymbol* symbols = driver_symbols(&count);
  lookup_error = CUDA_SUCCESS;
  const common::SymbolResolution res = common::resolve_driver_symbols(symbols, count, &api, lookup);
  if (!res.ok())
    return DriverProbe::unavailable("the CUDA driver lacks required entry point(s) " +
                       common::join(res.missing_required) + where);

  int version = 0;
  if (CUresult r = api.driver_get_version(&version); r != CUDA_SUCCESS)
    return DriverProbe::unavailable("cuDriverGetVersion failed: " + name_of(api, r) + " (" + std::to_string(r) + ")" +
                                        hint_for(r) + where,
                                    r, name_of(api, r));
  if (version < kMinDriverVersion)
    return DriverProbe::unavailable("the CUDA driver supports CUDA " + std::to_string(version / 1000) + "." +
                       std::to_string(version % 1000 / 10) + "; axl needs " +
                       std::to_string(kMinDriverVersion / 1000) + ".0 or newer" + where);
  DriverProbe ok;
  ok.driver_version = version;
  ok.message = "CUDA driver " + std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10) + where;
  if (!res.missing_optional.empty())
    ok.message += "; optional entry points missing: " + common::join(res.missing_optional);
  return ok;
}

DriverProbe init_driver(const common::DriverLibrary& lib, const DriverApi& api, DriverProbe opened) {
  const std::string where = " (driver library " + lib.path() + ")";
  if (const CUresult ir = api.init(0); ir != CUDA_SUCCESS) {
    const std::string name = name_of(api, ir);
    return DriverProbe::unavailable("cuInit failed: " + name + " (" + std::to_string(ir) + ")" + hint_for(ir) + where,
                                    ir, name);
  }
  int devices = 0;
  if (CUresult r = api.device_get_count(&devices); r != CUDA_SUCCESS)
    return DriverProbe::unavailable("cuDeviceGetCount failed: " + name_of(api, r) + " (" + std::to_string(r) +
                           ")" + where,
                       r, name_of(api, r));
  opened.device_count = devices;
  opened.message += ", " + std::to_string(devices) + " device(s)";
  return opened;
}

}  // namespace axl::cuda
