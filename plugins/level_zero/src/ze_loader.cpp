#include "ze_loader.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstring>

namespace axl::l0 {

const EntryPoint kEntryPoints[] = {
#define AXL_ZE_ENTRY(name, type, required) {#name, required, offsetof(ZeApi, name)},
#include "ze_entry_points.def"
#undef AXL_ZE_ENTRY
};
const size_t kEntryPointCount = sizeof kEntryPoints / sizeof kEntryPoints[0];

LoadResult load_loader(const std::string& name, ZeApi& api) {
  LoadResult r;
  r.requested = name;
  api = ZeApi{};
  // RTLD_LOCAL: the loader's symbols must not bind other libraries of the
  // process (a second Level Zero user keeps its own).
  void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = dlerror();
    r.kind = LoadResult::Kind::kAbsent;
    r.detail = e != nullptr ? e : "dlopen failed";
    return r;
  }
  link_map* lm = nullptr;
  r.path = (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm != nullptr && lm->l_name != nullptr &&
            lm->l_name[0] != '\0')
               ? lm->l_name
               : name;
  std::string missing;
  for (size_t i = 0; i < kEntryPointCount; ++i) {
    const EntryPoint& e = kEntryPoints[i];
    void* sym = dlsym(h, e.name);
    if (sym == nullptr && e.required) missing += (missing.empty() ? "" : ", ") + std::string(e.name);
    // Function pointers and void* have one representation on every platform
    // dlsym exists on (POSIX requires it); memcpy keeps the conversion defined.
    std::memcpy(reinterpret_cast<char*>(&api) + e.offset, &sym, sizeof sym);
  }
  if (!missing.empty()) {
    dlclose(h);
    api = ZeApi{};
    r.kind = LoadResult::Kind::kMissingSymbol;
    r.detail = missing;
    return r;
  }
  r.kind = LoadResult::Kind::kOk;
  r.handle = h;
  return r;
}

const char* result_name(ze_result_t result) noexcept {
  switch (result) {
#define AXL_ZE_RESULT(x) \
  case x: return #x;
    AXL_ZE_RESULT(ZE_RESULT_SUCCESS)
    AXL_ZE_RESULT(ZE_RESULT_NOT_READY)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_DEVICE_LOST)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_MODULE_LINK_FAILURE)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_NOT_AVAILABLE)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_UNINITIALIZED)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_VERSION)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_ARGUMENT)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_NULL_HANDLE)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_NULL_POINTER)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_SIZE)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_SIZE)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_ENUMERATION)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_IMAGE_FORMAT)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_NATIVE_BINARY)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_GLOBAL_NAME)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_KERNEL_NAME)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_FUNCTION_NAME)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_KERNEL_ATTRIBUTE_VALUE)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_MODULE_UNLINKED)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_OVERLAPPING_REGIONS)
    AXL_ZE_RESULT(ZE_RESULT_ERROR_UNKNOWN)
#undef AXL_ZE_RESULT
    default: return "ZE_RESULT_(unknown)";
  }
}

}  // namespace axl::l0
