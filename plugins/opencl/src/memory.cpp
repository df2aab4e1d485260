// Memory: one cl_mem per allocation (clCreateBuffer), named to the core by
// a synthetic device address. Why cl_mem and not SVM: buffers are OpenCL 1.2
// core and every device has them, while coarse-grained SVM is optional from
// OpenCL 3.0 on (a 1.2 driver, and many 3.0 ones, lack it); the price is the
// address-to-buffer lookup below, one map search per enqueue.
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

axl_status memory_alloc(axl_pdevice device, uint64_t bytes, axl_devaddr* out_address) noexcept {
  return guarded("memory_alloc", [&]() -> axl_status {
    if (out_address == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "memory_alloc: out_address is NULL");
    if (bytes == 0) return fail(AXL_ERROR_INVALID_ARGUMENT, "memory_alloc: bytes is 0; expected > 0");
    Device& d = *from(device);
    if (bytes > d.props.max_single_alloc_bytes)
      return fail(AXL_ERROR_OUT_OF_DEVICE_MEMORY,
                  common::str("memory_alloc: ", bytes, " bytes is above the device's largest "
                              "allocation, ", d.props.max_single_alloc_bytes,
                              " bytes (CL_DEVICE_MAX_MEM_ALLOC_SIZE)"));
    cl_int r = CL_SUCCESS;
    cl_mem mem = cl().clCreateBuffer(d.context(), CL_MEM_READ_WRITE, bytes, nullptr, &r);
    if (r != CL_SUCCESS || mem == nullptr)
      return cl_fail("clCreateBuffer", r, common::str(bytes, " bytes"),
                     AXL_ERROR_OUT_OF_DEVICE_MEMORY);
    // A range of its own, one alignment unit longer than the buffer, so an
    // end address never equals the next buffer's start.
    const uint64_t base = backend().next_address.fetch_add(round_up(bytes, kDeviceAlign) + kDeviceAlign);
    {
      std::lock_guard<std::mutex> lk(d.mem_mu);
      d.buffers.emplace(base, Buffer{mem, bytes});
    }
    *out_address = base;
    return AXL_SUCCESS;
  });
}

axl_status memory_free(axl_pdevice device, axl_devaddr address) noexcept {
  return guarded("memory_free", [&]() -> axl_status {
    Device& d = *from(device);
    cl_mem mem = nullptr;
    {
      std::lock_guard<std::mutex> lk(d.mem_mu);
      auto it = d.buffers.find(address);
      if (it == d.buffers.end())
        return fail(AXL_ERROR_INVALID_ARGUMENT,
                    common::str("memory_free: 0x", std::hex, address,
                                " is not an allocation of this OpenCL device"));
      mem = it->second.mem;
      d.buffers.erase(it);
    }
    // The core guarantees no queued work uses it; OpenCL would keep it alive
    // for such work anyway (commands hold their memory objects).
    if (cl_int r = cl().clReleaseMemObject(mem)) return cl_fail("clReleaseMemObject", r);
    return AXL_SUCCESS;
  });
}

}  // namespace axl::opencl
