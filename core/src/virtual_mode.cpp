// Virtual-device mode (MAX's max.driver section 10): accelerators that exist
// only as compile targets. The settings live here; the `virtual` plugin
// (AXL_PLUGIN_FLAG_VIRTUAL) provides the devices and receives the settings
// through backend_set_option:
//   "virtual_device_api"  (e.g. "cuda"), "virtual_device_arch" (e.g. "sm_90"),
//   "virtual_device_count" (decimal; "0" turns the mode off).
#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>

#include "internal.hpp"

namespace axl::core {
namespace {

struct VirtualMode {
  std::mutex mu;
  int32_t count = 0;
  std::string api, arch, cpu_target;
};

VirtualMode& vm() {
  static VirtualMode* v = new VirtualMode();
  return *v;
}

Backend* virtual_backend() {
  for (Backend* b : registry().backends)
    if ((b->flags & AXL_PLUGIN_FLAG_VIRTUAL) && b->init_state.load() != 2) return b;
  return nullptr;
}

}  // namespace

axl_status copy_out(const std::string& s, char* buf, size_t cap, size_t* out_size) {
  if (!out_size) return fail(AXL_ERROR_INVALID_ARGUMENT, "out_size is NULL");
  *out_size = s.size() + 1;
  if (buf && cap >= *out_size) memcpy(buf, s.c_str(), *out_size);
  return AXL_SUCCESS;
}

namespace {

bool plain_name(const char* s, size_t max) {
  size_t n = strnlen(s, max + 1);
  if (n > max) return false;
  return std::all_of(s, s + n, [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == ':';
  });
}

}  // namespace

bool virtual_mode_on() {
  std::lock_guard<std::mutex> lk(vm().mu);
  return vm().count > 0;
}

}  // namespace axl::core

using namespace axl::core;

extern "C" {

AXL_API axl_status axl_set_virtual_device_count(int32_t count) {
  return guard([&]() -> axl_status {
    if (count < 0 || count > 1024)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "virtual device count %d; expected 0 (off) to 1024", count);
    if (axl_status s = ensure_init()) return s;
    Backend* b = virtual_backend();
    if (!b) {
      if (count == 0) {
        std::lock_guard<std::mutex> lk(vm().mu);
        vm().count = 0;
        return AXL_SUCCESS;
      }
      return fail(AXL_ERROR_BACKEND_UNAVAILABLE,
                  "virtual-device mode needs the 'virtual' plugin (libaxl_plugin_virtual.so), "
                  "which discovery did not load; see axl-info");
    }
    std::string api, arch;
    {
      std::lock_guard<std::mutex> lk(vm().mu);
      api = vm().api;
      arch = vm().arch;
    }
    if (axl_status s = AXL_CALL(b, backend_set_option, "virtual_device_api", api.c_str())) return s;
    if (axl_status s = AXL_CALL(b, backend_set_option, "virtual_device_arch", arch.c_str())) return s;
    std::string n = std::to_string(count);
    if (axl_status s = AXL_CALL(b, backend_set_option, "virtual_device_count", n.c_str())) return s;
    uint32_t c = 0;
    if (axl_status s = AXL_CALL(b, backend_device_count, &c)) return s;
    b->device_count = c;
    std::lock_guard<std::mutex> lk(vm().mu);
    vm().count = count;
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_get_virtual_device_count(int32_t* out) {
  return guard([&]() -> axl_status {
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_get_virtual_device_count: out is NULL");
    std::lock_guard<std::mutex> lk(vm().mu);
    *out = vm().count;
    return AXL_SUCCESS;
  });
}

AXL_API int axl_is_virtual_device_mode(void) { return virtual_mode_on() ? 1 : 0; }

AXL_API axl_status axl_set_virtual_device_api(const char* api) {
  return guard([&]() -> axl_status {
    if (!api || !plain_name(api, AXL_API_SIZE - 1))
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "virtual device api '%s'; expected a short name such as 'cuda', 'hip' or 'metal'",
                  api ? api : "(null)");
    std::lock_guard<std::mutex> lk(vm().mu);
    vm().api = api;
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_get_virtual_device_api(char* buf, size_t capacity, size_t* out_size) {
  return guard([&]() -> axl_status {
    std::lock_guard<std::mutex> lk(vm().mu);
    return copy_out(vm().api, buf, capacity, out_size);
  });
}

AXL_API axl_status axl_set_virtual_device_target_arch(const char* arch) {
  return guard([&]() -> axl_status {
    if (!arch || !plain_name(arch, AXL_ARCH_SIZE - 1))
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "virtual device target architecture '%s'; expected a name such as 'sm_90' or 'gfx942'",
                  arch ? arch : "(null)");
    std::lock_guard<std::mutex> lk(vm().mu);
    vm().arch = arch;
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_get_virtual_device_target_arch(char* buf, size_t capacity, size_t* out_size) {
  return guard([&]() -> axl_status {
    std::lock_guard<std::mutex> lk(vm().mu);
    return copy_out(vm().arch, buf, capacity, out_size);
  });
}

AXL_API axl_status axl_set_virtual_cpu_target(const char* cpu) {
  return guard([&]() -> axl_status {
    if (!cpu) return fail(AXL_ERROR_INVALID_ARGUMENT, "virtual CPU target is NULL; use \"\" to restore the host CPU");
    if (strcmp(cpu, "native") == 0)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "virtual CPU target 'native' is rejected: it would bake the build host's CPU into "
                  "the kernel cache; name a CPU such as 'x86-64-v3', or 'generic'");
    if (*cpu && !plain_name(cpu, 64))
      return fail(AXL_ERROR_INVALID_ARGUMENT, "virtual CPU target '%s' is not an LLVM CPU name", cpu);
#if !defined(__x86_64__) && !defined(__aarch64__)
    if (strcmp(cpu, "generic") == 0)
      return fail(AXL_ERROR_UNSUPPORTED, "virtual CPU target 'generic' is defined for x86-64 and AArch64 hosts only");
#endif
    std::lock_guard<std::mutex> lk(vm().mu);
    vm().cpu_target = cpu;
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_get_virtual_cpu_target(char* buf, size_t capacity, size_t* out_size) {
  return guard([&]() -> axl_status {
    std::lock_guard<std::mutex> lk(vm().mu);
    return copy_out(vm().cpu_target, buf, capacity, out_size);
  });
}

AXL_API axl_status axl_calculate_virtual_device_count(const axl_device_spec* specs, size_t count,
                                                      uint32_t* out) {
  return guard([&]() -> axl_status {
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_calculate_virtual_device_count: out is NULL");
    if (count && !specs)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_calculate_virtual_device_count: %zu specs at NULL", count);
    int64_t max_id = -1;
    for (size_t i = 0; i < count; ++i)
      if (specs[i].is_accelerator) max_id = std::max<int64_t>(max_id, specs[i].id);
    *out = static_cast<uint32_t>(std::max<int64_t>(1, max_id + 1));
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_calculate_virtual_device_count_from_cli(const char* const* inputs, size_t count,
                                                               uint32_t* out) {
  return guard([&]() -> axl_status {
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_calculate_virtual_device_count_from_cli: out is NULL");
    if (count && !inputs)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_calculate_virtual_device_count_from_cli: %zu inputs at NULL",
                  count);
    int64_t max_id = -1;
    for (size_t i = 0; i < count; ++i) {
      if (!inputs[i]) return fail(AXL_ERROR_INVALID_ARGUMENT, "CLI device input %zu is NULL", i);
      std::string in = inputs[i];
      if (in == "gpu") {  // exact and case-sensitive, as MAX
        max_id = std::max<int64_t>(max_id, 0);
      } else if (spec_lower(in) == "gpu:all") {
        uint32_t n = 0;
        if (axl_status s = axl_device_count("gpu", &n)) return s;
        max_id = std::max<int64_t>(max_id, int64_t(n) - 1);
      } else if (spec_lower(in).rfind("gpu:", 0) == 0) {
        std::string rest = in.substr(4);
        size_t pos = 0;
        while (pos <= rest.size()) {
          size_t comma = rest.find(',', pos);
          std::string part = spec_trim(rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
          pos = comma == std::string::npos ? rest.size() + 1 : comma + 1;
          if (part.empty() || spec_lower(part) == "all") continue;
          // The spec grammar's id reader, with MAX's optional sign ("gpu:-1"
          // counts nothing); an id past the ABI's int32_t is refused, so
          // "gpu:4294967296" no longer wraps to a count of 1.
          int32_t v = 0;
          if (axl_status s = parse_accelerator_id("device input", in, part, /*allow_sign=*/true, &v)) return s;
          max_id = std::max<int64_t>(max_id, v);
        }
      }
      // Anything else ("cpu", "GPU" without a colon, "gpu0") is ignored, as MAX.
    }
    *out = static_cast<uint32_t>(std::max<int64_t>(1, max_id + 1));
    return AXL_SUCCESS;
  });
}

}  // extern "C"
