#include "axl/common/plugin_support.hpp"

#include <string.h>

#include <algorithm>
#include <cstddef>

namespace axl::common {

template <class Member>
bool HostServices::has(const axl_host_services* h, Member axl_host_services::*m) noexcept {
  if (h == nullptr) return false;
  // Offset of the member, computed without offsetof on a pointer-to-member.
  const auto* base = reinterpret_cast<const char*>(h);
  const auto* field = reinterpret_cast<const char*>(&(h->*m));
  const size_t end = static_cast<size_t>(field - base) + sizeof(Member);
  return h->struct_size >= end && h->*m != nullptr;
}

void HostServices::log(int32_t level, const char* message) const noexcept {
  const axl_host_services* h = host_.load(std::memory_order_acquire);
  if (has(h, &axl_host_services::log)) h->log(h->ctx, level, message);
}

axl_status HostServices::report(axl_status status, const char* message, int64_t native_code,
                                const char* native_name) const noexcept {
  const axl_host_services* h = host_.load(std::memory_order_acquire);
  if (has(h, &axl_host_services::report_error)) {
    h->report_error(h->ctx, status, native_code, native_name, message);
  }
  return status;
}

axl_status HostServices::report_errno(axl_status status, const std::string& message,
                                      int err) const noexcept {
  const char* name = strerrorname_np(err);
  try {
    return report(status, message + " (" + strerror(err) + ")", err, name);
  } catch (...) {
    return report(status, message, err, name);  // no memory for the longer text
  }
}

void HostServices::trace(const axl_trace_record& record) const noexcept {
  const axl_host_services* h = host_.load(std::memory_order_acquire);
  if (has(h, &axl_host_services::trace_record)) h->trace_record(h->ctx, &record);
}

axl_status negotiate(axl_negotiate_args* args, HostServices& host, const axl_plugin_info* info,
                     const axl_plugin_table* table) noexcept {
  if (args == nullptr) return AXL_ERROR_INVALID_ARGUMENT;
  // The major is checked before anything else is read or kept: under another
  // major the host services' layout is not ours to use (docs/abi.md, rule 1),
  // so the core explains the mismatch itself.
  if (args->struct_size < offsetof(axl_negotiate_args, core_abi_major) + sizeof(uint32_t) ||
      args->core_abi_major != AXL_PLUGIN_ABI_MAJOR) {
    return AXL_ERROR_VERSION_MISMATCH;
  }
  // Every field up to `table` is read or written below; a shorter struct
  // comes from a core that cannot speak this ABI at all.
  if (args->struct_size < offsetof(axl_negotiate_args, table) + sizeof(args->table)) {
    return AXL_ERROR_INVALID_ARGUMENT;
  }
  host.attach(args->host);
  args->plugin_abi_minor = std::min<uint32_t>(args->core_abi_minor, AXL_PLUGIN_ABI_MINOR);
  args->info = info;
  args->table = table;
  return AXL_SUCCESS;
}

}  // namespace axl::common
