// Modules and kernels.
#include <cstring>

#include "internal.hpp"

namespace axl::core {

Module::~Module() {
  if (!device->backend->poisoned.load()) AXL_CALL(device->backend, module_unload, pm);
  release(device);
}

Kernel::~Kernel() {
  if (module) release(module);
  release(device);
}

}  // namespace axl::core

using namespace axl::core;

namespace {

// Wraps a plugin module into a core handle that retains its device.
axl_status adopt_module(Device* d, axl_pmodule pm, axl_module_t* out) {
  auto* m = new Module();
  m->device = d;
  m->pm = pm;
  retain(d);
  *out = to_handle<axl_module_t>(m);
  return AXL_SUCCESS;
}

axl_status load(Device* d, const axl_module_desc& desc, axl_module_t* out) {
  if (axl_status s = device_usable(d)) return s;
  axl_pmodule pm = nullptr;
  if (axl_status s = AXL_CALL(d->backend, module_load, d->pdev, &desc, &pm)) return s;
  return adopt_module(d, pm, out);
}

axl_status check_format(int32_t format) {
  if (format < AXL_MODULE_FORMAT_AUTO || format > AXL_MODULE_FORMAT_SPIRV)
    return fail(AXL_ERROR_INVALID_ARGUMENT, "module format %d is not an AXL_MODULE_FORMAT_* value (0..6)", format);
  return AXL_SUCCESS;
}

axl_status make_kernel(Device* d, Module* m, axl_pkernel pk, const char* name, axl_kernel_t* out) {
  auto* k = new Kernel();
  k->device = d;
  k->module = m;
  k->pk = pk;
  k->name = name;
  retain(d);
  if (m) retain(m);
  *out = to_handle<axl_kernel_t>(k);
  return AXL_SUCCESS;
}

}  // namespace

extern "C" {

AXL_API axl_status axl_module_load_data(axl_device_t device, const void* data, size_t size,
                                        int32_t format, axl_module_t* out) {
  return guard([&]() -> axl_status {
    Device* d = as<Device>(device, Kind::device, "device");
    if (!d) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_module_load_data: out_module is NULL");
    if (!data || size == 0)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_module_load_data: %zu bytes at %p; expected a non-empty module",
                  size, data);
    if (axl_status s = check_format(format)) return s;
    axl_module_desc desc{};
    desc.struct_size = sizeof desc;
    desc.data = data;
    desc.size = size;
    desc.format = format;
    return load(d, desc, out);
  });
}

AXL_API axl_status axl_module_load_file(axl_device_t device, const char* path, int32_t format,
                                        axl_module_t* out) {
  return guard([&]() -> axl_status {
    Device* d = as<Device>(device, Kind::device, "device");
    if (!d) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_module_load_file: out_module is NULL");
    if (!path || !*path) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_module_load_file: path is empty");
    if (axl_status s = check_format(format)) return s;
    axl_module_desc desc{};
    desc.struct_size = sizeof desc;
    desc.path = path;
    desc.format = format;
    return load(d, desc, out);
  });
}

AXL_API axl_status axl_module_compile(axl_device_t device, int32_t language, const char* source,
                                      const char* name, const char* const* options,
                                      uint32_t num_options, axl_module_t* out) {
  return guard([&]() -> axl_status {
    Device* d = as<Device>(device, Kind::device, "device");
    if (!d) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_module_compile: out_module is NULL");
    if (!source || !*source) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_module_compile: source is empty");
    // The backend says whether it compiles this language; the core only
    // refuses values no enums.h names.
    if (language < AXL_SOURCE_LANGUAGE_CUDA || language > AXL_SOURCE_LANGUAGE_OPENCL_C)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "axl_module_compile: language %d is not AXL_SOURCE_LANGUAGE_CUDA (1), _HIP (2) or _OPENCL_C (3)",
                  language);
    if (num_options != 0 && !options)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_module_compile: num_options is %u but options is NULL",
                  num_options);
    for (uint32_t i = 0; i < num_options; ++i)
      if (!options[i]) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_module_compile: options[%u] is NULL", i);
    if (axl_status s = device_usable(d)) return s;
    axl_compile_desc desc{};
    desc.struct_size = sizeof desc;
    desc.source = source;
    desc.name = name;
    desc.options = options;
    desc.num_options = num_options;
    desc.language = language;
    axl_pmodule pm = nullptr;
    if (axl_status s = AXL_CALL(d->backend, module_compile, d->pdev, &desc, &pm)) return s;
    return adopt_module(d, pm, out);
  });
}

AXL_API axl_status axl_module_retain(axl_module_t module) {
  return retain_handle(module, Kind::module, "module");
}

AXL_API axl_status axl_module_release(axl_module_t module) {
  return release_handle(module, Kind::module, "module");
}

AXL_API axl_status axl_module_get_kernel(axl_module_t module, const char* name, axl_kernel_t* out) {
  return guard([&]() -> axl_status {
    Module* m = as<Module>(module, Kind::module, "module");
    if (!m) return AXL_ERROR_INVALID_HANDLE;
    if (!name || !*name) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_module_get_kernel: name is empty");
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_module_get_kernel: out_kernel is NULL");
    if (axl_status s = device_usable(m->device)) return s;
    axl_pkernel pk = nullptr;
    if (axl_status s = AXL_CALL(m->device->backend, module_get_kernel, m->pm, name, &pk)) return s;
    return make_kernel(m->device, m, pk, name, out);
  });
}

AXL_API axl_status axl_device_get_test_kernel(axl_device_t device, int32_t which, axl_kernel_t* out) {
  return guard([&]() -> axl_status {
    Device* d = as<Device>(device, Kind::device, "device");
    if (!d) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_device_get_test_kernel: out_kernel is NULL");
    if (which != AXL_TEST_KERNEL_INCREMENT_U32 && which != AXL_TEST_KERNEL_FILL_U32)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "test kernel %d is not INCREMENT_U32(0) or FILL_U32(1)", which);
    if (axl_status s = device_usable(d)) return s;
    axl_pkernel pk = nullptr;
    if (axl_status s = AXL_CALL(d->backend, device_get_test_kernel, d->pdev, which, &pk)) return s;
    return make_kernel(d, nullptr, pk, which == AXL_TEST_KERNEL_INCREMENT_U32 ? "axl_test_increment_u32" : "axl_test_fill_u32", out);
  });
}

AXL_API axl_status axl_kernel_retain(axl_kernel_t kernel) {
  return retain_handle(kernel, Kind::kernel, "kernel");
}

AXL_API axl_status axl_kernel_release(axl_kernel_t kernel) {
  return release_handle(kernel, Kind::kernel, "kernel");
}

AXL_API const char* axl_kernel_name(axl_kernel_t kernel) {
  auto* k = find<Kernel>(kernel, Kind::kernel);
  if (!k) return "";
  return k->name.c_str();
}

}  // extern "C"
