// The one cpu device: the host processor and its memory.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "axl/common/fixed_string.hpp"
#include "axl/common/slot_checks.hpp"
#include "cpu_backend.hpp"

namespace axl::cpu {

namespace {

// The "model name" line of /proc/cpuinfo (x86 and most others), or "" when
// the kernel does not provide one (e.g. many arm64 systems).
std::string cpu_model_name() {
  FILE* f = std::fopen("/proc/cpuinfo", "re");
  if (f == nullptr) return {};
  char line[512];
  std::string result;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, "model name", 10) != 0) continue;
    const char* colon = std::strchr(line, ':');
    if (colon == nullptr) continue;
    std::string value = colon + 1;
    const auto first = value.find_first_not_of(" \t");
    const auto last = value.find_last_not_of(" \t\r\n");
    if (first != std::string::npos) result = value.substr(first, last - first + 1);
    break;
  }
  std::fclose(f);
  return result;
}

void fill_properties(axl_device_properties& p) {
  p = axl_device_properties{};
  p.struct_size = sizeof(axl_device_properties);
  common::copy_string(p.label, sizeof p.label, "cpu");
  common::copy_string(p.api, sizeof p.api, "cpu");
  // Like MAX, a CPU has no architecture name: kernels are built for the host.
  p.architecture_name[0] = '\0';
  std::string model = cpu_model_name();
  common::copy_string(p.model_name, sizeof p.model_name, model.empty() ? "generic CPU" : model);
  p.total_memory_bytes = total_memory_bytes();
  p.max_single_alloc_bytes = p.total_memory_bytes;
  p.is_host = 1;
  p.is_host_unified = 1;
  p.is_compatible = 1;
}

}  // namespace

axl_status device_get(uint32_t index, axl_pdevice* out_device) noexcept {
  return guarded("device_get", [&]() -> axl_status {
    Backend& b = backend();
    if (out_device == nullptr) {
      return b.host.report(AXL_ERROR_INVALID_ARGUMENT, "device_get: out_device is NULL");
    }
    if (index != 0) {
      return b.host.report(AXL_ERROR_OUT_OF_RANGE,
                           common::str("device index ", index,
                                       " is out of range; the cpu backend has 1 device (index 0)"));
    }
    *out_device = reinterpret_cast<axl_pdevice>(&b.device);
    return AXL_SUCCESS;
  });
}

axl_status device_get_properties(axl_pdevice device, axl_device_properties* props) noexcept {
  return guarded("device_get_properties", [&]() -> axl_status {
    Device* d = from(device);
    std::call_once(d->props_once, [d] { fill_properties(d->props); });
    return common::copy_device_properties(fail, d->props, props);
  });
}

axl_status device_get_memory_info(axl_pdevice, uint64_t* out_free, uint64_t* out_total) noexcept {
  if (out_free == nullptr || out_total == nullptr) {
    return backend().host.report(AXL_ERROR_INVALID_ARGUMENT,
                                 "device_get_memory_info: an output pointer is NULL");
  }
  *out_total = total_memory_bytes();
  *out_free = std::min(available_memory_bytes(), *out_total);
  return AXL_SUCCESS;
}

axl_status device_can_access_peer(axl_pdevice, axl_pdevice, uint8_t* out) noexcept {
  if (out == nullptr) {
    return backend().host.report(AXL_ERROR_INVALID_ARGUMENT,
                                 "device_can_access_peer: out is NULL");
  }
  // The only pair is the device with itself, which MAX's rule answers 0.
  *out = 0;
  return AXL_SUCCESS;
}

}  // namespace axl::cpu
