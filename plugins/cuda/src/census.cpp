// Counting CUDA devices without cuInit (axl/common/census.hpp says why):
// NVML first, as PyTorch's fork-safe device count does, since NVML talks to
// the kernel driver and creates no CUDA context; else the kernel driver's
// /proc/driver/nvidia/gpus folder (one entry per GPU, by PCI address). Then
// CUDA_VISIBLE_DEVICES as the CUDA runtime applies it. MIG instances are
// not counted here (NVML lists the GPUs): the driver's count replaces this
// one at the first device use.
#include <stdlib.h>

#include <string>
#include <vector>

#include "axl/common/driver_library.hpp"
#include "cuda_driver.hpp"

namespace axl::cuda {

namespace {

// NVML's C API as far as counting needs it, declared here: the toolkit's
// nvml.h is not needed to build the plugin.
using NvmlReturn = int;  // nvmlReturn_t; 0 is NVML_SUCCESS
using NvmlDevice = void*;
using NvmlInit = NvmlReturn (*)();
using NvmlCount = NvmlReturn (*)(unsigned*);
using NvmlHandle = NvmlReturn (*)(unsigned, NvmlDevice*);
using NvmlUuid = NvmlReturn (*)(NvmlDevice, char*, unsigned);
using NvmlShutdown = NvmlReturn (*)();
constexpr unsigned kNvmlUuidBytes = 96;  // NVML_DEVICE_UUID_V2_BUFFER_SIZE

// The GPUs NVML lists and their UUIDs ("GPU-8f3c..."); false when NVML is
// absent or cannot run here.
bool nvml_census(uint32_t* count, std::vector<std::string>* uuids, std::string* source) {
  // Kept mapped for the life of the process, as every driver library.
  static common::DriverLibrary lib;
  if (!lib.is_open() && !lib.open("AXL_NVML_PATH", {"libnvidia-ml.so.1"}, nullptr)) return false;
  auto init = reinterpret_cast<NvmlInit>(lib.symbol("nvmlInit_v2"));
  auto get_count = reinterpret_cast<NvmlCount>(lib.symbol("nvmlDeviceGetCount_v2"));
  auto handle = reinterpret_cast<NvmlHandle>(lib.symbol("nvmlDeviceGetHandleByIndex_v2"));
  auto uuid = reinterpret_cast<NvmlUuid>(lib.symbol("nvmlDeviceGetUUID"));
  auto shutdown = reinterpret_cast<NvmlShutdown>(lib.symbol("nvmlShutdown"));
  if (init == nullptr || get_count == nullptr || shutdown == nullptr || init() != 0) return false;
  unsigned n = 0;
  const bool ok = get_count(&n) == 0;
  if (ok && handle != nullptr && uuid != nullptr)
    for (unsigned i = 0; i < n; ++i) {
      NvmlDevice d = nullptr;
      char text[kNvmlUuidBytes] = {};
      if (handle(i, &d) != 0 || uuid(d, text, sizeof text) != 0) {
        uuids->clear();  // partial ids would mis-resolve a UUID list
        break;
      }
      uuids->emplace_back(text);
    }
  shutdown();  // NVML counts its users; this one is done
  if (!ok) return false;
  *count = n;
  *source = "NVML (" + lib.path() + ")";
  return true;
}

}  // namespace

common::Census census() {
  common::Census c;
  uint32_t physical = 0;
  std::vector<std::string> uuids;
  if (!nvml_census(&physical, &uuids, &c.source)) {
    const std::string dir = common::census_path("/proc/driver/nvidia/gpus");
    bool exists = false;
    const std::vector<std::string> gpus = common::list_folder(dir, &exists);
    if (!exists) return c;  // unknown: only cuInit can tell
    physical = static_cast<uint32_t>(gpus.size());
    c.source = dir;
  }
  c.known = true;
  const char* visible = secure_getenv("CUDA_VISIBLE_DEVICES");
  c.count = common::visible_devices(visible, physical, uuids);
  if (c.count == 0)
    c.reason = physical == 0 ? "no CUDA device: " + c.source + " lists no NVIDIA GPU"
                             : "no CUDA device is visible: CUDA_VISIBLE_DEVICES='" + std::string(visible) +
                                   "' leaves none of the " + std::to_string(physical) + " GPU(s) " + c.source +
                                   " lists";
  return c;
}

}  // namespace axl::cuda
