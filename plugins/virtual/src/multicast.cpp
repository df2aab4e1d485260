// Multicast groups (plugin ABI 1.4, SymmetricPool): per member a unicast
// allocation and a multicast mapping over it whose writes reach every
// member's unicast memory (memory.cpp's mirrors, queue.cpp's broadcast), as
// stores to a CUDA multicast address do. Every pair of virtual devices is
// connected (device_can_access_peer), so every device supports them.
#include <memory>
#include <vector>

#include "virtual_backend.hpp"

namespace axl::virt {

namespace {

// Frees what `g` holds so far: mappings first, then the memory behind them.
void release_group(MulticastGroup& g) noexcept {
  for (const MulticastGroup::Member& m : g.members) {
    if (m.multicast) unmap_alias(*m.device, m.multicast);
  }
  for (const MulticastGroup::Member& m : g.members) {
    if (m.unicast) memory_free(common::to_handle<axl_pdevice>(m.device), m.unicast);
  }
}

}  // namespace

axl_status device_get_multicast_support(axl_pdevice device, uint8_t* out_supported) noexcept {
  return guarded("device_get_multicast_support", [&]() -> axl_status {
    if (device == nullptr || out_supported == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "device_get_multicast_support: device or out_supported is NULL");
    *out_supported = 1;
    return AXL_SUCCESS;
  });
}

axl_status multicast_create(const axl_pdevice* devices, uint32_t num_devices, uint64_t bytes,
                            axl_pmulticast* out_group, uint64_t* out_reserved_bytes) noexcept {
  return guarded("multicast_create", [&]() -> axl_status {
    if (devices == nullptr || num_devices < 2 || bytes == 0 || out_group == nullptr ||
        out_reserved_bytes == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("multicast_create: need 2 or more devices, bytes > 0 and non-NULL outputs (",
                              num_devices, " devices, bytes = ", bytes, ")"));
    if (bytes > UINT64_MAX - kMulticastGranularity)
      return fail(AXL_ERROR_OUT_OF_DEVICE_MEMORY, common::str("cannot reserve ", bytes, " bytes of multicast memory"));
    auto g = std::make_unique<MulticastGroup>();
    g->bytes = round_up(bytes, kMulticastGranularity);
    g->members.resize(num_devices);
    for (uint32_t i = 0; i < num_devices; ++i) {
      g->members[i].device = from(devices[i]);
      if (axl_status s = memory_alloc(devices[i], g->bytes, &g->members[i].unicast)) {
        release_group(*g);
        return s;  // memory_alloc reported it
      }
    }
    std::vector<unsigned char*> unicast(num_devices);
    for (uint32_t i = 0; i < num_devices; ++i) unicast[i] = backing_of(*g->members[i].device, g->members[i].unicast);
    for (uint32_t i = 0; i < num_devices; ++i) {
      auto mirrors = std::make_shared<std::vector<unsigned char*>>();
      for (uint32_t j = 0; j < num_devices; ++j)
        if (j != i) mirrors->push_back(unicast[j]);
      if (axl_status s = map_alias(*g->members[i].device, unicast[i], g->bytes, std::move(mirrors),
                                   &g->members[i].multicast)) {
        release_group(*g);
        return s;
      }
    }
    *out_reserved_bytes = g->bytes;
    *out_group = common::to_handle<axl_pmulticast>(g.release());
    return AXL_SUCCESS;
  });
}

axl_status multicast_get_addresses(axl_pmulticast group, uint32_t index, axl_devaddr* out_unicast,
                                   axl_devaddr* out_multicast) noexcept {
  return guarded("multicast_get_addresses", [&]() -> axl_status {
    MulticastGroup* g = from(group);
    if (g == nullptr || out_unicast == nullptr || out_multicast == nullptr || index >= g->members.size())
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("multicast_get_addresses: NULL group or output, or index ", index, " out of range"));
    *out_unicast = g->members[index].unicast;
    *out_multicast = g->members[index].multicast;
    return AXL_SUCCESS;
  });
}

axl_status multicast_destroy(axl_pmulticast group) noexcept {
  return guarded("multicast_destroy", [&]() -> axl_status {
    std::unique_ptr<MulticastGroup> g(from(group));
    if (!g) return fail(AXL_ERROR_INVALID_ARGUMENT, "multicast_destroy: group is NULL");
    release_group(*g);
    return AXL_SUCCESS;
  });
}

}  // namespace axl::virt
