// Buffers: contiguous device or pinned-host allocations and byte views.
#include <cstdio>

#include "internal.hpp"

namespace axl::core {

Buffer::~Buffer() {
  if (base) {
    release(base);
    return;
  }
  if (!device) return;  // never completed: axl_buffer_create failed
  // Pending copies or launches may still touch the memory: it is freed once
  // the queues that used it have reached this point (reaper.cpp), without
  // blocking the caller. The device is immortal, so capturing it is safe.
  Device* d = device;
  const bool ext = external, pin = pinned;
  void* h = host;
  const axl_devaddr a = address;
  auto cb = external_release;
  void* ud = external_user_data;
  const uint64_t bytes = size;
  auto free_memory = [=] {
    if (ext) {
      if (cb) cb(ud);
    } else if (!d->backend->poisoned.load()) {
      if (pin)
        AXL_CALL(d->backend, pinned_free, d->pdev, h);
      else if (AXL_CALL(d->backend, memory_free, d->pdev, a))
        note_free_failure(d, bytes, a);
    }
  };
  if (used_by.empty())
    free_memory();  // never queued: no std::function, no reaper
  else if (ext || pin)
    free_after_queues(used_by, free_memory);
  else  // device memory: an allocation that does not fit may hurry this free
    free_after_queues(used_by, free_memory, d, bytes);
  release(device);
}

void note_free_failure(Device* d, uint64_t bytes, axl_devaddr address) {
  ErrorOrigin o = last_error_origin();
  char at[32];
  snprintf(at, sizeof at, "0x%llx", (unsigned long long)address);
  // The plugin's words first, as in every error it reports.
  o.message += " (releasing " + std::to_string(bytes) + " bytes at " + at + " of " + dev_name(d) +
               "; the memory stays allocated)";
  logf(AXL_LOG_ERROR, "%s", o.message.c_str());
  std::lock_guard<std::mutex> lk(d->free_failure_mu);
  if (d->free_failures++ == 0) d->free_failure = std::move(o);
}

axl_status take_free_failure(Device* d) {
  ErrorOrigin o;
  uint32_t n = 0;
  {
    std::lock_guard<std::mutex> lk(d->free_failure_mu);
    if (d->free_failures == 0) return AXL_SUCCESS;
    n = d->free_failures;
    d->free_failures = 0;
    o = std::move(d->free_failure);
  }
  std::string msg = o.message;
  if (n > 1) msg += " (and " + std::to_string(n - 1) + " later releases failed too)";
  return fail_from(o.status, o, msg);
}

namespace {

// memory_alloc; when it runs out of memory, frees of d's memory the reaper
// still holds are hurried (their queues may have passed the release point,
// or will shortly) and the allocation retried, as cudaMallocAsync reuses
// memory freed in stream order: memory the application released is never
// what makes an allocation fail. Bounded, since a queue gated on the host
// may never reach the release point.
constexpr std::chrono::seconds kReuseWait{5};

axl_status alloc_device_memory(Device* d, uint64_t size_bytes, axl_devaddr* out) {
  axl_status s = AXL_CALL(d->backend, memory_alloc, d->pdev, size_bytes, out);
  if (s != AXL_ERROR_OUT_OF_DEVICE_MEMORY) return s;
  const auto deadline = std::chrono::steady_clock::now() + kReuseWait;
  ErrorOrigin oom = last_error_origin();
  while (reclaim_deferred_frees(d, &deadline) > 0) {
    s = AXL_CALL(d->backend, memory_alloc, d->pdev, size_bytes, out);
    if (s != AXL_ERROR_OUT_OF_DEVICE_MEMORY) return s;
    oom = last_error_origin();
  }
  const uint64_t pending = deferred_free_bytes(d);
  if (pending)
    oom.message += "; " + std::to_string(pending) + " bytes released earlier are pending release (queues that used "
                   "them have not reached the release point within " + std::to_string(kReuseWait.count()) + " s)";
  else
    oom.message += "; no released memory is pending release";
  return fail_from(s, oom, oom.message);
}

}  // namespace

}  // namespace axl::core

using namespace axl::core;

namespace {
Buffer* as_buffer(axl_buffer_t h) { return as<Buffer>(h, Kind::buffer, "buffer"); }
}  // namespace


extern "C" {

AXL_API axl_status axl_buffer_create(axl_device_t device, uint64_t size_bytes, uint32_t flags,
                                     axl_buffer_t* out) {
  return guard([&]() -> axl_status {
    Device* d = as<Device>(device, Kind::device, "device");
    if (!d) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_buffer_create: out_buffer is NULL");
    if (flags & ~uint32_t(AXL_BUFFER_FLAG_PINNED | AXL_BUFFER_FLAG_TRACKED))
      return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_buffer_create: unknown flags 0x%x", flags);
    if (size_bytes == 0)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_buffer_create: size_bytes is 0; expected > 0");
    if (axl_status s = device_usable(d)) return s;
    const bool pinned = flags & AXL_BUFFER_FLAG_PINNED;
    if (!pinned && d->props.max_single_alloc_bytes && size_bytes > d->props.max_single_alloc_bytes)
      return fail(AXL_ERROR_OUT_OF_DEVICE_MEMORY,
                  "cannot allocate %llu bytes on %s:%u: the largest single allocation is %llu bytes",
                  (unsigned long long)size_bytes, d->label.c_str(), d->id,
                  (unsigned long long)d->props.max_single_alloc_bytes);
    // The Buffer is built only once the memory exists: its destructor frees
    // the memory and releases the device, neither of which a failed
    // allocation may do (it would free address 0, overwrite the plugin's
    // error detail, and drop a device reference never taken).
    auto b = std::make_unique<Buffer>();
    if (pinned) {
      void* host = nullptr;
      if (axl_status s = AXL_CALL(d->backend, pinned_alloc, d->pdev, size_bytes, &host)) return s;
      b->host = host;
      b->address = reinterpret_cast<axl_devaddr>(host);
    } else {
      axl_devaddr a = 0;
      if (axl_status s = alloc_device_memory(d, size_bytes, &a)) return s;
      b->address = a;
      // Only a host device's memory is host memory; nothing else is touched.
      if (d->props.is_host) b->host = reinterpret_cast<void*>(a);
    }
    b->device = d;
    b->size = size_bytes;
    b->pinned = pinned;
    b->flags = flags;
    retain(d);
    *out = to_handle<axl_buffer_t>(b.release());
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_buffer_create_external(axl_device_t device, uint64_t address, void* host,
                                              uint64_t size_bytes, uint32_t flags,
                                              axl_buffer_release_callback release_cb, void* user_data,
                                              axl_buffer_t* out) {
  return guard([&]() -> axl_status {
    Device* d = as<Device>(device, Kind::device, "device");
    if (!d) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_buffer_create_external: out_buffer is NULL");
    if (flags & ~uint32_t(AXL_BUFFER_FLAG_PINNED | AXL_BUFFER_FLAG_TRACKED))
      return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_buffer_create_external: unknown flags 0x%x", flags);
    if (address == 0 || size_bytes == 0)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "axl_buffer_create_external: address 0x%llx and size %llu; expected both non-zero",
                  (unsigned long long)address, (unsigned long long)size_bytes);
    if (axl_status s = device_usable(d)) return s;
    if (d->props.is_host && reinterpret_cast<uint64_t>(host) != address)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "axl_buffer_create_external: on host device %s:%u the host pointer %p must equal the address "
                  "0x%llx",
                  d->label.c_str(), d->id, host, (unsigned long long)address);
    if ((flags & AXL_BUFFER_FLAG_PINNED) && !host)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_buffer_create_external: pinned memory needs its host pointer");
    auto b = std::make_unique<Buffer>();
    b->device = d;
    b->address = address;
    b->host = host;
    b->size = size_bytes;
    b->pinned = flags & AXL_BUFFER_FLAG_PINNED;
    b->flags = flags;
    b->external = true;
    b->external_release = release_cb;
    b->external_user_data = user_data;
    retain(d);
    *out = to_handle<axl_buffer_t>(b.release());
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_buffer_flags(axl_buffer_t buffer, uint32_t* out) {
  return guard([&]() -> axl_status {
    Buffer* b = as_buffer(buffer);
    if (!b) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_buffer_flags: out is NULL");
    *out = b->allocation()->flags;
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_buffer_view(axl_buffer_t buffer, uint64_t offset, uint64_t size_bytes,
                                   axl_buffer_t* out) {
  return guard([&]() -> axl_status {
    Buffer* b = as_buffer(buffer);
    if (!b) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_buffer_view: out_view is NULL");
    if (size_bytes == 0) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_buffer_view: size_bytes is 0; expected > 0");
    if (offset > b->size || size_bytes > b->size - offset)
      return fail(AXL_ERROR_OUT_OF_RANGE, "axl_buffer_view: [%llu, %llu) is outside a %llu-byte buffer",
                  (unsigned long long)offset, (unsigned long long)(offset + size_bytes),
                  (unsigned long long)b->size);
    auto v = std::make_unique<Buffer>();
    v->device = b->device;
    v->base = b->allocation();
    v->address = b->address + offset;
    v->host = b->host ? static_cast<char*>(b->host) + offset : nullptr;
    v->size = size_bytes;
    v->pinned = b->pinned;
    retain(v->base);
    *out = to_handle<axl_buffer_t>(v.release());
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_buffer_retain(axl_buffer_t buffer) {
  return retain_handle(buffer, Kind::buffer, "buffer");
}

AXL_API axl_status axl_buffer_release(axl_buffer_t buffer) {
  return release_handle(buffer, Kind::buffer, "buffer");
}

AXL_API axl_status axl_buffer_try_release(axl_buffer_t buffer) {
  return guard([&]() -> axl_status {
    Buffer* b = as_buffer(buffer);
    if (!b) return AXL_ERROR_INVALID_HANDLE;
    // Not the last reference: dropped, unless another release made it the
    // last one meanwhile (then it is judged as the last below).
    int64_t r = b->refs.load(std::memory_order_relaxed);
    while (r > 1)
      if (b->refs.compare_exchange_weak(r, r - 1, std::memory_order_acq_rel)) return AXL_SUCCESS;
    // The last reference: the caller holds the only one, so nothing can add
    // a use or a stamp while this looks. Whatever would record an event, run
    // an external callback, release a completion (and with it perhaps a
    // queue, whose destroy drains it) or free through a driver that
    // synchronizes is left to axl_buffer_release.
    if (b->base || b->external || b->pinned || !b->device->props.is_host) return AXL_ERROR_NOT_READY;
    {
      std::lock_guard<std::mutex> lk(b->use_mu);
      if (!b->used_by.empty()) return AXL_ERROR_NOT_READY;
    }
    {
      std::lock_guard<std::mutex> lk(b->hazards.mu);
      if (b->hazards.last_write || !b->hazards.readers.empty()) return AXL_ERROR_NOT_READY;
    }
    release(b);
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_buffer_size(axl_buffer_t buffer, uint64_t* out) {
  return guard([&]() -> axl_status {
    Buffer* b = as_buffer(buffer);
    if (!b) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_buffer_size: out is NULL");
    *out = b->size;
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_buffer_device(axl_buffer_t buffer, axl_device_t* out) {
  return guard([&]() -> axl_status {
    Buffer* b = as_buffer(buffer);
    if (!b) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_buffer_device: out is NULL");
    retain(b->device);
    *out = to_handle<axl_device_t>(b->device);
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_buffer_device_address(axl_buffer_t buffer, uint64_t* out) {
  return guard([&]() -> axl_status {
    Buffer* b = as_buffer(buffer);
    if (!b) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_buffer_device_address: out is NULL");
    *out = b->address;
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_buffer_host_pointer(axl_buffer_t buffer, void** out) {
  return guard([&]() -> axl_status {
    Buffer* b = as_buffer(buffer);
    if (!b) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_buffer_host_pointer: out is NULL");
    if (!b->host)
      return fail(AXL_ERROR_INVALID_STATE,
                  "buffer is device memory of %s:%u, which the host cannot read; copy it to the host first",
                  b->device->label.c_str(), b->device->id);
    *out = b->host;
    return AXL_SUCCESS;
  });
}

}  // extern "C"
