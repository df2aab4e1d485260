// Counting Intel GPUs without zeInit (axl/common/census.hpp says why; Level
// Zero has no query that initialises nothing): the DRM render nodes in
// /sys/class/drm whose PCI vendor is Intel's (0x8086), served by the i915 or
// xe kernel driver, which is what Level Zero's GPU driver runs on. Then
// ZE_AFFINITY_MASK, whose entries are device ordinals ("1") or sub-devices
// ("1.0"): the devices it names, counted once each. The census counts
// cards, but with ZE_FLAT_DEVICE_HIERARCHY=FLAT (the default on multi-tile
// GPUs) Level Zero numbers tiles, so an ordinal past the card count may be
// real: the mask's distinct entries are counted as they are. An estimate
// that is too high is corrected at backend_init; one of 0 would hide the
// backend for good.
#include <stdlib.h>

#include <set>
#include <string>

#include "l0_backend.hpp"

namespace axl::l0 {

namespace {

// The distinct device ordinals a ZE_AFFINITY_MASK names (entries that are
// not ordinals are ignored, as the loader does).
uint32_t affinity_devices(const char* mask) {
  std::set<unsigned long> roots;
  std::string entry;
  auto take = [&] {
    char* end = nullptr;
    const unsigned long v = std::strtoul(entry.c_str(), &end, 10);
    if (end != entry.c_str() && (*end == '\0' || *end == '.')) roots.insert(v);
    entry.clear();
  };
  for (const char* p = mask; *p; ++p) {
    if (*p == ',') take();
    else if (*p != ' ') entry += *p;
  }
  take();
  return static_cast<uint32_t>(roots.size());
}

}  // namespace

common::Census census() {
  common::Census c;
  const std::string dir = common::census_path("/sys/class/drm");
  bool exists = false;
  c.known = true;
  c.source = dir;
  uint32_t gpus = 0;
  for (const std::string& n : common::list_folder(dir, &exists))
    if (n.rfind("renderD", 0) == 0 && common::read_small_file(dir + "/" + n + "/device/vendor").rfind("0x8086", 0) == 0)
      ++gpus;
  const char* mask = secure_getenv("ZE_AFFINITY_MASK");
  c.count = gpus != 0 && mask != nullptr && *mask != '\0' ? affinity_devices(mask) : gpus;
  if (c.count == 0)
    c.reason = gpus == 0 ? "no Intel GPU: " + dir + " has no render node of vendor 0x8086 (is the i915 or xe "
                               "kernel driver loaded?)"
                         : "no Intel GPU is visible: ZE_AFFINITY_MASK='" + std::string(mask) + "' names none of the " +
                               std::to_string(gpus) + " GPU(s) in " + dir;
  return c;
}

}  // namespace axl::l0
