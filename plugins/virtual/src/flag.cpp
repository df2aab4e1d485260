// Completion flags: common::Flag, in host memory as the ABI says. The device
// address is a number in a window past every device's range: a kernel would
// be handed it, but no copy resolves it as device memory.
#include "axl/common/slot_checks.hpp"
#include "virtual_backend.hpp"

namespace axl::virt {

axl_status flag_create(axl_pdevice, axl_pflag* out_flag) noexcept {
  return guarded("flag_create", [&]() -> axl_status {
    Backend& b = backend();
    if (out_flag == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "flag_create: out_flag is NULL");
    if (std::optional<FaultHit> hit = b.faults.check(FaultOp::kFlagCreate)) return fail(*hit);
    auto h = std::make_unique<FlagHandle>();
    h->flag = common::make_ref<common::Flag>();
    // 64 bytes apart, as the flags' own cache lines are.
    h->address = kFlagAddressBase + 64 * b.next_flag.fetch_add(1);
    *out_flag = common::to_handle<axl_pflag>(h.release());
    return AXL_SUCCESS;
  });
}

axl_status flag_destroy(axl_pflag flag) noexcept {
  // A queue still waiting on or writing the flag holds its own reference to
  // the common::Flag; the handle itself is not used by queued work.
  delete from(flag);
  return AXL_SUCCESS;
}

axl_status flag_get_device_address(axl_pflag flag, axl_devaddr* out) noexcept {
  return guarded("flag_get_device_address",
                 [&] { return common::give(fail, "flag_get_device_address", out, from(flag)->address); });
}

axl_status flag_get_host_address(axl_pflag flag, uint64_t** out) noexcept {
  return guarded("flag_get_host_address", [&] {
    return common::give(fail, "flag_get_host_address", out, from(flag)->flag->host_address());
  });
}

}  // namespace axl::virt
