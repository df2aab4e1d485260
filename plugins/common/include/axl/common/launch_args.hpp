// The checks every backend makes on a launch's argument list before it
// copies or passes the arguments on: shapes the ABI allows (kinds, sizes,
// NULL values) and, for kernels that declare their parameters (the built-in
// test kernels), the declared list. Grid, block and shared-memory limits are
// each backend's own and stay with it.
#pragma once

#include <cstdint>
#include <string>

#include "axl/plugin.h"

namespace axl::common {

// One declared kernel parameter.
struct KernelParam {
  int32_t kind;   // AXL_ARG_*
  uint32_t size;  // bytes
};

struct ArgLimits {
  uint32_t max_args;          // arguments per launch
  uint32_t max_scalar_bytes;  // bytes per scalar argument
};

// "" when `args` is a well-formed list for kernel `kernel_name` (and matches
// `params` when param_count >= 0); otherwise the message naming the bad
// argument and what was expected, for an AXL_ERROR_INVALID_ARGUMENT.
std::string check_launch_args(const char* kernel_name, const KernelParam* params,
                              int32_t param_count, const axl_kernel_arg* args,
                              uint32_t num_args, ArgLimits limits);

}  // namespace axl::common
