// Completion flags. OpenCL has no stream memory operations, so both queue
// operations run on the queue's host thread (host_step): a write is a
// release store once the work before it has run; a wait polls the value
// (common::wait_at_least: spin, then sleeps of up to 100 us) and holds the
// queue's later work behind a user event until the value is reached. The
// cost: a host thread per queue that waits or writes, one hand-off through
// it (a marker wait and a user event) per operation, and up to 0.1 ms
// between the value arriving and the queue going on.
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "axl/common/flag.hpp"
#include "axl/common/slot_checks.hpp"
#include "cl_backend.hpp"

namespace axl::opencl {

FlagStorage::~FlagStorage() {
  if (mem != nullptr) {
    device->forget(address, true);
    cl().clReleaseMemObject(mem);
  }
  std::free(value);
}

axl_status flag_create(axl_pdevice device, axl_pflag* out_flag) noexcept {
  return guarded("flag_create", [&]() -> axl_status {
    if (out_flag == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "flag_create: out_flag is NULL");
    Device& d = *from(device);
    auto storage = std::make_shared<FlagStorage>();
    storage->device = &d;
    // A cache line of its own: the device may write it while the host polls.
    storage->value = static_cast<uint64_t*>(std::aligned_alloc(64, 64));
    if (storage->value == nullptr) return fail(AXL_ERROR_OUT_OF_HOST_MEMORY, "flag_create: no host memory");
    std::memset(storage->value, 0, 64);
    cl_int r = CL_SUCCESS;
    storage->mem = cl().clCreateBuffer(d.context(), CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, sizeof(uint64_t),
                                       storage->value, &r);
    if (r != CL_SUCCESS || storage->mem == nullptr) {
      storage->mem = nullptr;
      return cl_fail("clCreateBuffer(CL_MEM_USE_HOST_PTR)", r, "for a completion flag");
    }
    storage->address = d.adopt(storage->mem, sizeof(uint64_t), true);
    *out_flag = common::to_handle<axl_pflag>(new Flag{std::move(storage)});
    return AXL_SUCCESS;
  });
}

axl_status flag_destroy(axl_pflag flag) noexcept {
  return guarded("flag_destroy", [&]() -> axl_status {
    delete from(flag);  // pending waits and writes hold the storage
    return AXL_SUCCESS;
  });
}

axl_status flag_get_device_address(axl_pflag flag, axl_devaddr* out) noexcept {
  return guarded("flag_get_device_address", [&]() -> axl_status {
    return common::give(fail, "flag_get_device_address", out, from(flag)->storage->address);
  });
}

axl_status flag_get_host_address(axl_pflag flag, uint64_t** out) noexcept {
  return guarded("flag_get_host_address", [&]() -> axl_status {
    return common::give(fail, "flag_get_host_address", out, from(flag)->storage->value);
  });
}

axl_status queue_wait_flag(axl_pqueue queue, axl_pflag flag, uint64_t value) noexcept {
  return guarded("queue_wait_flag", [&]() -> axl_status {
    std::shared_ptr<FlagStorage> storage = from(flag)->storage;
    return host_step(*from(queue), "queue_wait_flag",
                     [storage, value] { common::wait_at_least(storage->value, value); });
  });
}

axl_status queue_write_flag(axl_pqueue queue, axl_pflag flag, uint64_t value) noexcept {
  return guarded("queue_write_flag", [&]() -> axl_status {
    std::shared_ptr<FlagStorage> storage = from(flag)->storage;
    return host_step(*from(queue), "queue_write_flag", [storage, value] {
      std::atomic_ref<uint64_t>(*storage->value).store(value, std::memory_order_release);
    });
  });
}

}  // namespace axl::opencl
