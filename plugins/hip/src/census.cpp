// Counting AMD GPUs without loading the HIP runtime (axl/common/census.hpp
// says why; for HIP even dlopen costs ~20 ms, and every HIP call, however
// small, initialises the runtime). The amdgpu kernel driver publishes its
// compute nodes in the KFD topology: one folder per node, whose
// `properties` file has "simd_count N" with N > 0 for a GPU and 0 for a
// CPU. Then the visible-device variables in the order the stack applies
// them: ROCR_VISIBLE_DEVICES (the ROCm runtime, below HIP), then
// HIP_VISIBLE_DEVICES, or CUDA_VISIBLE_DEVICES when that is unset.
#include <stdlib.h>

#include <sstream>
#include <string>

#include "hip_runtime.hpp"

namespace axl::hip {

namespace {

// The value of `key` in a KFD properties file ("key value" lines), or -1.
long long property(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string k;
  long long v = 0;
  while (in >> k >> v)
    if (k == key) return v;
  return -1;
}

}  // namespace

common::Census census() {
  common::Census c;
  const std::string dir = common::census_path("/sys/class/kfd/kfd/topology/nodes");
  bool exists = false;
  const std::vector<std::string> nodes = common::list_folder(dir, &exists);
  c.known = true;
  c.source = dir;
  if (!exists) {
    c.reason = "no AMD GPU: " + dir + " does not exist (the amdgpu kernel driver is not loaded, or /sys is not mounted)";
    return c;
  }
  uint32_t gpus = 0;
  for (const std::string& n : nodes)
    if (property(common::read_small_file(dir + "/" + n + "/properties"), "simd_count") > 0) ++gpus;
  uint32_t visible = common::visible_devices(secure_getenv("ROCR_VISIBLE_DEVICES"), gpus);
  const char* hip = secure_getenv("HIP_VISIBLE_DEVICES");
  const char* list = hip != nullptr ? hip : secure_getenv("CUDA_VISIBLE_DEVICES");
  visible = common::visible_devices(list, visible);
  c.count = visible;
  if (c.count == 0)
    c.reason = gpus == 0 ? "no AMD GPU: the KFD topology " + dir + " lists no GPU node"
                         : "no AMD GPU is visible: ROCR_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES / "
                           "CUDA_VISIBLE_DEVICES leave none of the " + std::to_string(gpus) + " GPU(s) in " + dir;
  return c;
}

}  // namespace axl::hip
