// The multicast-group slots of DriverPlugin<D> (plugin ABI 1.4, MAX's
// SymmetricPool) over a driver's multicast objects: CUDA 12.1's
// cuMulticastCreate and the virtual memory management calls. Only a driver
// whose traits set kHasMulticast gets them in its table (HIP has no
// multicast objects), so nothing here is instantiated for the others.
//
// A group of n devices, `bytes` rounded up to the recommended granularity:
//   object  = multicast object for n devices of that size
//   each device: join the object (all before any bind: the driver blocks
//     binds and multicast maps until the team is complete)
//   each device: physical memory on it, bound to the object at offset 0,
//     mapped at an address of its own with read/write access for it (the
//     unicast address)
//   each device: the object mapped with access for it (its multicast
//     address; a store there reaches every member's physical memory)
// Every step that succeeded is recorded in the group, and undo_multicast
// reverses exactly those, in reverse order: after a failed create nothing
// is left, and destroy is the same walk.
//
// Part of driver_plugin_slots.hpp, which includes every part; included by
// exactly one translation unit of each driver-API plugin (its plugin.cpp).
#pragma once

#include <memory>
#include <string>

#include "axl/common/driver_plugin.hpp"

namespace axl::common {

// ---- multicast groups -------------------------------------------------------

// Whether `d` can join a group: the driver has every entry point and the
// device reports the attribute. Allocates nothing.
template <class D>
axl_status DriverPlugin<D>::multicast_supported(const Device& d, bool* out) {
  *out = false;
  // A driver older than the multicast API (or one lacking any of its entry
  // points) has no groups: an answer, not an error.
  if (!D::has_multicast(api())) return AXL_SUCCESS;
  int value = 0;
  if (axl_status s = check(D::multicast_attribute(api(), d.dev, &value), D::names.device_get_attribute,
                           str(D::kMulticastAttribute, " of ", D::text.vendor, " device ", d.index)))
    return s;
  *out = value != 0;
  return AXL_SUCCESS;
}

// Reserves `bytes` of addresses on `d`'s behalf, maps `handle` there and
// grants `d` read/write access. *reserved and *mapped are set as each step
// succeeds, so undo_multicast can reverse a partial mapping.
template <class D>
template <class MemHandle>
axl_status DriverPlugin<D>::map_for(const Device& d, MemHandle handle, uint64_t bytes, uint64_t alignment,
                                    typename D::DevicePtr* out, bool* reserved, bool* mapped,
                                    const std::string& what) {
  const Api& a = api();
  if (axl_status s = check(a.mem_address_reserve(out, bytes, alignment, typename D::DevicePtr{}, 0),
                           D::names.mem_address_reserve, what))
    return s;
  *reserved = true;
  if (axl_status s = check(a.mem_map(*out, bytes, 0, handle, 0), D::names.mem_map, what)) return s;
  *mapped = true;
  typename D::AccessDesc access{};
  access.location.type = D::kLocationDevice;
  access.location.id = d.dev;
  access.flags = D::kProtReadWrite;
  return check(a.mem_set_access(*out, bytes, &access, 1), D::names.mem_set_access, what);
}

// Reverses every recorded step of `g`, last first: the multicast mappings,
// then per member its unicast mapping, the binding and the memory, then the
// object. Goes on past a failure (freeing as much as it can) and answers
// the first one, reported when `report` (destroy; a failed create keeps the
// error that made it fail).
template <class D>
axl_status DriverPlugin<D>::undo_multicast(Multicast& g, bool report) noexcept {
  const Api& a = api();
  axl_status first = AXL_SUCCESS;
  auto step = [&first, report](Result r, const char* call, const Device& d) {
    if (r == D::kSuccess || first != AXL_SUCCESS) return;
    first = report ? fail_driver(r, call, str("releasing a multicast group: ", D::text.vendor, " device ", d.index))
                   : D::errors().status_of(static_cast<int64_t>(r));
  };
  auto enter = [&first, report](const Device& d) {
    if (report) {
      if (axl_status s = make_current(d); s != AXL_SUCCESS && first == AXL_SUCCESS) first = s;
    } else {
      (void)api().set_current(d.ctx);
    }
  };
  for (size_t i = g.members.size(); i-- > 0;) {
    typename Multicast::Member& m = g.members[i];
    if (!m.multicast_reserved) continue;
    enter(*m.device);
    if (m.multicast_mapped) step(a.mem_unmap(m.multicast, g.bytes), D::names.mem_unmap, *m.device);
    step(a.mem_address_free(m.multicast, g.bytes), D::names.mem_address_free, *m.device);
    m.multicast_mapped = m.multicast_reserved = false;
  }
  for (size_t i = g.members.size(); i-- > 0;) {
    typename Multicast::Member& m = g.members[i];
    if (!m.created) continue;
    enter(*m.device);
    if (m.unicast_mapped) step(a.mem_unmap(m.unicast, g.bytes), D::names.mem_unmap, *m.device);
    if (m.unicast_reserved) step(a.mem_address_free(m.unicast, g.bytes), D::names.mem_address_free, *m.device);
    if (m.bound) step(a.mc_unbind(g.object, m.device->dev, 0, g.bytes), D::names.mc_unbind, *m.device);
    step(a.mem_release(m.memory), D::names.mem_release, *m.device);
    m.unicast_mapped = m.unicast_reserved = m.bound = m.created = false;
  }
  if (g.object_created) {
    // Members that joined leave with the object: there is no call to undo a join.
    step(a.mem_release(g.object), D::names.mem_release, *g.members[0].device);
    g.object_created = false;
  }
  return first;
}

template <class D>
axl_status DriverPlugin<D>::device_get_multicast_support(axl_pdevice device, uint8_t* out_supported) noexcept {
  return guarded("device_get_multicast_support", [&]() -> axl_status {
    if (out_supported == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "device_get_multicast_support: out_supported is NULL");
    bool supported = false;
    if (axl_status s = multicast_supported(*from(device), &supported)) return s;
    *out_supported = supported ? 1 : 0;
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::multicast_create(const axl_pdevice* devices, uint32_t num_devices, uint64_t bytes,
                                             axl_pmulticast* out_group, uint64_t* out_reserved_bytes) noexcept {
  return guarded("multicast_create", [&]() -> axl_status {
    if (devices == nullptr || num_devices < 2 || bytes == 0 || out_group == nullptr || out_reserved_bytes == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  str("multicast_create: ", num_devices, " devices, ", bytes,
                      " bytes; expected 2 or more devices, bytes > 0 and non-NULL outputs"));
    const Api& a = api();
    auto g = std::make_unique<Multicast>();
    g->members.resize(num_devices);
    for (uint32_t i = 0; i < num_devices; ++i) {
      Device& d = *from(devices[i]);
      g->members[i].device = &d;
      bool supported = false;
      if (axl_status s = multicast_supported(d, &supported)) return s;
      if (!supported)
        return fail(AXL_ERROR_UNSUPPORTED,
                    str("multicast_create: ", D::text.vendor, " device ", d.index, " (", d.props.model_name,
                        ") has no multicast support (",
                        D::has_multicast(a) ? str(D::kMulticastAttribute, " is 0")
                                            : str("the driver lacks ", D::names.mc_create, " or the calls around it"),
                        ")"));
    }
    Device& first = *g->members[0].device;
    if (axl_status s = make_current(first)) return s;
    std::string group = str("a multicast group of ", D::text.vendor, " devices ");
    for (uint32_t i = 0; i < num_devices; ++i) group += str(i ? ", " : "", g->members[i].device->index);
    group += str(" (", bytes, " bytes each)");
    size_t granularity = 0;
    if (axl_status s = check(D::multicast_granularity(a, num_devices, bytes, &granularity),
                             D::names.mc_get_granularity, group))
      return s;
    if (granularity == 0)
      return fail(AXL_ERROR_INTERNAL, str(D::names.mc_get_granularity, " answered a granularity of 0 for ", group));
    if (bytes > UINT64_MAX - granularity)
      return fail(AXL_ERROR_OUT_OF_DEVICE_MEMORY, str("multicast_create: cannot reserve ", group));
    g->granularity = granularity;
    g->bytes = (bytes + granularity - 1) / granularity * granularity;
    // From here on every failure undoes what was done before it.
    auto undo_and = [&g](axl_status s) {
      (void)undo_multicast(*g, false);
      return s;
    };
    if (axl_status s = check(D::multicast_object(a, num_devices, g->bytes, &g->object), D::names.mc_create, group))
      return s;
    g->object_created = true;
    for (typename Multicast::Member& m : g->members)
      if (axl_status s = check(a.mc_add_device(g->object, m.device->dev), D::names.mc_add_device,
                               str(group, ": ", D::text.vendor, " device ", m.device->index)))
        return undo_and(s);
    for (typename Multicast::Member& m : g->members) {
      const std::string what = str(group, ": ", D::text.vendor, " device ", m.device->index);
      if (axl_status s = make_current(*m.device)) return undo_and(s);
      if (axl_status s = check(D::physical_memory(a, &m.memory, g->bytes, m.device->dev), D::names.mem_create, what))
        return undo_and(s);
      m.created = true;
      if (axl_status s = check(a.mc_bind_mem(g->object, 0, m.memory, 0, g->bytes, 0), D::names.mc_bind_mem, what))
        return undo_and(s);
      m.bound = true;
      if (axl_status s = map_for(*m.device, m.memory, g->bytes, granularity, &m.unicast, &m.unicast_reserved,
                                 &m.unicast_mapped, what + " (its own memory)"))
        return undo_and(s);
    }
    for (typename Multicast::Member& m : g->members) {
      if (axl_status s = make_current(*m.device)) return undo_and(s);
      if (axl_status s = map_for(*m.device, g->object, g->bytes, granularity, &m.multicast, &m.multicast_reserved,
                                 &m.multicast_mapped,
                                 str(group, ": ", D::text.vendor, " device ", m.device->index, " (the multicast object)")))
        return undo_and(s);
    }
    *out_reserved_bytes = g->bytes;
    *out_group = to_handle<axl_pmulticast>(g.release());
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::multicast_get_addresses(axl_pmulticast group, uint32_t index, axl_devaddr* out_unicast,
                                                    axl_devaddr* out_multicast) noexcept {
  return guarded("multicast_get_addresses", [&]() -> axl_status {
    const Multicast* g = from(group);
    if (out_unicast == nullptr || out_multicast == nullptr || index >= g->members.size())
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  str("multicast_get_addresses: index ", index, " of a group of ", g->members.size(),
                      " devices, outputs ", static_cast<void*>(out_unicast), " and ",
                      static_cast<void*>(out_multicast), "; expected an index below the count and two outputs"));
    *out_unicast = D::addr(g->members[index].unicast);
    *out_multicast = D::addr(g->members[index].multicast);
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::multicast_destroy(axl_pmulticast group) noexcept {
  return guarded("multicast_destroy", [&]() -> axl_status {
    // The core guarantees no queued work uses the memory any more.
    std::unique_ptr<Multicast> g(from(group));
    return undo_multicast(*g, true);
  });
}

}  // namespace axl::common
