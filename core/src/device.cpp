// Devices: enumeration by label across backends, properties, peer access.
#include <cstring>

#include "internal.hpp"

namespace axl::core {

// Out of line in this file too: inlined into axl_device_get, GCC 12 warns
// (-Wstringop-overflow, a false positive) that the count is written into a
// zero-sized region. Every other file calls it out of line anyway.
__attribute__((noinline)) void retain(Object* o) { o->refs.fetch_add(1, std::memory_order_relaxed); }

void release(Object* o) {
  if (o->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    // The handle reads as released from here on, also during exit, when the
    // object itself stays.
    handle_unregister(o);
    // During exit plugins may already be torn down by the OS or their own
    // static destructors; the memory goes back with the process.
    if (process_exiting()) return;
    delete o;
  }
}

axl_status retain_handle(const void* handle, Kind k, const char* what) {
  return guard([&]() -> axl_status {
    Object* o = as<Object>(handle, k, what);
    if (!o) return AXL_ERROR_INVALID_HANDLE;
    retain(o);
    return AXL_SUCCESS;
  });
}

axl_status release_handle(const void* handle, Kind k, const char* what) {
  return guard([&]() -> axl_status {
    Object* o = as<Object>(handle, k, what);
    if (!o) return AXL_ERROR_INVALID_HANDLE;
    release(o);
    return AXL_SUCCESS;
  });
}

axl_status device_usable(Device* d) { return d->backend->ensure_ready(); }

namespace {

// Usable backends for a label, in discovery order. A backend whose
// initialisation failed no longer contributes devices.
struct Slot {
  Backend* backend;
  uint32_t index;
};

bool label_matches(Backend* b, const char* label) {
  if (!label) return true;
  return strcmp(label, b->is_host() ? "cpu" : "gpu") == 0;
}

axl_status check_label(const char* label) {
  if (label && strcmp(label, "cpu") != 0 && strcmp(label, "gpu") != 0)
    return fail(AXL_ERROR_INVALID_ARGUMENT, "device label '%s' is not \"cpu\" or \"gpu\" (or NULL for all)",
                label);
  return AXL_SUCCESS;
}

std::vector<Slot> enumerate(const char* label) {
  std::vector<Slot> out;
  // In virtual-device mode the accelerators are the virtual plugin's alone.
  const bool virtual_only = virtual_mode_on();
  for (Backend* b : registry().backends) {
    if (b->init_state.load() == 2 || !label_matches(b, label)) continue;
    if (virtual_only && !b->is_host() && !(b->flags & AXL_PLUGIN_FLAG_VIRTUAL)) continue;
    for (uint32_t i = 0; i < b->device_count; ++i) out.push_back({b, i});
  }
  return out;
}

void copy_str(std::string& dst, const char* src, size_t cap) {
  dst.assign(src, strnlen(src, cap));
}

axl_status make_device(Backend* b, uint32_t index, uint32_t id, Device** out) {
  // In a child forked after the backend was initialised, a device created
  // before the fork must not be handed out as if it worked: FORKED.
  if (b->poisoned.load(std::memory_order_relaxed)) return b->ensure_ready();
  {
    std::lock_guard<std::mutex> lk(b->dev_mu);
    if (b->devices.size() > index && b->devices[index]) {
      *out = b->devices[index];
      return AXL_SUCCESS;
    }
  }
  axl_status s = b->ensure_ready();
  if (s) return s;
  axl_pdevice pd = nullptr;
  if ((s = AXL_CALL(b, device_get, index, &pd))) return s;
  order_exit_drain();
  auto dev = std::make_unique<Device>();
  dev->backend = b;
  dev->pdev = pd;
  dev->backend_index = index;
  dev->id = b->is_host() ? 0 : id;
  dev->props.struct_size = sizeof(axl_device_properties);
  if ((s = AXL_CALL(b, device_get_properties, pd, &dev->props))) return s;
  copy_str(dev->label, dev->props.label, sizeof dev->props.label);
  copy_str(dev->api, dev->props.api, sizeof dev->props.api);
  copy_str(dev->arch, dev->props.architecture_name, sizeof dev->props.architecture_name);
  copy_str(dev->model, dev->props.model_name, sizeof dev->props.model_name);
  // The label follows the backend's declaration, so counts and devices agree.
  dev->label = b->is_host() ? "cpu" : "gpu";
  Queue* q = nullptr;
  if ((s = queue_create_internal(dev.get(), true, &q))) return s;
  dev->default_queue = q;
  std::lock_guard<std::mutex> lk(b->dev_mu);
  if (b->devices.size() <= index) b->devices.resize(index + 1, nullptr);
  if (b->devices[index]) {  // another thread won the race; keep its device
    release(q);
    *out = b->devices[index];
    return AXL_SUCCESS;
  }
  // The registry's own reference keeps the device alive for the process.
  b->devices[index] = dev.release();
  *out = b->devices[index];
  return AXL_SUCCESS;
}

}  // namespace


}  // namespace axl::core

using namespace axl::core;

extern "C" {

AXL_API axl_status axl_device_count(const char* label, uint32_t* out_count) {
  return guard([&]() -> axl_status {
    if (!out_count) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_device_count: out_count is NULL");
    if (axl_status s = check_label(label)) return s;
    if (axl_status s = ensure_init()) return s;
    *out_count = static_cast<uint32_t>(enumerate(label).size());
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_device_get(const char* label, uint32_t index, axl_device_t* out) {
  return guard([&]() -> axl_status {
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_device_get: out_device is NULL");
    if (axl_status s = check_label(label)) return s;
    if (axl_status s = ensure_init()) return s;
    auto slots = enumerate(label);
    // An id counts the devices of the backends before this one, whose counts
    // may still be census estimates that their driver corrects at
    // backend_init (Backend::refresh_device_count): initialise those first,
    // so that the id handed out now is the one it keeps. Each pass readies
    // at least one backend; a recount may move `index` to another backend.
    for (size_t pass = 0, readied = 1; readied && index < slots.size() && pass <= registry().backends.size();
         ++pass) {
      readied = 0;
      const Backend* target = slots[index].backend;
      for (const Slot& s : slots) {
        if (s.backend == target) break;
        if (s.backend->is_host() != target->is_host() || s.backend->init_state.load() != 0) continue;
        (void)s.backend->ensure_ready();  // one that fails contributes no devices
        readied = 1;
      }
      if (readied) slots = enumerate(label);
    }
    if (index >= slots.size())
      return fail(AXL_ERROR_OUT_OF_RANGE,
                  "device %u of label '%s' was requested but %zu such device(s) exist", index,
                  label ? label : "(any)", slots.size());
    // The id among devices of the same label (MAX's Accelerator(id)).
    uint32_t id = index;
    if (!label) {
      id = 0;
      for (uint32_t i = 0; i < index; ++i)
        if (slots[i].backend->is_host() == slots[index].backend->is_host()) ++id;
    }
    Device* d = nullptr;
    if (axl_status s = make_device(slots[index].backend, slots[index].index, id, &d)) return s;
    retain(d);
    *out = to_handle<axl_device_t>(d);
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_device_retain(axl_device_t device) {
  return retain_handle(device, Kind::device, "device");
}

AXL_API axl_status axl_device_release(axl_device_t device) {
  return guard([&]() -> axl_status {
    Device* d = as<Device>(device, Kind::device, "device");
    if (!d) return AXL_ERROR_INVALID_HANDLE;
    // Devices are process-lifetime; the registry holds one reference that an
    // application cannot drop, so over-releasing is caught here.
    int64_t r = d->refs.load();
    while (true) {
      if (r <= 1)
        return fail(AXL_ERROR_INVALID_HANDLE,
                    "device %s:%u released more times than it was obtained", d->label.c_str(),
                    d->id);
      if (d->refs.compare_exchange_weak(r, r - 1)) break;
    }
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_device_get_info(axl_device_t device, axl_device_info* out) {
  return guard([&]() -> axl_status {
    Device* d = as<Device>(device, Kind::device, "device");
    if (!d) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_device_get_info: out is NULL");
    if (out->struct_size < sizeof(axl_device_info))
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "axl_device_get_info: struct_size %zu, expected >= %zu", out->struct_size,
                  sizeof(axl_device_info));
    out->backend = d->backend->name.c_str();
    out->label = d->label.c_str();
    out->api = d->api.c_str();
    out->architecture_name = d->arch.c_str();
    out->model_name = d->model.c_str();
    out->id = d->id;
    out->backend_index = d->backend_index;
    out->total_memory_bytes = d->props.total_memory_bytes;
    out->max_single_alloc_bytes = d->props.max_single_alloc_bytes;
    out->is_host = d->props.is_host;
    out->is_host_unified = d->props.is_host_unified;
    out->is_compatible = d->props.is_compatible;
    memset(out->reserved, 0, sizeof out->reserved);
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_device_get_memory_info(axl_device_t device, uint64_t* out_free,
                                              uint64_t* out_total) {
  return guard([&]() -> axl_status {
    Device* d = as<Device>(device, Kind::device, "device");
    if (!d) return AXL_ERROR_INVALID_HANDLE;
    if (!out_free || !out_total)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_device_get_memory_info: NULL output");
    if (axl_status s = device_usable(d)) return s;
    // Released memory whose queues have finished with it is freed first, so
    // the figure after a release and a synchronize does not depend on when
    // the reaper thread runs (nothing here waits for a queue).
    reclaim_deferred_frees(d, nullptr);
    return AXL_CALL(d->backend, device_get_memory_info, d->pdev, out_free, out_total);
  });
}

AXL_API axl_status axl_device_can_access(axl_device_t device, axl_device_t peer, uint8_t* out) {
  return guard([&]() -> axl_status {
    Device* d = as<Device>(device, Kind::device, "device");
    if (!d) return AXL_ERROR_INVALID_HANDLE;
    Device* p = as<Device>(peer, Kind::device, "peer device");
    if (!p) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_device_can_access: out is NULL");
    *out = 0;
    // MAX: a device and itself, host devices, and different backends: false.
    if (d == p || d->props.is_host || p->props.is_host || d->backend != p->backend)
      return AXL_SUCCESS;
    if (axl_status s = device_usable(d)) return s;
    if (!d->backend->table.device_can_access_peer) return AXL_SUCCESS;
    return AXL_CALL(d->backend, device_can_access_peer, d->pdev, p->pdev, out);
  });
}

AXL_API axl_status axl_device_enable_peer_access(axl_device_t device, axl_device_t peer) {
  return guard([&]() -> axl_status {
    Device* d = as<Device>(device, Kind::device, "device");
    if (!d) return AXL_ERROR_INVALID_HANDLE;
    Device* p = as<Device>(peer, Kind::device, "peer device");
    if (!p) return AXL_ERROR_INVALID_HANDLE;
    if (d->backend != p->backend)
      return fail(AXL_ERROR_UNSUPPORTED,
                  "peer access between %s:%u (%s) and %s:%u (%s) is impossible: different backends",
                  d->label.c_str(), d->id, d->backend->name.c_str(), p->label.c_str(), p->id,
                  p->backend->name.c_str());
    if (d == p) return AXL_SUCCESS;
    if (axl_status s = device_usable(d)) return s;
    return AXL_CALL(d->backend, device_enable_peer_access, d->pdev, p->pdev);
  });
}

AXL_API axl_status axl_enable_all_peer_access(void) {
  return guard([&]() -> axl_status {
    uint32_t n = 0;
    if (axl_status s = axl_device_count("gpu", &n)) return s;
    std::vector<axl_device_t> devs(n);
    for (uint32_t i = 0; i < n; ++i)
      if (axl_status s = axl_device_get("gpu", i, &devs[i])) {
        for (uint32_t j = 0; j < i; ++j) axl_device_release(devs[j]);
        return s;
      }
    axl_status result = AXL_SUCCESS;
    for (uint32_t i = 0; i < n && !result; ++i)
      for (uint32_t j = 0; j < n && !result; ++j) {
        if (i == j) continue;
        uint8_t can = 0;
        if (axl_device_can_access(devs[i], devs[j], &can) || !can) continue;
        if (axl_status s = axl_device_enable_peer_access(devs[i], devs[j])) {
          std::string detail = axl_last_error_message();
          result = fail(s, "enabling peer access from gpu:%u to gpu:%u failed: %s", i, j,
                        detail.c_str());
        }
      }
    for (auto d : devs) axl_device_release(d);
    return result;
  });
}

AXL_API axl_status axl_device_default_queue(axl_device_t device, axl_queue_t* out) {
  return guard([&]() -> axl_status {
    Device* d = as<Device>(device, Kind::device, "device");
    if (!d) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_device_default_queue: out is NULL");
    retain(d->default_queue);
    *out = to_handle<axl_queue_t>(d->default_queue);
    return AXL_SUCCESS;
  });
}

AXL_API int axl_device_equal(axl_device_t a, axl_device_t b) { return a == b; }

}  // extern "C"
