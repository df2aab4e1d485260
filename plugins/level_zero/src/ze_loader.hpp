// The Level Zero loader, opened at run time: libze_loader.so.1 is dlopen()ed
// (never linked) and every entry point the plugin calls is resolved from the
// one table in ze_entry_points.def. The headers are Debian's libze-dev
// (level_zero/ze_api.h), used for types only.
#pragma once

#include <level_zero/ze_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace axl::l0 {

// zeInitDrivers and its descriptor arrived in Level Zero 1.10; the 1.4
// headers we build against lack them, so the layout is spelled out here as
// the specification gives it (ze_init_driver_type_desc_t).
struct ZeInitDriverTypeDesc {
  ze_structure_type_t stype;  // kStypeInitDriverTypeDesc
  const void* pNext;          // NULL
  uint32_t flags;             // ZE_INIT_DRIVER_TYPE_FLAG_*
};
inline constexpr auto kStypeInitDriverTypeDesc = static_cast<ze_structure_type_t>(0x00020021);
inline constexpr uint32_t kInitDriverTypeFlagGpu = 1u << 0;  // ZE_INIT_DRIVER_TYPE_FLAG_GPU
using ZeInitDriversFn = ze_result_t(ZE_APICALL*)(uint32_t* pCount, ze_driver_handle_t* phDrivers,
                                                 ZeInitDriverTypeDesc* desc);

// The resolved entry points; NULL until resolved (optional ones may stay NULL).
struct ZeApi {
#define AXL_ZE_ENTRY(name, type, required) type name = nullptr;
#include "ze_entry_points.def"
#undef AXL_ZE_ENTRY
};

// One row of the entry-point table.
struct EntryPoint {
  const char* name;  // the exported symbol
  bool required;     // a loader without it is refused
  size_t offset;     // of its pointer in ZeApi
};

// The table, in the order of ze_entry_points.def.
extern const EntryPoint kEntryPoints[];
extern const size_t kEntryPointCount;

// The loader's file name, dlopen()ed through the usual search path.
inline constexpr const char* kDefaultLoaderName = "libze_loader.so.1";
// Environment variable naming another loader file (read with secure_getenv,
// so ignored in setuid programs). Tests point it at a fake or a missing file.
inline constexpr const char* kLoaderPathEnv = "AXL_LEVEL_ZERO_LOADER_PATH";

// What opening the loader gave.
struct LoadResult {
  enum class Kind {
    kOk,             // library open, every required entry point resolved
    kAbsent,         // dlopen failed: no Level Zero on this machine
    kMissingSymbol,  // the library lacks a required entry point
  };
  Kind kind = Kind::kAbsent;
  void* handle = nullptr;  // dlopen handle on kOk, else NULL (closed)
  std::string requested;   // the name or path given to dlopen
  std::string path;        // the file actually opened ("" when absent)
  std::string detail;      // dlerror() text, or the missing symbols' names
};

// Opens `name` and fills `api`. On kMissingSymbol every required symbol that
// is absent is named in `detail` (comma-separated), and the library is
// closed again. Not thread-safe: the backend calls it once.
LoadResult load_loader(const std::string& name, ZeApi& api);

// "ZE_RESULT_ERROR_UNINITIALIZED" for 0x78000001; "ZE_RESULT_(unknown)" for a
// value the 1.4 headers do not know.
const char* result_name(ze_result_t result) noexcept;

}  // namespace axl::l0
