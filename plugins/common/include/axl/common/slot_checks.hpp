// The argument checks that the same slot makes in every first-party backend,
// written once so that every backend refuses the same input with the same
// words. Each reports through the backend's own `fail` (the virtual backend
// adds native codes, the others do not) and returns its status, or
// AXL_SUCCESS when nothing is wrong:
//   if (axl_status s = common::check_queue_create(fail, desc, out_queue)) return s;
#pragma once

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
