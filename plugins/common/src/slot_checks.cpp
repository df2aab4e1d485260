#include "axl/common/slot_checks.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "axl/common/plugin_support.hpp"

namespace axl::common {

axl_status check_queue_create(Fail fail, const axl_queue_desc* desc, const axl_pqueue* out_queue) {
  if (desc == nullptr || out_queue == nullptr ||
      desc->struct_size < offsetof(axl_queue_desc, trace_id) + sizeof(desc->trace_id))
    return fail(AXL_ERROR_INVALID_ARGUMENT,
                "queue_create: desc or out_queue is NULL, or desc->struct_size is too small for "
                "an axl_queue_desc");
  if (desc->flags != AXL_QUEUE_FLAG_NONE)
    return fail(AXL_ERROR_INVALID_ARGUMENT, str("queue_create: unknown queue flags 0x", std::hex,
                                                desc->flags, " (no flags are defined)"));
  return AXL_SUCCESS;
}

axl_status check_event_create(Fail fail, uint32_t flags, const axl_pevent* out_event) {
  if (out_event == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "event_create: out_event is NULL");
  if ((flags & ~static_cast<uint32_t>(AXL_EVENT_FLAG_TIMING)) != 0)
    return fail(AXL_ERROR_INVALID_ARGUMENT, str("event_create: unknown event flags 0x", std::hex,
                                                flags, " (known: AXL_EVENT_FLAG_TIMING = 0x1)"));
  return AXL_SUCCESS;
}

axl_status check_module_get_kernel(Fail fail, const char* name, const axl_pkernel* out_kernel) {
  if (name == nullptr || out_kernel == nullptr)
    return fail(AXL_ERROR_INVALID_ARGUMENT, "module_get_kernel: name or out_kernel is NULL");
  return AXL_SUCCESS;
}

axl_status check_device_index(Fail fail, uint32_t index, size_t count, const char* what) {
  if (index < count) return AXL_SUCCESS;
  return fail(AXL_ERROR_OUT_OF_RANGE,
              str("device index ", index, " is out of range: ", count, " ", what));
}

axl_status check_memory_alloc(Fail fail, const axl_device_properties& device, uint64_t bytes,
                              const axl_devaddr* out_address, const char* limit) {
  if (out_address == nullptr)
    return fail(AXL_ERROR_INVALID_ARGUMENT, "memory_alloc: out_address is NULL");
  if (bytes == 0) return fail(AXL_ERROR_INVALID_ARGUMENT, "memory_alloc: bytes is 0; expected > 0");
  if (bytes > device.max_single_alloc_bytes)
    return fail(AXL_ERROR_OUT_OF_DEVICE_MEMORY,
                str("memory_alloc: ", bytes, " bytes is above the device's largest allocation, ",
                    device.max_single_alloc_bytes, " bytes (", limit, ")"));
  return AXL_SUCCESS;
}

axl_status check_pinned_alloc(Fail fail, uint64_t bytes, void* const* out_host) {
  if (out_host == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "pinned_alloc: out_host is NULL");
  if (bytes == 0) return fail(AXL_ERROR_INVALID_ARGUMENT, "pinned_alloc: bytes is 0; expected > 0");
  return AXL_SUCCESS;
}

axl_status copy_device_properties(Fail fail, const axl_device_properties& device,
                                  axl_device_properties* props) {
  if (props == nullptr || props->struct_size < sizeof(props->struct_size))
    return fail(AXL_ERROR_INVALID_ARGUMENT,
                "device_get_properties: props is NULL or its struct_size is smaller than the "
                "struct_size field itself");
  const size_t n = std::min<size_t>(props->struct_size, sizeof(axl_device_properties));
  const size_t head = sizeof(props->struct_size);
  std::memcpy(reinterpret_cast<char*>(props) + head, reinterpret_cast<const char*>(&device) + head,
              n - head);
  return AXL_SUCCESS;
}

axl_status refuse_null_out(Fail fail, const char* slot) {
  return fail(AXL_ERROR_INVALID_ARGUMENT, str(slot, ": out is NULL"));
}

}  // namespace axl::common
