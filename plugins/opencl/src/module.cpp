// Modules and kernels: programs from OpenCL C source (module_compile,
// clCreateProgramWithSource + clBuildProgram, the build log in the error),
// SPIR-V (module_load, clCreateProgramWithIL where the platform has it) and
// device binaries (module_load, clCreateProgramWithBinary); kernels by name
// (clCreateKernel); launches (clSetKernelArg, clEnqueueNDRangeKernel with
// global = grid x block, local = block); the test kernels (test_kernels.cl).
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

#include "axl/common/launch_args.hpp"
#include "axl/common/slot_checks.hpp"
#include "cl_backend.hpp"
#include "test_kernels_cl.hpp"

namespace axl::opencl {

Module::~Module() {
  kernels.for_each([](Kernel& k) { cl().clReleaseKernel(k.kernel); });
  if (program != nullptr) cl().clReleaseProgram(program);
}

namespace {

std::string build_log(cl_program program, cl_device_id device) {
  size_t n = 0;
  if (cl().clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) != CL_SUCCESS || n == 0)
    return "";
  std::string log(n, '\0');
  if (cl().clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr) != CL_SUCCESS)
    return "";
  log.resize(std::strlen(log.c_str()));
  return log;
}

// Builds `program` (owned: released on failure) for `d` with `options` and
// hands out the module; the build log goes into the error.
axl_status build(Device& d, cl_program program, const std::string& options, const char* what,
                 Module** out) {
  const cl_int r = cl().clBuildProgram(program, 1, &d.id, options.c_str(), nullptr, nullptr);
  if (r != CL_SUCCESS) {
    const std::string log = build_log(program, d.id);
    cl().clReleaseProgram(program);
    return cl_fail("clBuildProgram", r, common::str(what, " does not build for OpenCL device ", d.index,
                                                    log.empty() ? "" : ":\n", log),
                   AXL_ERROR_INVALID_ARGUMENT);
  }
  auto m = std::make_unique<Module>();
  m->device = &d;
  m->program = program;
  *out = m.release();
  return AXL_SUCCESS;
}

axl_status compile_source(Device& d, const char* source, const std::string& options, const char* what,
                          Module** out) {
  cl_int r = CL_SUCCESS;
  cl_program p = cl().clCreateProgramWithSource(d.context(), 1, &source, nullptr, &r);
  if (r != CL_SUCCESS || p == nullptr) return cl_fail("clCreateProgramWithSource", r);
  // Argument info (address spaces) lets a launch refuse a scalar at a
  // pointer parameter instead of the driver dereferencing it.
  return build(d, p, options.empty() ? "-cl-kernel-arg-info" : options + " -cl-kernel-arg-info", what, out);
}

// Each parameter's address space, or none when the driver keeps no
// argument info for the program (CL_KERNEL_ARG_INFO_NOT_AVAILABLE).
std::vector<cl_kernel_arg_address_qualifier> arg_spaces(cl_kernel k, cl_uint n) {
  std::vector<cl_kernel_arg_address_qualifier> out(n);
  if (cl().clGetKernelArgInfo == nullptr) return {};
  for (cl_uint i = 0; i < n; ++i)
    if (cl().clGetKernelArgInfo(k, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof out[i], &out[i], nullptr) != CL_SUCCESS)
      return {};
  return out;
}

// Why argument i of kind `kind` cannot go to a parameter in `space`, or "".
std::string arg_kind_mismatch(const Kernel& k, uint32_t i, int32_t kind) {
  if (k.arg_spaces.empty()) return "";
  const cl_kernel_arg_address_qualifier space = k.arg_spaces[i];
  const bool pointer = space == CL_KERNEL_ARG_ADDRESS_GLOBAL || space == CL_KERNEL_ARG_ADDRESS_CONSTANT;
  const char* expected = pointer ? "a buffer (its parameter is a __global or __constant pointer)"
                         : space == CL_KERNEL_ARG_ADDRESS_LOCAL ? "a local-memory size (its parameter is __local)"
                                                                : "a value (its parameter is not a pointer)";
  const bool ok = pointer ? kind == AXL_ARG_DEVADDR
                  : space == CL_KERNEL_ARG_ADDRESS_LOCAL ? kind == AXL_ARG_LOCAL
                                                         : kind == AXL_ARG_SCALAR;
  if (ok) return "";
  const char* given = kind == AXL_ARG_DEVADDR ? "a buffer" : kind == AXL_ARG_LOCAL ? "a local-memory size" : "a value";
  return common::str("queue_launch: argument ", i, " of kernel '", k.name, "' must be ", expected, ", got ", given);
}

}  // namespace

axl_status module_compile(axl_pdevice device, const axl_compile_desc* desc, axl_pmodule* out_module) noexcept {
  return guarded("module_compile", [&]() -> axl_status {
    if (desc == nullptr || desc->source == nullptr || out_module == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "module_compile: desc, its source or out_module is NULL");
    if (desc->language != kSourceLanguageOpenclC)
      return fail(AXL_ERROR_UNSUPPORTED,
                  common::str("module_compile: the opencl backend compiles OpenCL C (language ",
                              kSourceLanguageOpenclC, "), not language ", desc->language));
    std::string options;
    for (uint32_t i = 0; i < desc->num_options; ++i)
      options += (i ? " " : "") + std::string(desc->options[i] ? desc->options[i] : "");
    Module* m = nullptr;
    const std::string what = common::str("OpenCL C program '", desc->name ? desc->name : "source.cl", "'");
    if (axl_status s = compile_source(*from(device), desc->source, options, what.c_str(), &m)) return s;
    *out_module = common::to_handle<axl_pmodule>(m);
    return AXL_SUCCESS;
  });
}

axl_status module_load(axl_pdevice device, const axl_module_desc* desc, axl_pmodule* out_module) noexcept {
  return guarded("module_load", [&]() -> axl_status {
    if (desc == nullptr || out_module == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "module_load: desc or out_module is NULL");
    Device& d = *from(device);
    std::string bytes;
    if (desc->path != nullptr) {
      std::ifstream f(desc->path, std::ios::binary);
      if (!f) return fail(AXL_ERROR_NOT_FOUND, common::str("module_load: cannot open ", desc->path));
      bytes.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    } else if (desc->data != nullptr && desc->size != 0) {
      bytes.assign(static_cast<const char*>(desc->data), desc->size);
    } else {
      return fail(AXL_ERROR_INVALID_ARGUMENT, "module_load: neither data nor path is given");
    }
    // SPIR-V starts with its magic number 0x07230203 (little-endian here).
    const bool spirv = desc->format == AXL_MODULE_FORMAT_SPIRV ||
                       (bytes.size() >= 4 && static_cast<uint8_t>(bytes[0]) == 0x03 &&
                        static_cast<uint8_t>(bytes[1]) == 0x02 && static_cast<uint8_t>(bytes[2]) == 0x23 &&
                        static_cast<uint8_t>(bytes[3]) == 0x07);
    cl_int r = CL_SUCCESS;
    cl_program p = nullptr;
    const char* what = nullptr;
    if (spirv) {
      if (cl().clCreateProgramWithIL == nullptr)
        return fail(AXL_ERROR_UNSUPPORTED, "module_load: SPIR-V needs clCreateProgramWithIL (OpenCL 2.1), "
                                           "which this ICD loader lacks");
      if (d.il_version.empty())
        return fail(AXL_ERROR_UNSUPPORTED,
                    common::str("module_load: OpenCL device ", d.index, " (", d.props.model_name,
                                ") takes no SPIR-V: its CL_DEVICE_IL_VERSION is empty"));
      p = cl().clCreateProgramWithIL(d.context(), bytes.data(), bytes.size(), &r);
      if (r != CL_SUCCESS || p == nullptr)
        return cl_fail("clCreateProgramWithIL", r, common::str("OpenCL device ", d.index,
                                                                " does not take this SPIR-V module"),
                       r == CL_INVALID_OPERATION ? AXL_ERROR_UNSUPPORTED : AXL_ERROR_INVALID_ARGUMENT);
      what = "the SPIR-V module";
    } else {
      // A device binary, as clGetProgramInfo(CL_PROGRAM_BINARIES) gave it.
      const size_t size = bytes.size();
      const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
      cl_int binary_status = CL_SUCCESS;
      p = cl().clCreateProgramWithBinary(d.context(), 1, &d.id, &size, &data, &binary_status, &r);
      if (r != CL_SUCCESS || p == nullptr)
        return cl_fail("clCreateProgramWithBinary", r == CL_SUCCESS ? binary_status : r,
                       common::str("not a program binary for OpenCL device ", d.index),
                       AXL_ERROR_INVALID_ARGUMENT);
      what = "the program binary";
    }
    Module* m = nullptr;
    if (axl_status s = build(d, p, "", what, &m)) return s;
    *out_module = common::to_handle<axl_pmodule>(m);
    return AXL_SUCCESS;
  });
}

axl_status module_unload(axl_pmodule module) noexcept {
  return guarded("module_unload", [&]() -> axl_status {
    delete from(module);
    return AXL_SUCCESS;
  });
}

axl_status module_get_kernel(axl_pmodule module, const char* name, axl_pkernel* out_kernel) noexcept {
  return guarded("module_get_kernel", [&]() -> axl_status {
    if (axl_status s = common::check_module_get_kernel(fail, name, out_kernel)) return s;
    Module& m = *from(module);
    Kernel* k = nullptr;
    axl_status s = m.kernels.get(
        name,
        [&](const char* key, std::unique_ptr<Kernel>& slot) -> axl_status {
          cl_int r = CL_SUCCESS;
          cl_kernel ck = cl().clCreateKernel(m.program, key, &r);
          if (r != CL_SUCCESS || ck == nullptr)
            return cl_fail("clCreateKernel", r, common::str("no kernel named '", key, "' in the module"),
                           r == CL_INVALID_KERNEL_NAME ? AXL_ERROR_NOT_FOUND : AXL_SUCCESS);
          auto kernel = std::make_unique<Kernel>();
          kernel->name = key;
          kernel->kernel = ck;
          kernel->module = &m;
          cl().clGetKernelInfo(ck, CL_KERNEL_NUM_ARGS, sizeof kernel->num_args, &kernel->num_args, nullptr);
          kernel->arg_spaces = arg_spaces(ck, kernel->num_args);
          slot = std::move(kernel);
          return AXL_SUCCESS;
        },
        &k);
    if (s != AXL_SUCCESS) return s;
    *out_kernel = common::to_handle<axl_pkernel>(k);
    return AXL_SUCCESS;
  });
}

axl_status device_get_test_kernel(axl_pdevice device, int32_t which, axl_pkernel* out_kernel) noexcept {
  return guarded("device_get_test_kernel", [&]() -> axl_status {
    if (out_kernel == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "device_get_test_kernel: out_kernel is NULL");
    const char* name = which == AXL_TEST_KERNEL_INCREMENT_U32 ? "axl_test_increment_u32"
                       : which == AXL_TEST_KERNEL_FILL_U32    ? "axl_test_fill_u32"
                                                              : nullptr;
    if (name == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT, common::str("device_get_test_kernel: no test kernel ", which));
    Device& d = *from(device);
    // Built once per device and kept until the process ends (plugin.h: the
    // test kernels live until backend_shutdown; the module is never freed).
    std::call_once(d.test_once, [&] {
      d.test_status = compile_source(d, kTestKernelsCl, "", "the test kernels (test_kernels.cl)", &d.test_module);
    });
    if (d.test_status != AXL_SUCCESS)
      return fail(d.test_status, "device_get_test_kernel: the test kernels did not build (see the first report)");
    return module_get_kernel(common::to_handle<axl_pmodule>(d.test_module), name, out_kernel);
  });
}

axl_status queue_launch(axl_pqueue queue, axl_pkernel kernel, const axl_launch_config* config,
                        const axl_kernel_arg* args, uint32_t num_args) noexcept {
  return guarded("queue_launch", [&]() -> axl_status {
    if (config == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "queue_launch: config is NULL");
    Queue& q = *from(queue);
    Kernel& k = *from(kernel);
    // Argument shapes only: OpenCL checks each argument's size against the
    // kernel's parameter (clSetKernelArg, CL_INVALID_ARG_SIZE).
    const std::string why = common::check_launch_args(k.name.c_str(), nullptr, -1, args, num_args,
                                                      common::ArgLimits{k.num_args, 4096, true});
    if (!why.empty()) return fail(AXL_ERROR_INVALID_ARGUMENT, why);
    Device& d = *q.device;
    if (k.module->device != &d)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("queue_launch: kernel '", k.name, "' was built for OpenCL device ",
                              k.module->device->index, ", the queue is on device ", d.index));
    if (num_args != k.num_args)
      return fail(AXL_ERROR_INVALID_ARGUMENT, common::str("queue_launch: kernel '", k.name, "' takes ",
                                                          k.num_args, " argument(s), ", num_args, " given"));
    for (uint32_t i = 0; i < num_args; ++i)
      if (const std::string bad = arg_kind_mismatch(k, i, args[i].kind); !bad.empty())
        return fail(AXL_ERROR_INVALID_ARGUMENT, bad);
    if (config->shared_mem_bytes != 0)
      return fail(AXL_ERROR_UNSUPPORTED,
                  common::str("queue_launch: ", config->shared_mem_bytes, " bytes of dynamic shared memory: "
                              "OpenCL passes local memory as a __local kernel parameter; pass it as an "
                              "AXL_ARG_LOCAL argument of that size"));
    size_t global[3], local[3];
    size_t threads = 1;
    for (int i = 0; i < 3; ++i) {
      local[i] = config->block[i];
      global[i] = static_cast<size_t>(config->grid[i]) * config->block[i];
      threads *= local[i];
      if (local[i] > d.max_work_item_sizes[i])
        return fail(AXL_ERROR_INVALID_ARGUMENT,
                    common::str("queue_launch: block[", i, "] = ", local[i], " is above OpenCL device ", d.index,
                                "'s limit of ", d.max_work_item_sizes[i], " (CL_DEVICE_MAX_WORK_ITEM_SIZES)"));
    }
    if (threads > d.max_work_group_size)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("queue_launch: a block of ", threads, " threads is above OpenCL device ", d.index,
                              "'s limit of ", d.max_work_group_size, " (CL_DEVICE_MAX_WORK_GROUP_SIZE)"));
    // Buffer arguments: the cl_mem behind the address, or a sub-buffer from
    // the address on when it is inside an allocation (released once the
    // launch holds it).
    std::vector<cl_mem> subs;
    struct Release {
      std::vector<cl_mem>& subs;
      ~Release() {
        for (cl_mem m : subs) cl().clReleaseMemObject(m);
      }
    } release{subs};
    std::lock_guard<std::mutex> lk(k.launch_mu);
    for (uint32_t i = 0; i < num_args; ++i) {
      cl_int r;
      if (args[i].kind == AXL_ARG_DEVADDR) {
        axl_devaddr address = 0;
        std::memcpy(&address, args[i].value, sizeof address);
        Located at;
        if (axl_status s = d.locate(address, 1, "queue_launch", &at)) return s;
        cl_mem mem = at.mem;
        if (at.offset != 0) {
          size_t size = 0;
          {
            std::lock_guard<std::mutex> mk(d.mem_mu);
            size = d.buffers.at(address - at.offset).bytes - at.offset;
          }
          const cl_buffer_region region{at.offset, size};
          mem = cl().clCreateSubBuffer(at.mem, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &r);
          if (r != CL_SUCCESS)
            return cl_fail("clCreateSubBuffer", r,
                           common::str("argument ", i, " is ", at.offset, " bytes into its allocation; OpenCL "
                                       "sub-buffers start at multiples of CL_DEVICE_MEM_BASE_ADDR_ALIGN"),
                           AXL_ERROR_INVALID_ARGUMENT);
          subs.push_back(mem);
        }
        r = cl().clSetKernelArg(k.kernel, i, sizeof mem, &mem);
      } else if (args[i].kind == AXL_ARG_LOCAL) {
        r = cl().clSetKernelArg(k.kernel, i, args[i].size, nullptr);  // a __local parameter's size
      } else {
        r = cl().clSetKernelArg(k.kernel, i, args[i].size, args[i].value);
      }
      if (r != CL_SUCCESS)
        return cl_fail("clSetKernelArg", r, common::str("argument ", i, " of kernel '", k.name, "' (", args[i].size,
                                                        " bytes)"));
    }
    Backend& b = backend();
    if (b.tracer.enabled())
      b.tracer.launch(q.trace_id, k.name.c_str(), config->grid, config->block, 0,
                      common::Tracer::hash_args(args, num_args));
    const cl_int r = b.cl.clEnqueueNDRangeKernel(q.queue, k.kernel, 3, nullptr, global, local, 0, nullptr, nullptr);
    if (r == CL_INVALID_WORK_GROUP_SIZE) {
      size_t limit = 0;
      b.cl.clGetKernelWorkGroupInfo(k.kernel, d.id, CL_KERNEL_WORK_GROUP_SIZE, sizeof limit, &limit, nullptr);
      return cl_fail("clEnqueueNDRangeKernel", r,
                     common::str("a block of ", threads, " threads; kernel '", k.name, "' allows ", limit,
                                 " on OpenCL device ", d.index, " (CL_KERNEL_WORK_GROUP_SIZE)"));
    }
    if (r != CL_SUCCESS) return cl_fail("clEnqueueNDRangeKernel", r, common::str("kernel '", k.name, "'"));
    if (cl_int f = b.cl.clFlush(q.queue)) return cl_fail("clFlush", f);
    return AXL_SUCCESS;
  });
}

}  // namespace axl::opencl
