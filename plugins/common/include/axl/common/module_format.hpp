// The names of plugin.h's module formats, for the messages of module_load
// ("format SPIRV (7) cannot be loaded by ...").
#pragma once

#include <cstdint>

#include "axl/plugin.h"

namespace axl::common {

inline const char* module_format_name(int32_t f) noexcept {
  switch (f) {
    case AXL_MODULE_FORMAT_AUTO: return "AUTO";
    case AXL_MODULE_FORMAT_SHARED_OBJECT: return "SHARED_OBJECT";
    case AXL_MODULE_FORMAT_PTX: return "PTX";
    case AXL_MODULE_FORMAT_CUBIN: return "CUBIN";
    case AXL_MODULE_FORMAT_FATBIN: return "FATBIN";
    case AXL_MODULE_FORMAT_HSACO: return "HSACO";
    case AXL_MODULE_FORMAT_SPIRV: return "SPIRV";
    default: return "unknown";
  }
}

}  // namespace axl::common
