// The OpenCL ICD loader, opened at run time: libOpenCL.so.1 is dlopen()ed
// (never linked) through common::DriverLibrary, and every entry point the
// plugin calls is resolved from the one table in cl_entry_points.def. The
// headers (Debian: opencl-c-headers) are used for types only.
#pragma once

// The 3.0 headers declare every entry point the table names (the one 2.1
// call, clCreateProgramWithIL, is optional there); the 1.2 calls that 2.0
// deprecated (clCreateCommandQueue) are what a 1.2 platform has.
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#include <string>

#include "axl/common/driver_library.hpp"

namespace axl::opencl {

// The resolved entry points; NULL until resolved (optional ones may stay NULL).
struct ClApi {
#define AXL_CL_ENTRY(name, version, required) decltype(&::name) name = nullptr;
#include "cl_entry_points.def"
#undef AXL_CL_ENTRY
};

// The loader's file name, dlopen()ed through the usual search path.
inline constexpr const char* kDefaultLoaderName = "libOpenCL.so.1";
// Environment variable naming another loader file (read with secure_getenv,
// so ignored in setuid programs). Tests point it at a missing file.
inline constexpr const char* kLoaderPathEnv = "AXL_OPENCL_LOADER_PATH";

// What opening the loader gave.
struct LoadResult {
  enum class Kind {
    kOk,             // library open, every required entry point resolved
    kAbsent,         // dlopen failed: no OpenCL ICD loader on this machine
    kMissingSymbol,  // the library lacks a required entry point
  };
  Kind kind = Kind::kAbsent;
  std::string detail;  // dlopen's message, or the missing symbols' names
};

// Opens the loader named by kLoaderPathEnv, else kDefaultLoaderName, into
// `library` and fills `api` (cleared again on kMissingSymbol). Not
// thread-safe: the backend calls it once.
LoadResult load_loader(common::DriverLibrary& library, ClApi& api);

// "CL_OUT_OF_RESOURCES" for -5; "CL_(unknown)" for a value OpenCL 1.2 does
// not define.
const char* result_name(cl_int result) noexcept;

}  // namespace axl::opencl
