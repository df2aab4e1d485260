// Handle conversion at the ABI boundary: the opaque axl_p* handles of
// plugin.h are pointers to a backend's own objects, cast both ways here
// once instead of in every backend.
//
//   inline constexpr common::Handles<Device, Queue, Event, Flag, Module, Kernel> from{};
//   Queue* q = from(queue);                          // axl_pqueue -> Queue*
//   *out_queue = common::to_handle<axl_pqueue>(q);   // Queue* -> axl_pqueue
#pragma once

#include <type_traits>

#include "axl/plugin.h"

namespace axl::common {

// `from(handle)` for every handle type: a function object so that a backend
// names its object types once and keeps writing `from(x)`. Multicast: the
// multicast group (ABI 1.4), for a backend that has them.
template <class Device, class Queue, class Event, class Flag, class Module, class Kernel,
          class Multicast = void>
struct Handles {
  Multicast* operator()(axl_pmulticast h) const noexcept { return reinterpret_cast<Multicast*>(h); }
  Device* operator()(axl_pdevice h) const noexcept { return reinterpret_cast<Device*>(h); }
  Queue* operator()(axl_pqueue h) const noexcept { return reinterpret_cast<Queue*>(h); }
  Event* operator()(axl_pevent h) const noexcept { return reinterpret_cast<Event*>(h); }
  Flag* operator()(axl_pflag h) const noexcept { return reinterpret_cast<Flag*>(h); }
  Module* operator()(axl_pmodule h) const noexcept { return reinterpret_cast<Module*>(h); }
  Kernel* operator()(axl_pkernel h) const noexcept { return reinterpret_cast<Kernel*>(h); }
};

// The handle an object is handed out as. Only plugin.h's handle types.
template <class Handle, class Object>
Handle to_handle(Object* object) noexcept {
  static_assert(std::is_same_v<Handle, axl_pdevice> || std::is_same_v<Handle, axl_pqueue> ||
                    std::is_same_v<Handle, axl_pevent> || std::is_same_v<Handle, axl_pflag> ||
                    std::is_same_v<Handle, axl_pmodule> || std::is_same_v<Handle, axl_pkernel> ||
                    std::is_same_v<Handle, axl_pmulticast>,
                "to_handle converts to plugin.h's opaque handle types only");
  return reinterpret_cast<Handle>(object);
}

}  // namespace axl::common
