// Completion flags: common::Flag. Device memory is host memory here, so the
// device address and the host address are the same 8 bytes.
#include "axl/common/flag.hpp"

#include "cpu_backend.hpp"

namespace axl::cpu {

namespace {

common::Flag* from_flag(axl_pflag f) noexcept { return reinterpret_cast<common::Flag*>(f); }

}  // namespace

axl_status flag_create(axl_pdevice, axl_pflag* out_flag) noexcept {
  return guarded("flag_create", [&]() -> axl_status {
    if (out_flag == nullptr) {
      return backend().host.report(AXL_ERROR_INVALID_ARGUMENT, "flag_create: out_flag is NULL");
    }
    *out_flag = reinterpret_cast<axl_pflag>(new common::Flag());
    return AXL_SUCCESS;
  });
}

axl_status flag_destroy(axl_pflag flag) noexcept {
  // A queue still waiting on or writing the flag holds its own reference.
  from_flag(flag)->release();
  return AXL_SUCCESS;
}

axl_status flag_get_device_address(axl_pflag flag, axl_devaddr* out) noexcept {
  if (out == nullptr) {
    return backend().host.report(AXL_ERROR_INVALID_ARGUMENT,
                                 "flag_get_device_address: out is NULL");
  }
  *out = reinterpret_cast<axl_devaddr>(from_flag(flag)->host_address());
  return AXL_SUCCESS;
}

axl_status flag_get_host_address(axl_pflag flag, uint64_t** out) noexcept {
  if (out == nullptr) {
    return backend().host.report(AXL_ERROR_INVALID_ARGUMENT,
                                 "flag_get_host_address: out is NULL");
  }
  *out = from_flag(flag)->host_address();
  return AXL_SUCCESS;
}

}  // namespace axl::cpu
