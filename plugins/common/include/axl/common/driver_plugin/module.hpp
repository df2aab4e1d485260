// The module_* slots and the test kernels of DriverPlugin<D>.
// Part of driver_plugin_slots.hpp, which includes every part; included by
// exactly one translation unit of each driver-API plugin (its plugin.cpp).
#pragma once

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "axl/common/driver_plugin.hpp"
#include "axl/common/module_format.hpp"
#include "axl/common/slot_checks.hpp"

namespace axl::common {

// ---- modules ----------------------------------------------------------------

template <class D>
axl_status DriverPlugin<D>::module_load(axl_pdevice device, const axl_module_desc* desc,
                                        axl_pmodule* out_module) noexcept {
  return guarded("module_load", [&]() -> axl_status {
    if (desc == nullptr || out_module == nullptr || desc->struct_size < sizeof(axl_module_desc))
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "module_load: desc or out_module is NULL, or desc->struct_size is too small");
    if (!D::accepts_format(desc->format))
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  str("module_load: format ", module_format_name(desc->format), " (", desc->format,
                      ") cannot be loaded by the ", D::text.vendor, " driver; expected ", D::text.module_formats));
    std::vector<char> file;
    const void* data = desc->data;
    size_t size = desc->size;
    std::string what = module_format_name(desc->format);
    if (desc->path != nullptr) {
      std::ifstream in(desc->path, std::ios::binary);
      if (!in) return fail(AXL_ERROR_NOT_FOUND, str("module_load: cannot open '", desc->path, "'"));
      file.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      if (file.empty()) return fail(AXL_ERROR_INVALID_ARGUMENT, str("module_load: '", desc->path, "' is empty"));
      data = file.data();
      size = file.size();
      what += str(" module '", desc->path, "'");
    } else {
      what += " module";
    }
    if (data == nullptr || size == 0) return fail(AXL_ERROR_INVALID_ARGUMENT, "module_load: no data and no path");
    Module* m = nullptr;
    if (axl_status s = D::load_image(*from(device), data, size, what.c_str(), &m)) return s;
    *out_module = reinterpret_cast<axl_pmodule>(m);
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::module_unload(axl_pmodule module) noexcept {
  return guarded("module_unload", [&]() -> axl_status {
    Module* m = from(module);
    // Launches of its kernels may still be queued.
    return release_after_queued_work(*m->device, [m] {
      (void)api().module_unload(m->module);
      delete m;
    });
  });
}

template <class D>
axl_status DriverPlugin<D>::module_get_kernel(axl_pmodule module, const char* name,
                                              axl_pkernel* out_kernel) noexcept {
  return guarded("module_get_kernel", [&]() -> axl_status {
    if (axl_status s = check_module_get_kernel(fail, name, out_kernel)) return s;
    Module& m = *from(module);
    Kernel* k = nullptr;
    const axl_status s = m.kernels.get(
        name,
        [&](const char*, std::unique_ptr<Kernel>& out) -> axl_status {
          if (axl_status c = make_current(*m.device)) return c;
          auto made = std::make_unique<Kernel>();
          made->name = name;
          const Result r = api().module_get_function(&made->fn, m.module, name);
          if (r == D::kNotFound)
            return fail_driver(r, D::names.module_get_function,
                               str("the module has no kernel named '", name, "' ", D::text.missing_kernel_hint),
                               AXL_ERROR_NOT_FOUND);
          if (axl_status c = check(r, D::names.module_get_function, str("kernel '", name, "'"))) return c;
          out = std::move(made);
          return AXL_SUCCESS;
        },
        &k);
    if (s == AXL_SUCCESS) *out_kernel = to_handle<axl_pkernel>(k);
    return s;
  });
}

template <class D>
axl_status DriverPlugin<D>::device_get_test_kernel(axl_pdevice device, int32_t which,
                                                   axl_pkernel* out_kernel) noexcept {
  return guarded("device_get_test_kernel", [&]() -> axl_status {
    if (out_kernel == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "device_get_test_kernel: out_kernel is NULL");
    if (which != AXL_TEST_KERNEL_INCREMENT_U32 && which != AXL_TEST_KERNEL_FILL_U32)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  str("device_get_test_kernel: ", which,
                      " is not AXL_TEST_KERNEL_INCREMENT_U32 (0) or AXL_TEST_KERNEL_FILL_U32 (1)"));
    static constexpr KernelParam kIncrementParams[] = {{AXL_ARG_DEVADDR, 8}, {AXL_ARG_SCALAR, 4}};
    static constexpr KernelParam kFillParams[] = {{AXL_ARG_DEVADDR, 8}, {AXL_ARG_SCALAR, 4}, {AXL_ARG_SCALAR, 4}};
    Device& d = *from(device);
    std::lock_guard<std::mutex> lk(d.test_mu);
    if (d.test_module == nullptr) {
      Module* m = nullptr;
      if (axl_status s = D::load_test_module(d, &m)) return s;
      const char* names[2] = {"axl_test_increment_u32", "axl_test_fill_u32"};
      for (int i = 0; i < 2; ++i) {
        Kernel& k = d.test_kernels[i];
        k.name = names[i];
        k.params = i == 0 ? kIncrementParams : kFillParams;
        k.param_count = i == 0 ? 2 : 3;
        if (axl_status s = check(api().module_get_function(&k.fn, m->module, names[i]),
                                 D::names.module_get_function, names[i])) {
          (void)api().module_unload(m->module);
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

template <class D>
axl_status DriverPlugin<D>::module_compile(axl_pdevice device, const axl_compile_desc* desc,
                                           axl_pmodule* out_module) noexcept {
  return guarded("module_compile", [&]() -> axl_status {
    if constexpr (!D::kHasCompiler) {
      (void)device, (void)desc, (void)out_module;
      return fail(AXL_ERROR_UNSUPPORTED, str("module_compile: the ", D::text.vendor, " backend has no run-time compiler"));
    } else {
      if (desc == nullptr || out_module == nullptr || desc->struct_size < sizeof(axl_compile_desc) ||
          desc->source == nullptr)
        return fail(AXL_ERROR_INVALID_ARGUMENT,
                    "module_compile: desc, desc->source or out_module is NULL, or desc->struct_size is too small");
      if (desc->language != D::kLanguage)
        return fail(AXL_ERROR_UNSUPPORTED, str("module_compile: the ", D::text.plugin, " backend compiles ",
                                               D::text.language, " only, not language ", desc->language));
      Device& d = *from(device);
      std::vector<std::string> options;
      for (uint32_t i = 0; i < desc->num_options; ++i) options.emplace_back(desc->options[i]);
      const std::string name = desc->name != nullptr && *desc->name ? desc->name : D::text.default_source_name;
      CompileResult r = D::compile(d, desc->source, name, options);
      if (r.status != AXL_SUCCESS) return fail(r.status, r.message);
      if (!r.log.empty()) state().host.log(AXL_LOG_DEBUG, str(D::text.compiler, " log for ", name, ":\n", r.log));
      Module* m = nullptr;
      const std::string what = str(D::image_kind(r), " compiled by ", D::text.compiler, " from '", name, "'");
      if (axl_status s = D::load_image(d, r.image.data(), r.image.size(), what.c_str(), &m)) return s;
      *out_module = reinterpret_cast<axl_pmodule>(m);
      return AXL_SUCCESS;
    }
  });
}

}  // namespace axl::common
