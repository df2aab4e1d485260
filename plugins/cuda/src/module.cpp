// Modules: PTX, cubin or fatbin through cuModuleLoadDataEx (with the JIT's
// error log in the message), CUDA C++ through NVRTC (module_compile), and
// the built-in test kernels from embedded PTX.
#include <cstring>
#include <fstream>
#include <iterator>

#include "cuda_backend.hpp"
#include "nvrtc.hpp"
#include "test_kernels_ptx.hpp"

namespace axl::cuda {

namespace {

constexpr size_t kJitLogBytes = 16 << 10;

constexpr common::KernelParam kIncrementParams[] = {{AXL_ARG_DEVADDR, 8}, {AXL_ARG_SCALAR, 4}};
constexpr common::KernelParam kFillParams[] = {
    {AXL_ARG_DEVADDR, 8}, {AXL_ARG_SCALAR, 4}, {AXL_ARG_SCALAR, 4}};

const char* format_name(int32_t f) {
  switch (f) {
    case AXL_MODULE_FORMAT_AUTO: return "AUTO";
    case AXL_MODULE_FORMAT_SHARED_OBJECT: return "SHARED_OBJECT";
    case AXL_MODULE_FORMAT_PTX: return "PTX";
    case AXL_MODULE_FORMAT_CUBIN: return "CUBIN";
    case AXL_MODULE_FORMAT_FATBIN: return "FATBIN";
    case AXL_MODULE_FORMAT_HSACO: return "HSACO";
    case AXL_MODULE_FORMAT_SPIRV: return "SPIRV";
    default: return "unknown";
  }
}

}  // namespace

axl_status load_image(Device& d, const void* image, size_t size, const char* what, Module** out) {
  if (axl_status s = make_current(d)) return s;
  // PTX is read up to its NUL; cubin and fatbin by their headers. A copy
  // with a NUL appended serves all three without trusting the caller's
  // buffer to be terminated.
  std::vector<char> bytes(static_cast<const char*>(image), static_cast<const char*>(image) + size);
  bytes.push_back('\0');
  std::vector<char> log(kJitLogBytes, '\0');
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* vals[] = {log.data(), reinterpret_cast<void*>(static_cast<uintptr_t>(log.size()))};
  auto m = std::make_unique<Module>();
  m->device = &d;
  const CUresult r = api().cuModuleLoadDataEx(&m->module, bytes.data(), 2, opts, vals);
  if (r != CUDA_SUCCESS) {
    log.back() = '\0';
    std::string context = common::str("loading ", what, " (", size, " bytes) on CUDA device ", d.index,
                                      " (", d.props.architecture_name, ")");
    if (log[0] != '\0') context += common::str("; JIT log:\n", log.data());
    return fail_cu(r, "cuModuleLoadDataEx", context,
                   r == CUDA_ERROR_OUT_OF_MEMORY ? AXL_ERROR_OUT_OF_DEVICE_MEMORY
                                                 : AXL_ERROR_INVALID_ARGUMENT);
  }
  *out = m.release();
  return AXL_SUCCESS;
}

axl_status module_load(axl_pdevice device, const axl_module_desc* desc, axl_pmodule* out_module) noexcept {
  return guarded("module_load", [&]() -> axl_status {
    if (desc == nullptr || out_module == nullptr || desc->struct_size < sizeof(axl_module_desc))
      return fail(AXL_ERROR_INVALID_ARGUMENT, "module_load: desc or out_module is NULL, or desc->struct_size is too small");
    switch (desc->format) {
      case AXL_MODULE_FORMAT_AUTO:
      case AXL_MODULE_FORMAT_PTX:
      case AXL_MODULE_FORMAT_CUBIN:
      case AXL_MODULE_FORMAT_FATBIN:
        break;
      default:
        return fail(AXL_ERROR_INVALID_ARGUMENT,
                    common::str("module_load: format ", format_name(desc->format), " (", desc->format,
                                ") cannot be loaded by the CUDA driver; expected PTX, CUBIN, FATBIN or AUTO"));
    }
    std::vector<char> file;
    const void* data = desc->data;
    size_t size = desc->size;
    std::string what = format_name(desc->format);
    if (desc->path != nullptr) {
      std::ifstream in(desc->path, std::ios::binary);
      if (!in)
        return fail(AXL_ERROR_NOT_FOUND, common::str("module_load: cannot open '", desc->path, "'"));
      file.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      if (file.empty())
        return fail(AXL_ERROR_INVALID_ARGUMENT, common::str("module_load: '", desc->path, "' is empty"));
      data = file.data();
      size = file.size();
      what += common::str(" module '", desc->path, "'");
    } else {
      what += " module";
    }
    if (data == nullptr || size == 0)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "module_load: no data and no path");
    Module* m = nullptr;
    if (axl_status s = load_image(*from(device), data, size, what.c_str(), &m)) return s;
    *out_module = reinterpret_cast<axl_pmodule>(m);
    return AXL_SUCCESS;
  });
}

axl_status module_unload(axl_pmodule module) noexcept {
  return guarded("module_unload", [&]() -> axl_status {
    Module* m = from(module);
    // Launches of its kernels may still be queued.
    return release_after_queued_work(*m->device, [m] {
      api().cuModuleUnload(m->module);
      delete m;
    });
  });
}

axl_status module_get_kernel(axl_pmodule module, const char* name, axl_pkernel* out_kernel) noexcept {
  return guarded("module_get_kernel", [&]() -> axl_status {
    if (name == nullptr || out_kernel == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "module_get_kernel: name or out_kernel is NULL");
    Module& m = *from(module);
    std::lock_guard<std::mutex> lk(m.mu);
    auto it = m.kernels.find(name);
    if (it == m.kernels.end()) {
      if (axl_status s = make_current(*m.device)) return s;
      auto k = std::make_unique<Kernel>();
      k->name = name;
      const CUresult r = api().cuModuleGetFunction(&k->fn, m.module, name);
      if (r == CUDA_ERROR_NOT_FOUND)
        return fail_cu(r, "cuModuleGetFunction",
                       common::str("the module has no kernel named '", name,
                                   "' (CUDA C++ kernels need extern \"C\" to keep their names)"),
                       AXL_ERROR_NOT_FOUND);
      if (axl_status s = check(r, "cuModuleGetFunction", common::str("kernel '", name, "'"))) return s;
      it = m.kernels.emplace(name, std::move(k)).first;
    }
    *out_kernel = reinterpret_cast<axl_pkernel>(it->second.get());
    return AXL_SUCCESS;
  });
}

axl_status device_get_test_kernel(axl_pdevice device, int32_t which, axl_pkernel* out_kernel) noexcept {
  return guarded("device_get_test_kernel", [&]() -> axl_status {
    if (out_kernel == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "device_get_test_kernel: out_kernel is NULL");
    if (which != AXL_TEST_KERNEL_INCREMENT_U32 && which != AXL_TEST_KERNEL_FILL_U32)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("device_get_test_kernel: ", which,
                              " is not AXL_TEST_KERNEL_INCREMENT_U32 (0) or AXL_TEST_KERNEL_FILL_U32 (1)"));
    Device& d = *from(device);
    std::lock_guard<std::mutex> lk(d.test_mu);
    if (d.test_module == nullptr) {
      Module* m = nullptr;
      if (axl_status s = load_image(d, kTestKernelsPtx, sizeof kTestKernelsPtx - 1,
                                    "the built-in test kernels (PTX)", &m))
        return s;
      const char* names[2] = {"axl_test_increment_u32", "axl_test_fill_u32"};
      for (int i = 0; i < 2; ++i) {
        Kernel& k = d.test_kernels[i];
        k.name = names[i];
        k.params = i == 0 ? kIncrementParams : kFillParams;
        k.param_count = i == 0 ? 2 : 3;
        if (axl_status s = check(api().cuModuleGetFunction(&k.fn, m->module, names[i]),
                                 "cuModuleGetFunction", names[i])) {
          api().cuModuleUnload(m->module);
          delete m;
          return s;
        }
      }
      d.test_module = m;
    }
    *out_kernel = reinterpret_cast<axl_pkernel>(&d.test_kernels[which]);
    return AXL_SUCCESS;
  });
}

axl_status module_compile(axl_pdevice device, const axl_compile_desc* desc, axl_pmodule* out_module) noexcept {
  return guarded("module_compile", [&]() -> axl_status {
    if (desc == nullptr || out_module == nullptr || desc->struct_size < sizeof(axl_compile_desc) ||
        desc->source == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "module_compile: desc, desc->source or out_module is NULL, or desc->struct_size is too small");
    if (desc->language != AXL_SOURCE_LANGUAGE_CUDA)
      return fail(AXL_ERROR_UNSUPPORTED,
                  common::str("module_compile: the cuda backend compiles AXL_SOURCE_LANGUAGE_CUDA (1) "
                              "only, not language ", desc->language));
    Device& d = *from(device);
    std::vector<std::string> options;
    for (uint32_t i = 0; i < desc->num_options; ++i) options.emplace_back(desc->options[i]);
    const std::string name = desc->name != nullptr && *desc->name ? desc->name : "axl_program.cu";
    // A cubin for the device's exact architecture: no JIT at load, and no
    // PTX newer than the driver can read.
    CompileResult r = Nvrtc::instance().compile(desc->source, name, options, d.props.architecture_name);
    if (r.status != AXL_SUCCESS) return fail(r.status, r.message);
    if (!r.log.empty()) backend().host.log(AXL_LOG_DEBUG, "NVRTC log for " + name + ":\n" + r.log);
    Module* m = nullptr;
    const std::string what = common::str(r.is_ptx ? "PTX" : "cubin", " compiled by NVRTC from '", name, "'");
    if (axl_status s = load_image(d, r.image.data(), r.image.size(), what.c_str(), &m)) return s;
    *out_module = reinterpret_cast<axl_pmodule>(m);
    return AXL_SUCCESS;
  });
}

}  // namespace axl::cuda
