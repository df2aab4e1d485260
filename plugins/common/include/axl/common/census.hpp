// Counting a machine's devices without initialising a driver.
//
// The core asks every backend for its device count at discovery
// (backend_device_count), and accelerator_count() / scan_available_devices()
// answer from it. Initialising a GPU driver there makes the process unsafe
// to fork() (the most repeated complaint about PyTorch, vLLM and Triton:
// `is_available()` runs cuInit) and costs tens of milliseconds (the HIP
// runtime: 13 ms of a 13.4 ms scan). So the driver backends count from a
// census the kernel driver publishes instead, and apply the runtime's
// visible-device variable the way the runtime does:
//   cuda:       NVML (libnvidia-ml.so.1; no CUDA context), else the entries of
//               /proc/driver/nvidia/gpus; CUDA_VISIBLE_DEVICES
//   hip:        the KFD topology, /sys/class/kfd/kfd/topology/nodes/*/properties
//               (GPU nodes have simd_count > 0); ROCR_VISIBLE_DEVICES, then
//               HIP_VISIBLE_DEVICES or CUDA_VISIBLE_DEVICES
//   level_zero: DRM render nodes of vendor 0x8086 in /sys/class/drm;
//               ZE_AFFINITY_MASK
// The census is an estimate the driver confirms: once a device is first used
// (backend_init), the driver's own count replaces it (the core asks again).
// Where no census source exists, only the driver can count, and it does.
//
// AXL_CENSUS_ROOT (read with secure_getenv) re-roots the /sys and /proc
// paths, for tests and for containers that mount the host's elsewhere.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace axl::common {

struct Census {
  bool known = false;   // false: no census source here; only the driver can count
  uint32_t count = 0;   // devices visible to the runtime (after its variables)
  std::string source;   // where the count came from, e.g. "NVML" (for the log)
  std::string reason;   // when known and count == 0: why, in words a user can act on
};

// `system_path` (absolute) under AXL_CENSUS_ROOT when that is set.
std::string census_path(const std::string& system_path);

// The names in folder `dir` (not "." or ".."), sorted; `exists` says whether
// the folder could be read at all.
std::vector<std::string> list_folder(const std::string& dir, bool* exists);

// The contents of a small text file; "" when it cannot be read.
std::string read_small_file(const std::string& path);

// How many of `physical` devices a visible-device list leaves, by the rule
// the CUDA runtime applies to CUDA_VISIBLE_DEVICES (HIP's variables follow
// it): NULL means every device; the list is comma-separated; each entry is
// an ordinal (leading digits count, surrounding blanks are ignored) or,
// when the list starts with "GPU-" or "MIG-", a device id matched by prefix
// against `ids` (when `ids` is empty, or the list is of "MIG-" ids, which
// never name a whole GPU, every such entry counts, up to `physical`: the
// source cannot tell them apart). The list ends at the first entry that is not a
// valid ordinal or id, or is out of range; a repeated entry makes the whole
// list empty (0 devices), as the runtime does.
uint32_t visible_devices(const char* list, uint32_t physical, const std::vector<std::string>& ids = {});

}  // namespace axl::common
