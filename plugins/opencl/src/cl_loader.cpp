#include "cl_loader.hpp"

#include <cstddef>

#include "axl/common/driver_symbols.hpp"

namespace axl::opencl {

namespace {

const common::DriverSymbol kEntryPoints[] = {
#define AXL_CL_ENTRY(name, version, required) {#name, version, required, offsetof(ClApi, name)},
#include "cl_entry_points.def"
#undef AXL_CL_ENTRY
};

}  // namespace

LoadResult load_loader(common::DriverLibrary& library, ClApi& api) {
  LoadResult r;
  api = ClApi{};
  std::string why;
  if (!library.open(kLoaderPathEnv, {kDefaultLoaderName}, &why)) {
    r.kind = LoadResult::Kind::kAbsent;
    r.detail = why;
    return r;
  }
  // The ICD loader exports every core entry point itself and forwards it to
  // the platform's driver, so plain dlsym is the lookup (versions are only
  // for the messages).
  const common::SymbolResolution res = common::resolve_driver_symbols(
      kEntryPoints, sizeof kEntryPoints / sizeof kEntryPoints[0], &api,
      [&](const char* name, int, std::string*) { return library.symbol(name); });
  if (!res.ok()) {
    api = ClApi{};
    r.kind = LoadResult::Kind::kMissingSymbol;
    r.detail = common::join(res.missing_required);
    return r;
  }
  r.kind = LoadResult::Kind::kOk;
  return r;
}

const char* result_name(cl_int result) noexcept {
  switch (result) {
#define AXL_CL_RESULT(x) \
  case x: return #x;
    AXL_CL_RESULT(CL_SUCCESS)
    AXL_CL_RESULT(CL_DEVICE_NOT_FOUND)
    AXL_CL_RESULT(CL_DEVICE_NOT_AVAILABLE)
    AXL_CL_RESULT(CL_COMPILER_NOT_AVAILABLE)
    AXL_CL_RESULT(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    AXL_CL_RESULT(CL_OUT_OF_RESOURCES)
    AXL_CL_RESULT(CL_OUT_OF_HOST_MEMORY)
    AXL_CL_RESULT(CL_PROFILING_INFO_NOT_AVAILABLE)
    AXL_CL_RESULT(CL_MEM_COPY_OVERLAP)
    AXL_CL_RESULT(CL_IMAGE_FORMAT_MISMATCH)
    AXL_CL_RESULT(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    AXL_CL_RESULT(CL_BUILD_PROGRAM_FAILURE)
    AXL_CL_RESULT(CL_MAP_FAILURE)
    AXL_CL_RESULT(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    AXL_CL_RESULT(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    AXL_CL_RESULT(CL_COMPILE_PROGRAM_FAILURE)
    AXL_CL_RESULT(CL_LINKER_NOT_AVAILABLE)
    AXL_CL_RESULT(CL_LINK_PROGRAM_FAILURE)
    AXL_CL_RESULT(CL_DEVICE_PARTITION_FAILED)
    AXL_CL_RESULT(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    AXL_CL_RESULT(CL_INVALID_VALUE)
    AXL_CL_RESULT(CL_INVALID_DEVICE_TYPE)
    AXL_CL_RESULT(CL_INVALID_PLATFORM)
    AXL_CL_RESULT(CL_INVALID_DEVICE)
    AXL_CL_RESULT(CL_INVALID_CONTEXT)
    AXL_CL_RESULT(CL_INVALID_QUEUE_PROPERTIES)
    AXL_CL_RESULT(CL_INVALID_COMMAND_QUEUE)
    AXL_CL_RESULT(CL_INVALID_HOST_PTR)
    AXL_CL_RESULT(CL_INVALID_MEM_OBJECT)
    AXL_CL_RESULT(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    AXL_CL_RESULT(CL_INVALID_IMAGE_SIZE)
    AXL_CL_RESULT(CL_INVALID_SAMPLER)
    AXL_CL_RESULT(CL_INVALID_BINARY)
    AXL_CL_RESULT(CL_INVALID_BUILD_OPTIONS)
    AXL_CL_RESULT(CL_INVALID_PROGRAM)
    AXL_CL_RESULT(CL_INVALID_PROGRAM_EXECUTABLE)
    AXL_CL_RESULT(CL_INVALID_KERNEL_NAME)
    AXL_CL_RESULT(CL_INVALID_KERNEL_DEFINITION)
    AXL_CL_RESULT(CL_INVALID_KERNEL)
    AXL_CL_RESULT(CL_INVALID_ARG_INDEX)
    AXL_CL_RESULT(CL_INVALID_ARG_VALUE)
    AXL_CL_RESULT(CL_INVALID_ARG_SIZE)
    AXL_CL_RESULT(CL_INVALID_KERNEL_ARGS)
    AXL_CL_RESULT(CL_INVALID_WORK_DIMENSION)
    AXL_CL_RESULT(CL_INVALID_WORK_GROUP_SIZE)
    AXL_CL_RESULT(CL_INVALID_WORK_ITEM_SIZE)
    AXL_CL_RESULT(CL_INVALID_GLOBAL_OFFSET)
    AXL_CL_RESULT(CL_INVALID_EVENT_WAIT_LIST)
    AXL_CL_RESULT(CL_INVALID_EVENT)
    AXL_CL_RESULT(CL_INVALID_OPERATION)
    AXL_CL_RESULT(CL_INVALID_GL_OBJECT)
    AXL_CL_RESULT(CL_INVALID_BUFFER_SIZE)
    AXL_CL_RESULT(CL_INVALID_MIP_LEVEL)
    AXL_CL_RESULT(CL_INVALID_GLOBAL_WORK_SIZE)
    AXL_CL_RESULT(CL_INVALID_PROPERTY)
    AXL_CL_RESULT(CL_INVALID_IMAGE_DESCRIPTOR)
    AXL_CL_RESULT(CL_INVALID_COMPILER_OPTIONS)
    AXL_CL_RESULT(CL_INVALID_LINKER_OPTIONS)
    AXL_CL_RESULT(CL_INVALID_DEVICE_PARTITION_COUNT)
    // The ICD loader's own answer when no platform is installed.
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
#undef AXL_CL_RESULT
    default: return "CL_(unknown)";
  }
}

}  // namespace axl::opencl
