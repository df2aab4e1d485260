#include "opencl_program.hpp"

#ifdef AXL_CTS_HAVE_OPENCL
#include <dlfcn.h>
#include <stdlib.h>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#endif

namespace cts {

#ifndef AXL_CTS_HAVE_OPENCL

std::vector<uint8_t> opencl_program_binary(uint64_t, const std::string&, std::string* why) {
  *why = "axl-cts was built without the OpenCL headers (CL/cl.h)";
  return {};
}

#else

namespace {

// The five OpenCL calls the build needs, from the loader the backend uses.
struct Cl {
  decltype(&::clGetCommandQueueInfo) queue_info = nullptr;
  decltype(&::clCreateProgramWithSource) create = nullptr;
  decltype(&::clBuildProgram) build = nullptr;
  decltype(&::clGetProgramInfo) program_info = nullptr;
  decltype(&::clReleaseProgram) release = nullptr;
};

bool open_cl(Cl* cl, std::string* why) {
  // The backend's own override first (AXL_OPENCL_LOADER_PATH), so both talk
  // to the same loader and its handles mean the same here.
  const char* env = getenv("AXL_OPENCL_LOADER_PATH");
  const char* name = env != nullptr && env[0] != '\0' ? env : "libOpenCL.so.1";
  void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);  // kept open: the backend holds it too
  if (lib == nullptr) {
    *why = std::string("cannot open the OpenCL ICD loader: ") + dlerror();
    return false;
  }
  cl->queue_info = reinterpret_cast<decltype(cl->queue_info)>(dlsym(lib, "clGetCommandQueueInfo"));
  cl->create = reinterpret_cast<decltype(cl->create)>(dlsym(lib, "clCreateProgramWithSource"));
  cl->build = reinterpret_cast<decltype(cl->build)>(dlsym(lib, "clBuildProgram"));
  cl->program_info = reinterpret_cast<decltype(cl->program_info)>(dlsym(lib, "clGetProgramInfo"));
  cl->release = reinterpret_cast<decltype(cl->release)>(dlsym(lib, "clReleaseProgram"));
  if (!cl->queue_info || !cl->create || !cl->build || !cl->program_info || !cl->release) {
    *why = std::string(name) + " lacks an OpenCL 1.2 entry point";
    return false;
  }
  return true;
}

std::string failed(const char* call, cl_int r) { return std::string(call) + " failed: " + std::to_string(r); }

// The built program `p`'s binary for `device`. The program is its context's,
// which may span several devices: binaries come one per device, in
// CL_PROGRAM_DEVICES order.
std::vector<uint8_t> binary_of(const Cl& cl, cl_program p, cl_device_id device, std::string* why) {
  cl_uint n = 0;
  cl_int r = cl.program_info(p, CL_PROGRAM_NUM_DEVICES, sizeof n, &n, nullptr);
  if (r != CL_SUCCESS || n == 0) {
    *why = failed("clGetProgramInfo(CL_PROGRAM_NUM_DEVICES)", r);
    return {};
  }
  std::vector<cl_device_id> devices(n);
  std::vector<size_t> sizes(n);
  r = cl.program_info(p, CL_PROGRAM_DEVICES, n * sizeof(cl_device_id), devices.data(), nullptr);
  if (r == CL_SUCCESS) r = cl.program_info(p, CL_PROGRAM_BINARY_SIZES, n * sizeof(size_t), sizes.data(), nullptr);
  if (r != CL_SUCCESS) {
    *why = failed("clGetProgramInfo(CL_PROGRAM_DEVICES, CL_PROGRAM_BINARY_SIZES)", r);
    return {};
  }
  cl_uint at = 0;
  while (at < n && devices[at] != device) ++at;
  if (at == n || sizes[at] == 0) {
    *why = "the built program has no binary for the queue's device";
    return {};
  }
  std::vector<std::vector<uint8_t>> all(n);
  std::vector<unsigned char*> outs(n, nullptr);
  for (cl_uint i = 0; i < n; ++i) {
    all[i].resize(sizes[i]);
    if (sizes[i] != 0) outs[i] = all[i].data();
  }
  r = cl.program_info(p, CL_PROGRAM_BINARIES, n * sizeof(unsigned char*), outs.data(), nullptr);
  if (r != CL_SUCCESS) {
    *why = failed("clGetProgramInfo(CL_PROGRAM_BINARIES)", r);
    return {};
  }
  return std::move(all[at]);
}

}  // namespace

std::vector<uint8_t> opencl_program_binary(uint64_t queue, const std::string& source, std::string* why) {
  Cl cl;
  if (!open_cl(&cl, why)) return {};
  const auto q = reinterpret_cast<cl_command_queue>(static_cast<uintptr_t>(queue));
  cl_context context = nullptr;
  cl_device_id device = nullptr;
  cl_int r = cl.queue_info(q, CL_QUEUE_CONTEXT, sizeof context, &context, nullptr);
  if (r == CL_SUCCESS) r = cl.queue_info(q, CL_QUEUE_DEVICE, sizeof device, &device, nullptr);
  if (r != CL_SUCCESS) {
    *why = failed("clGetCommandQueueInfo", r);
    return {};
  }
  const char* text = source.c_str();
  cl_program p = cl.create(context, 1, &text, nullptr, &r);
  if (r != CL_SUCCESS) {
    *why = failed("clCreateProgramWithSource", r);
    return {};
  }
  std::vector<uint8_t> binary;
  if ((r = cl.build(p, 1, &device, "", nullptr, nullptr)) != CL_SUCCESS)
    *why = failed("clBuildProgram", r);
  else
    binary = binary_of(cl, p, device, why);
  cl.release(p);
  return binary;
}

#endif

}  // namespace cts
