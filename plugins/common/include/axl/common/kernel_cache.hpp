// A module's kernels by name: module_get_kernel hands out one kernel per name
// (the same handle every time, so handles compare equal), made on first
// request under the module's lock. Every backend with modules keeps one.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "axl/plugin.h"

namespace axl::common {

template <class Kernel>
class KernelCache {
 public:
  // The kernel named `name`, made by `make(key, out)` the first time:
  // `key` is the cache's own copy of the name (stable for the kernel's
  // life, so a kernel may keep key as its name), `out` the empty slot to
  // fill. A failed or throwing `make` leaves nothing behind, so a later call
  // tries again.
  template <class Make>
  axl_status get(const char* name, Make&& make, Kernel** out) {
    std::lock_guard<std::mutex> lk(mu_);
    auto [it, fresh] = kernels_.try_emplace(name);
    if (fresh) {
      axl_status s = AXL_ERROR_INTERNAL;
      try {
        s = make(it->first.c_str(), it->second);
      } catch (...) {
        kernels_.erase(it);
        throw;
      }
      if (s != AXL_SUCCESS || !it->second) {
        kernels_.erase(it);
        return s != AXL_SUCCESS ? s : AXL_ERROR_INTERNAL;
      }
    }
    *out = it->second.get();
    return AXL_SUCCESS;
  }

  // Calls `f(kernel)` for every kernel made (a module's destructor releasing
  // the driver's kernel objects). Not concurrent with get().
  template <class F>
  void for_each(F&& f) {
    for (auto& [name, k] : kernels_) f(*k);
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<Kernel>> kernels_;
};

}  // namespace axl::common
