// Multicast groups (axl.h, ABI 1.5): the plugin's group behind a handle, and
// its views as buffers. A view is an external buffer of its device whose
// release drops one reference to the group, so the group (and the plugin's
// memory) goes only after the last view, and after the queues that used that
// view reached its release (Buffer::~Buffer defers external releases).
#include "internal.hpp"

namespace axl::core {

Multicast::~Multicast() {
  if (pm && !backend->poisoned.load()) AXL_CALL(backend, multicast_destroy, pm);
  for (Device* d : devices) release(d);
}

namespace {

void release_view(void* group) { release(static_cast<Multicast*>(group)); }

}  // namespace

}  // namespace axl::core

using namespace axl::core;

extern "C" {

AXL_API axl_status axl_device_multicast_supported(axl_device_t device, uint8_t* out) {
  return guard([&]() -> axl_status {
    Device* d = as<Device>(device, Kind::device, "device");
    if (!d) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_device_multicast_supported: out_supported is NULL");
    *out = 0;
    if (d->props.is_host) return AXL_SUCCESS;
    if (axl_status s = device_usable(d)) return s;
    // A backend without the slot has no multicast groups: an answer, not an error.
    if (!d->backend->table.device_get_multicast_support) return AXL_SUCCESS;
    return AXL_CALL(d->backend, device_get_multicast_support, d->pdev, out);
  });
}

AXL_API axl_status axl_multicast_create(const axl_device_t* devices, uint32_t num_devices, uint64_t bytes,
                                        axl_multicast_t* out_group) {
  return guard([&]() -> axl_status {
    if (!devices || !out_group)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_multicast_create: devices or out_group is NULL");
    if (num_devices < 2)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_multicast_create: a multicast group needs at least 2 devices, got %u",
                  num_devices);
    if (bytes == 0) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_multicast_create: bytes is 0; expected > 0");
    std::vector<Device*> devs(num_devices);
    std::vector<axl_pdevice> pdevs(num_devices);
    for (uint32_t i = 0; i < num_devices; ++i) {
      Device* d = as<Device>(devices[i], Kind::device, "device");
      if (!d) return AXL_ERROR_INVALID_HANDLE;
      for (uint32_t j = 0; j < i; ++j)
        if (devs[j] == d)
          return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_multicast_create: %s is listed twice (entries %u and %u)",
                      dev_name(d).c_str(), j, i);
      if (d->props.is_host)
        return fail(AXL_ERROR_UNSUPPORTED, "axl_multicast_create: %s is a host device; multicast groups join "
                    "accelerators", dev_name(d).c_str());
      if (i > 0 && d->backend != devs[0]->backend)
        return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_multicast_create: %s (%s backend) and %s (%s backend) are of "
                    "different backends; a multicast group joins devices of one backend",
                    dev_name(devs[0]).c_str(), devs[0]->backend->name.c_str(), dev_name(d).c_str(),
                    d->backend->name.c_str());
      devs[i] = d;
      pdevs[i] = d->pdev;
    }
    Backend* b = devs[0]->backend;
    if (axl_status s = device_usable(devs[0])) return s;
    auto g = std::make_unique<Multicast>();
    g->backend = b;
    uint64_t reserved = 0;
    if (axl_status s = AXL_CALL(b, multicast_create, pdevs.data(), num_devices, bytes, &g->pm, &reserved)) {
      g->pm = nullptr;
      return s;
    }
    // The reservation is the size of each member's Buffer (an int64 extent
    // in axl.h's layouts), so a rounding past INT64_MAX cannot be handed out;
    // nor can one below what was asked. ~Multicast destroys the group.
    if (reserved < bytes || reserved > static_cast<uint64_t>(INT64_MAX))
      return fail(reserved < bytes ? AXL_ERROR_INTERNAL : AXL_ERROR_OUT_OF_DEVICE_MEMORY,
                  "axl_multicast_create: bytes %llu rounded up to %s's multicast granularity is %llu bytes; "
                  "expected at least bytes and at most %lld (the largest buffer)",
                  static_cast<unsigned long long>(bytes), b->name.c_str(),
                  static_cast<unsigned long long>(reserved), static_cast<long long>(INT64_MAX));
    g->reserved_bytes = reserved;
    for (Device* d : devs) retain(d);
    g->devices = std::move(devs);
    *out_group = to_handle<axl_multicast_t>(g.release());
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_multicast_retain(axl_multicast_t group) {
  return retain_handle(group, Kind::multicast, "multicast group");
}

AXL_API axl_status axl_multicast_release(axl_multicast_t group) {
  return release_handle(group, Kind::multicast, "multicast group");
}

AXL_API axl_status axl_multicast_reserved_bytes(axl_multicast_t group, uint64_t* out) {
  return guard([&]() -> axl_status {
    Multicast* g = as<Multicast>(group, Kind::multicast, "multicast group");
    if (!g) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_multicast_reserved_bytes: out_bytes is NULL");
    *out = g->reserved_bytes;
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_multicast_buffer(axl_multicast_t group, uint32_t index, uint32_t view,
                                        axl_buffer_t* out) {
  return guard([&]() -> axl_status {
    Multicast* g = as<Multicast>(group, Kind::multicast, "multicast group");
    if (!g) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_multicast_buffer: out_buffer is NULL");
    if (view != AXL_MULTICAST_VIEW_UNICAST && view != AXL_MULTICAST_VIEW_MULTICAST)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_multicast_buffer: view %u is not an AXL_MULTICAST_VIEW_*", view);
    if (index >= g->devices.size())
      return fail(AXL_ERROR_OUT_OF_RANGE, "axl_multicast_buffer: index %u is past the group's %zu devices", index,
                  g->devices.size());
    Device* d = g->devices[index];
    if (axl_status s = device_usable(d)) return s;
    axl_devaddr unicast = 0, multicast = 0;
    if (axl_status s = AXL_CALL(g->backend, multicast_get_addresses, g->pm, index, &unicast, &multicast)) return s;
    auto b = std::make_unique<Buffer>();
    b->device = d;
    b->address = view == AXL_MULTICAST_VIEW_UNICAST ? unicast : multicast;
    b->size = g->reserved_bytes;
    b->external = true;
    b->external_release = release_view;
    b->external_user_data = g;
    retain(d);
    retain(g);
    *out = to_handle<axl_buffer_t>(b.release());
    return AXL_SUCCESS;
  });
}

}  // extern "C"
