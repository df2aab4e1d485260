// Completion flags: common::Flag. Device memory is host memory here, so the
// device address and the host address are the same 8 bytes.
#include "axl/common/slot_checks.hpp"
#include "cpu_backend.hpp"

namespace axl::cpu {

axl_status flag_create(axl_pdevice, axl_pflag* out_flag) noexcept {
  return guarded("flag_create", [&]() -> axl_status {
    if (out_flag == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "flag_create: out_flag is NULL");
    *out_flag = common::to_handle<axl_pflag>(new common::Flag());
    return AXL_SUCCESS;
  });
}

axl_status flag_destroy(axl_pflag flag) noexcept {
  // A queue still waiting on or writing the flag holds its own reference.
  from(flag)->release();
  return AXL_SUCCESS;
}

axl_status flag_get_device_address(axl_pflag flag, axl_devaddr* out) noexcept {
  return guarded("flag_get_device_address", [&] {
    return common::give(fail, "flag_get_device_address", out,
                        reinterpret_cast<axl_devaddr>(from(flag)->host_address()));
  });
}

axl_status flag_get_host_address(axl_pflag flag, uint64_t** out) noexcept {
  return guarded("flag_get_host_address",
                 [&] { return common::give(fail, "flag_get_host_address", out, from(flag)->host_address()); });
}

}  // namespace axl::cpu
