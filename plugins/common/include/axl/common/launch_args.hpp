// The checks every backend makes on a launch's argument list before it
// copies or passes the arguments on: shapes the ABI allows (kinds, sizes,
// NULL values) and, for kernels that declare their parameters (the built-in
// test kernels), the declared list. Grid, block and shared-memory limits are
// each backend's own and stay with it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "axl/common/plugin_support.hpp"
#include "axl/common/slot_checks.hpp"
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
  // Whether the backend's kernels take AXL_ARG_LOCAL (OpenCL's __local
  // parameters); elsewhere such an argument is refused, naming it.
  bool local_args = false;
};

// "" when `args` is a well-formed list for kernel `kernel_name` (and matches
// `params` when param_count >= 0); otherwise the message naming the bad
// argument and what was expected, for an AXL_ERROR_INVALID_ARGUMENT.
std::string check_launch_args(const char* kernel_name, const KernelParam* params,
                              int32_t param_count, const axl_kernel_arg* args,
                              uint32_t num_args, ArgLimits limits);

// The message for a config that launch_config_ok refuses, naming kernel
// `kernel_name`; out of line, since only a refused launch builds it.
std::string launch_config_problem(const char* kernel_name, const axl_launch_config* config);

// Whether `config` is present, long enough, and every grid and block
// dimension is at least 1 (what a launch needs before any device limit).
inline bool launch_config_ok(const axl_launch_config* config) {
  return config != nullptr && config->struct_size >= sizeof(axl_launch_config) &&
         config->grid[0] != 0 && config->grid[1] != 0 && config->grid[2] != 0 &&
         config->block[0] != 0 && config->block[1] != 0 && config->block[2] != 0;
}

// AXL_SUCCESS when launch_config_ok(config); otherwise reports
// launch_config_problem through the backend's `fail`. Inline and with no
// string on success: it is on every launch (benchmarks/bench_enqueue).
inline axl_status check_launch_config(Fail fail, const char* kernel_name, const axl_launch_config* config) {
  if (launch_config_ok(config)) [[likely]] return AXL_SUCCESS;
  return fail(AXL_ERROR_INVALID_ARGUMENT, launch_config_problem(kernel_name, config));
}

// The `void** kernelParams` of a CUDA-style launch (cuLaunchKernel,
// hipModuleLaunchKernel): one pointer per argument, to its value. An
// axl_kernel_arg's value already points at the bytes the kernel takes (a
// DEVADDR at its 8-byte address, which is what a CUdeviceptr or
// hipDeviceptr_t parameter holds), so nothing is copied; the array lives on
// the stack for up to kInline arguments. Valid while `args` is.
class ArgPointers {
 public:
  static constexpr uint32_t kInline = 32;
  ArgPointers(const axl_kernel_arg* args, uint32_t num_args) {
    void** out = inline_.data();
    if (num_args > kInline) {
      heap_.resize(num_args);
      out = heap_.data();
    }
    for (uint32_t i = 0; i < num_args; ++i) out[i] = const_cast<void*>(args[i].value);
    data_ = num_args == 0 ? nullptr : out;
  }
  ArgPointers(const ArgPointers&) = delete;
  ArgPointers& operator=(const ArgPointers&) = delete;
  void** data() noexcept { return data_; }

 private:
  std::array<void*, kInline> inline_;
  std::vector<void*> heap_;
  void** data_ = nullptr;
};

}  // namespace axl::common
