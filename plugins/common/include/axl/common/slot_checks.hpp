// The argument checks that the same slot makes in every first-party backend,
// written once so that every backend refuses the same input with the same
// words. Each reports through the backend's own `fail` (the virtual backend
// adds native codes, the others do not) and returns its status, or
// AXL_SUCCESS when nothing is wrong:
//   if (axl_status s = common::check_queue_create(fail, desc, out_queue)) return s;
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "axl/plugin.h"

namespace axl::common {

// A backend's reporter: reports `message` with `status` and returns status.
using Fail = axl_status (*)(axl_status status, const std::string& message);

// queue_create: desc and out_queue present, desc as long as the fields read
// (up to trace_id), no flags (none are defined).
axl_status check_queue_create(Fail fail, const axl_queue_desc* desc, const axl_pqueue* out_queue);

// event_create: out_event present, only AXL_EVENT_FLAG_TIMING.
axl_status check_event_create(Fail fail, uint32_t flags, const axl_pevent* out_event);

// module_get_kernel: name and out_kernel present.
axl_status check_module_get_kernel(Fail fail, const char* name, const axl_pkernel* out_kernel);

// device_get_properties' shared part: copies the fields of `device` that lie
// inside the caller's struct_size into `props` (an older core has a shorter
// struct, and bytes past it are not ours to touch; struct_size itself stays
// the caller's), or reports why it cannot.
axl_status copy_device_properties(Fail fail, const axl_device_properties& device,
                                  axl_device_properties* props);

// device_get's range check: "device index <index> is out of range: <count>
// <what>" (OUT_OF_RANGE), where `what` names the devices ("OpenCL
// device(s)").
axl_status check_device_index(Fail fail, uint32_t index, size_t count, const char* what);

// device_get of a backend whose discovery lists its devices once (opencl,
// level_zero): out_device present, then `discover()` (which reports its own
// failure on this thread), then the index in range; `devices` holds
// unique_ptrs to the backend's Device structs, the handles' objects.
template <class Devices>
axl_status get_discovered_device(Fail fail, axl_status (*discover)(), const Devices& devices,
                                 const char* what, uint32_t index, axl_pdevice* out_device) {
  if (out_device == nullptr)
    return fail(AXL_ERROR_INVALID_ARGUMENT, "device_get: out_device is NULL");
  if (axl_status s = discover()) return s;
  if (axl_status s = check_device_index(fail, index, devices.size(), what)) return s;
  *out_device = reinterpret_cast<axl_pdevice>(devices[index].get());
  return AXL_SUCCESS;
}

// memory_alloc: out_address present, bytes above 0 and no more than the
// device's largest allocation, whose source `limit` names (the driver's
// property, so a user can look the limit up).
axl_status check_memory_alloc(Fail fail, const axl_device_properties& device, uint64_t bytes,
                              const axl_devaddr* out_address, const char* limit);

// pinned_alloc: out_host present, bytes above 0.
axl_status check_pinned_alloc(Fail fail, uint64_t bytes, void* const* out_host);

// The slots that hand out one value (flag addresses, native handles):
// stores `value` in `*out`, or reports "<slot>: out is NULL".
axl_status refuse_null_out(Fail fail, const char* slot);
template <class T>
axl_status give(Fail fail, const char* slot, T* out, T value) {
  if (out == nullptr) return refuse_null_out(fail, slot);
  *out = value;
  return AXL_SUCCESS;
}

}  // namespace axl::common
