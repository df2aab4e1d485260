// Modules (SPIR-V through zeModuleCreate with ZE_MODULE_FORMAT_IL_SPIRV),
// kernels (zeKernelCreate) and launches: zeKernelSetGroupSize (the block),
// zeKernelSetArgumentValue per argument, zeCommandListAppendLaunchKernel
// with the grid as the group count.
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "axl/common/module_format.hpp"
#include "axl/common/slot_checks.hpp"
#include "l0_backend.hpp"

namespace axl::l0 {

namespace {

constexpr uint32_t kSpirvMagic = 0x07230203;
// Level Zero drivers take at most a few kilobytes of arguments; these are
// the ABI-shape limits, the driver checks its own.
constexpr uint32_t kMaxArgs = 4096;
constexpr uint32_t kMaxScalarBytes = 64u << 10;

bool is_spirv(const void* data, size_t size) {
  if (size < 20 || size % 4 != 0) return false;  // the header is 5 words
  uint32_t magic;
  std::memcpy(&magic, data, sizeof magic);
  return magic == kSpirvMagic;
}

}  // namespace

Module::~Module() {
  kernels.for_each([](Kernel& k) { ze().zeKernelDestroy(k.handle); });
  if (handle != nullptr) ze().zeModuleDestroy(handle);
}

axl_status module_load(axl_pdevice device, const axl_module_desc* desc,
                       axl_pmodule* out_module) noexcept {
  return guarded("module_load", [&]() -> axl_status {
    if (out_module == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "module_load: out_module is NULL");
    if (desc == nullptr || desc->struct_size < sizeof(axl_module_desc))
      return fail(AXL_ERROR_INVALID_ARGUMENT, "module_load: desc is NULL or too small");
    if (desc->format != AXL_MODULE_FORMAT_AUTO && desc->format != AXL_MODULE_FORMAT_SPIRV)
      return fail(AXL_ERROR_UNSUPPORTED,
                  common::str("module_load: format ", common::module_format_name(desc->format), " (",
                              desc->format, "); Level Zero loads SPIR-V (AXL_MODULE_FORMAT_SPIRV)"));
    std::vector<unsigned char> file;
    const void* data = desc->data;
    size_t size = desc->size;
    if (data == nullptr) {
      if (desc->path == nullptr)
        return fail(AXL_ERROR_INVALID_ARGUMENT, "module_load: neither data nor path is set");
      std::ifstream in(desc->path, std::ios::binary);
      if (!in)
        return fail(AXL_ERROR_NOT_FOUND, common::str("module_load: cannot open '", desc->path, "'"));
      file.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      data = file.data();
      size = file.size();
    }
    if (!is_spirv(data, size))
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("module_load: ", size, " bytes are not a SPIR-V module (expected a "
                              "multiple of 4 bytes starting with the magic 0x07230203)"));
    Device& d = *from(device);
    auto m = common::Ref<Module>::adopt(new Module());
    m->device = &d;
    ze_module_desc_t md{};
    md.stype = ZE_STRUCTURE_TYPE_MODULE_DESC;
    md.format = ZE_MODULE_FORMAT_IL_SPIRV;
    md.inputSize = size;
    md.pInputModule = static_cast<const uint8_t*>(data);
    md.pBuildFlags = "";
    ze_module_build_log_handle_t log = nullptr;
    ze_result_t r = ze().zeModuleCreate(d.context(), d.handle, &md, &m->handle, &log);
    std::string text;
    if (log != nullptr) {
      size_t n = 0;
      if (ze().zeModuleBuildLogGetString(log, &n, nullptr) == ZE_RESULT_SUCCESS && n > 1) {
        text.resize(n);
        ze().zeModuleBuildLogGetString(log, &n, text.data());
        text.resize(std::strlen(text.c_str()));
      }
      ze().zeModuleBuildLogDestroy(log);
    }
    if (r != ZE_RESULT_SUCCESS) {
      m->handle = nullptr;
      return ze_fail("zeModuleCreate", r, text.empty() ? "no build log" : "build log: " + text);
    }
    *out_module = reinterpret_cast<axl_pmodule>(m.get());
    m.get()->retain();  // the handle's reference; released by module_unload
    return AXL_SUCCESS;
  });
}

axl_status module_unload(axl_pmodule module) noexcept {
  // Pending launches hold references; the last one destroys the module.
  from(module)->release();
  return AXL_SUCCESS;
}

axl_status module_get_kernel(axl_pmodule module, const char* name, axl_pkernel* out_kernel) noexcept {
  return guarded("module_get_kernel", [&]() -> axl_status {
    if (axl_status s = common::check_module_get_kernel(fail, name, out_kernel)) return s;
    Module& m = *from(module);
    Kernel* k = nullptr;
    const axl_status s = m.kernels.get(
        name,
        [&](const char*, std::unique_ptr<Kernel>& out) -> axl_status {
          auto made = std::make_unique<Kernel>();
          made->name = name;
          made->module = &m;
          ze_kernel_desc_t kd{};
          kd.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC;
          kd.pKernelName = name;
          if (ze_result_t r = ze().zeKernelCreate(m.handle, &kd, &made->handle)) {
            if (r == ZE_RESULT_ERROR_INVALID_KERNEL_NAME)
              return ze_fail("zeKernelCreate", r, common::str("the module has no kernel '", name, "'"),
                             AXL_ERROR_NOT_FOUND);
            return ze_fail("zeKernelCreate", r, common::str("kernel '", name, "'"));
          }
          out = std::move(made);
          return AXL_SUCCESS;
        },
        &k);
    if (s == AXL_SUCCESS) *out_kernel = common::to_handle<axl_pkernel>(k);
    return s;
  });
}

axl_status queue_launch(axl_pqueue queue, axl_pkernel kernel, const axl_launch_config* config,
                        const axl_kernel_arg* args, uint32_t num_args) noexcept {
  return guarded("queue_launch", [&]() -> axl_status {
    Queue& q = *from(queue);
    Kernel& k = *from(kernel);
    const Device& d = *q.device;
    if (config == nullptr || config->struct_size < sizeof(axl_launch_config))
      return fail(AXL_ERROR_INVALID_ARGUMENT, "queue_launch: config is NULL or too small");
    if (k.module->device->driver != d.driver)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("launch of '", k.name, "': the kernel's module was loaded on a "
                              "device of another Level Zero driver"));
    uint64_t threads = 1;
    for (int i = 0; i < 3; ++i) {
      const char axis = "xyz"[i];
      if (config->grid[i] == 0 || config->block[i] == 0)
        return fail(AXL_ERROR_INVALID_ARGUMENT,
                    common::str("launch of '", k.name, "': grid.", axis, " and block.", axis,
                                " must be >= 1"));
      if (config->block[i] > d.max_group_size_xyz[i])
        return fail(AXL_ERROR_INVALID_ARGUMENT,
                    common::str("launch of '", k.name, "': block.", axis, " = ", config->block[i],
                                " exceeds the device's maxGroupSize", char(axis - 32), " ",
                                d.max_group_size_xyz[i]));
      if (config->grid[i] > d.max_group_count_xyz[i])
        return fail(AXL_ERROR_INVALID_ARGUMENT,
                    common::str("launch of '", k.name, "': grid.", axis, " = ", config->grid[i],
                                " exceeds the device's maxGroupCount", char(axis - 32), " ",
                                d.max_group_count_xyz[i]));
      threads *= config->block[i];
    }
    if (threads > d.max_group_size)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("launch of '", k.name, "': ", threads, " threads per block exceed ",
                              "the device's maxTotalGroupSize ", d.max_group_size));
    if (config->shared_mem_bytes != 0)
      return fail(AXL_ERROR_UNSUPPORTED,
                  common::str("launch of '", k.name, "': dynamic shared memory (",
                              config->shared_mem_bytes, " bytes) has no launch parameter in "
                              "Level Zero; declare it as a __local kernel argument instead"));
    std::string bad = common::check_launch_args(k.name.c_str(), nullptr, -1, args, num_args,
                                                {kMaxArgs, kMaxScalarBytes});
    if (!bad.empty()) return fail(AXL_ERROR_INVALID_ARGUMENT, bad);

    {
      // Arguments and group size are kernel state until the append copies
      // them, so one launch of this kernel at a time.
      std::lock_guard<std::mutex> klk(k.launch_mu);
      if (ze_result_t r = ze().zeKernelSetGroupSize(k.handle, config->block[0], config->block[1],
                                                    config->block[2]))
        return ze_fail("zeKernelSetGroupSize", r, common::str("kernel '", k.name, "'"));
      for (uint32_t i = 0; i < num_args; ++i)
        if (ze_result_t r = ze().zeKernelSetArgumentValue(k.handle, i, args[i].size, args[i].value))
          return ze_fail("zeKernelSetArgumentValue", r,
                         common::str("kernel '", k.name, "' argument ", i, " (", args[i].size,
                                     " bytes)"));
      ze_group_count_t groups{config->grid[0], config->grid[1], config->grid[2]};
      std::lock_guard<std::mutex> lk(q.mu);
      if (axl_status s = order(q)) return s;
      if (ze_result_t r = ze().zeCommandListAppendLaunchKernel(q.list, k.handle, &groups, nullptr,
                                                               0, nullptr))
        return ze_fail("zeCommandListAppendLaunchKernel", r, common::str("kernel '", k.name, "'"));
      q.need_barrier = true;
      Pending p;
      p.module = common::Ref<Module>(k.module);
      q.pending.push_back(std::move(p));
    }
    Backend& b = backend();
    if (b.tracer.enabled())
      b.tracer.launch(q.trace_id, k.name.c_str(), config->grid, config->block, 0,
                      common::Tracer::hash_args(args, num_args));
    return AXL_SUCCESS;
  });
}

}  // namespace axl::l0
