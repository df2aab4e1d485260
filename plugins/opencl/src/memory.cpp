// Memory: one cl_mem per allocation (clCreateBuffer), named to the core by
// a synthetic device address. Why cl_mem and not SVM: buffers are OpenCL 1.2
// core and every device has them, while coarse-grained SVM is optional from
// OpenCL 3.0 on (a 1.2 driver, and many 3.0 ones, lack it); the price is the
// address-to-buffer lookup below, one map search per enqueue. Pinned host
// memory: a CL_MEM_ALLOC_HOST_PTR buffer, mapped once (clEnqueueMapBuffer)
// and kept mapped until pinned_free, so the driver knows the pages and may
// copy from them directly.
#include "axl/common/slot_checks.hpp"
#include "cl_backend.hpp"

namespace axl::opencl {

namespace {

uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

}  // namespace

axl_status Device::locate(uint64_t address, uint64_t bytes, const char* slot, Located* out) {
  std::lock_guard<std::mutex> lk(mem_mu);
  auto it = buffers.upper_bound(address);
  if (it != buffers.begin()) {
    --it;
    const uint64_t offset = address - it->first;
    if (offset < it->second.bytes && bytes <= it->second.bytes - offset) {
      *out = {it->second.mem, offset};
      return AXL_SUCCESS;
    }
  }
  return fail(AXL_ERROR_INVALID_ARGUMENT,
              common::str(slot, ": [0x", std::hex, address, ", +0x", bytes, std::dec,
                          ") is not inside an allocation of OpenCL device ", index));
}

axl_devaddr Device::adopt(cl_mem mem, uint64_t bytes, bool flag) {
  // A range of its own, one alignment unit longer than the buffer, so an
  // end address never equals the next buffer's start.
  const uint64_t base = backend().next_address.fetch_add(round_up(bytes, kDeviceAlign) + kDeviceAlign);
  std::lock_guard<std::mutex> lk(mem_mu);
  buffers.emplace(base, Buffer{mem, bytes, flag});
  return base;
}

cl_mem Device::forget(axl_devaddr address, bool flag) {
  std::lock_guard<std::mutex> lk(mem_mu);
  auto it = buffers.find(address);
  if (it == buffers.end() || it->second.flag != flag) return nullptr;
  cl_mem mem = it->second.mem;
  buffers.erase(it);
  return mem;
}

axl_status memory_alloc(axl_pdevice device, uint64_t bytes, axl_devaddr* out_address) noexcept {
  return guarded("memory_alloc", [&]() -> axl_status {
    Device& d = *from(device);
    if (axl_status s = common::check_memory_alloc(fail, d.props, bytes, out_address,
                                                  "CL_DEVICE_MAX_MEM_ALLOC_SIZE"))
      return s;
    cl_int r = CL_SUCCESS;
    cl_mem mem = cl().clCreateBuffer(d.context(), CL_MEM_READ_WRITE, bytes, nullptr, &r);
    if (r != CL_SUCCESS || mem == nullptr)
      return cl_fail("clCreateBuffer", r, common::str(bytes, " bytes"),
                     AXL_ERROR_OUT_OF_DEVICE_MEMORY);
    *out_address = d.adopt(mem, bytes);
    return AXL_SUCCESS;
  });
}

axl_status memory_free(axl_pdevice device, axl_devaddr address) noexcept {
  return guarded("memory_free", [&]() -> axl_status {
    Device& d = *from(device);
    // A flag's buffer is in the address space too, but is the flag's to free.
    cl_mem mem = d.forget(address);
    if (mem == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("memory_free: 0x", std::hex, address,
                              " is not an allocation of this OpenCL device"));
    // The core guarantees no queued work uses it; OpenCL would keep it alive
    // for such work anyway (commands hold their memory objects).
    if (cl_int r = cl().clReleaseMemObject(mem)) return cl_fail("clReleaseMemObject", r);
    return AXL_SUCCESS;
  });
}

axl_status pinned_alloc(axl_pdevice device, uint64_t bytes, void** out_host) noexcept {
  return guarded("pinned_alloc", [&]() -> axl_status {
    if (axl_status s = common::check_pinned_alloc(fail, bytes, out_host)) return s;
    Device& d = *from(device);
    const ClApi& c = cl();
    cl_int r = CL_SUCCESS;
    cl_mem mem = c.clCreateBuffer(d.context(), CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, nullptr, &r);
    if (r != CL_SUCCESS || mem == nullptr)
      return cl_fail("clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)", r, common::str(bytes, " bytes"),
                     AXL_ERROR_OUT_OF_HOST_MEMORY);
    std::lock_guard<std::mutex> lk(d.mem_mu);
    if (d.map_queue == nullptr) {
      d.map_queue = c.clCreateCommandQueue(d.context(), d.id, 0, &r);
      if (r != CL_SUCCESS) {
        d.map_queue = nullptr;
        c.clReleaseMemObject(mem);
        return cl_fail("clCreateCommandQueue", r, "for pinned memory");
      }
    }
    void* p = c.clEnqueueMapBuffer(d.map_queue, mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0,
                                   nullptr, nullptr, &r);
    if (r != CL_SUCCESS || p == nullptr) {
      c.clReleaseMemObject(mem);
      return cl_fail("clEnqueueMapBuffer", r, common::str(bytes, " bytes of pinned memory"),
                     AXL_ERROR_OUT_OF_HOST_MEMORY);
    }
    if (reinterpret_cast<uintptr_t>(p) % kPinnedAlign != 0) {
      c.clEnqueueUnmapMemObject(d.map_queue, mem, p, 0, nullptr, nullptr);
      c.clFinish(d.map_queue);
      c.clReleaseMemObject(mem);
      return fail(AXL_ERROR_UNSUPPORTED, common::str("pinned_alloc: OpenCL device ", d.index,
                                                     " mapped the buffer at ", p, ", not ", kPinnedAlign,
                                                     "-byte aligned as plugin.h requires"));
    }
    d.pinned.emplace(p, mem);
    *out_host = p;
    return AXL_SUCCESS;
  });
}

axl_status pinned_free(axl_pdevice device, void* host) noexcept {
  return guarded("pinned_free", [&]() -> axl_status {
    Device& d = *from(device);
    std::lock_guard<std::mutex> lk(d.mem_mu);
    auto it = d.pinned.find(host);
    if (it == d.pinned.end())
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("pinned_free: ", host, " is not pinned memory of OpenCL device ", d.index));
    const ClApi& c = cl();
    cl_int r = c.clEnqueueUnmapMemObject(d.map_queue, it->second, host, 0, nullptr, nullptr);
    if (r == CL_SUCCESS) r = c.clFinish(d.map_queue);
    c.clReleaseMemObject(it->second);
    d.pinned.erase(it);
    if (r != CL_SUCCESS) return cl_fail("clEnqueueUnmapMemObject", r, "in pinned_free");
    return AXL_SUCCESS;
  });
}

}  // namespace axl::opencl
