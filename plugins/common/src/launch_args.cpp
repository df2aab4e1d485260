#include "axl/common/launch_args.hpp"

#include "axl/common/plugin_support.hpp"

namespace axl::common {
namespace {

const char* kind_name(int32_t kind) {
  return kind == AXL_ARG_DEVADDR  ? "DEVADDR"
         : kind == AXL_ARG_SCALAR ? "SCALAR"
         : kind == AXL_ARG_LOCAL  ? "LOCAL"
                                  : "unknown";
}

}  // namespace

std::string check_launch_args(const char* k, const KernelParam* params, int32_t param_count,
                              const axl_kernel_arg* args, uint32_t num_args, ArgLimits limits) {
  if (num_args > limits.max_args)
    return str("launch of '", k, "': ", num_args, " arguments; the limit is ", limits.max_args);
  if (num_args != 0 && args == nullptr)
    return str("launch of '", k, "': num_args is ", num_args, " but args is NULL");
  if (param_count >= 0 && num_args != static_cast<uint32_t>(param_count))
    return str("kernel '", k, "' takes ", param_count, " arguments, got ", num_args);
  for (uint32_t i = 0; i < num_args; ++i) {
    const axl_kernel_arg& a = args[i];
    if (a.kind == AXL_ARG_LOCAL) {
      if (!limits.local_args)
        return str("launch of '", k, "': argument ", i, " is AXL_ARG_LOCAL (", a.size,
                   " bytes of local memory), which this backend's kernels do not take; use "
                   "shared_mem_bytes");
      if (a.size == 0) return str("launch of '", k, "': argument ", i, " is local memory of 0 bytes");
      if (param_count >= 0)
        return str("kernel '", k, "' argument ", i, " must be ", kind_name(params[i].kind),
                   " of ", params[i].size, " bytes, got LOCAL");
      continue;  // a size, no value
    }
    if (a.kind != AXL_ARG_DEVADDR && a.kind != AXL_ARG_SCALAR)
      return str("launch of '", k, "': argument ", i, " has kind ", a.kind,
                 "; expected AXL_ARG_DEVADDR (0), AXL_ARG_SCALAR (1) or AXL_ARG_LOCAL (2)");
    if (a.kind == AXL_ARG_DEVADDR && a.size != sizeof(axl_devaddr))
      return str("launch of '", k, "': argument ", i, " is a DEVADDR of size ", a.size,
                 "; expected 8");
    if (a.size > limits.max_scalar_bytes)
      return str("launch of '", k, "': argument ", i, " has ", a.size, " bytes; the limit is ",
                 limits.max_scalar_bytes);
    if (a.size != 0 && a.value == nullptr)
      return str("launch of '", k, "': argument ", i, " has size ", a.size, " but value is NULL");
    if (param_count >= 0 && (a.kind != params[i].kind || a.size != params[i].size))
      return str("kernel '", k, "' argument ", i, " must be ", kind_name(params[i].kind), " of ",
                 params[i].size, " bytes, got ", kind_name(a.kind), " of ", a.size, " bytes");
  }
  return {};
}

std::string launch_config_problem(const char* k, const axl_launch_config* config) {
  if (config == nullptr || config->struct_size < sizeof(axl_launch_config))
    return str("launch of '", k, "': config is NULL or its struct_size is too small");
  static const char* const kAxis = "xyz";
  for (int d = 0; d < 3; ++d) {
    if (config->grid[d] == 0 || config->block[d] == 0)
      return str("launch of '", k, "': ", config->grid[d] == 0 ? "grid" : "block", ".", kAxis[d],
                 " is 0; every grid and block dimension must be >= 1");
  }
  return {};
}

}  // namespace axl::common
