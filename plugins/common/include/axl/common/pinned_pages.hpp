// pinned_alloc's memory on the backends whose device is the host (cpu,
// virtual): whole pages of a private anonymous mapping of their own, listed
// so that pinned_free, which gets only the pointer, knows the length (and
// whether to munlock). Pages of their own because mlock works on whole pages
// and does not nest: two blocks sharing a page would unlock each other's
// memory on free.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "axl/common/plugin_support.hpp"
#include "axl/plugin.h"

namespace axl::common {

class PinnedPages {
 public:
  struct Mapped {
    void* host = nullptr;
    bool locked = false;  // mlock held (asked for and succeeded)
    int lock_errno = 0;   // why mlock failed, when asked for and it did
  };

  // Maps `length` bytes (a multiple of the page size) and lists them; with
  // `lock`, tries mlock too (a failure is no error: Mapped says so). A failed
  // mapping is reported through `host` (OUT_OF_HOST_MEMORY, with errno).
  axl_status map(const HostServices& host, uint64_t length, bool lock, Mapped* out);

  // Unlists, unlocks and unmaps `p`; false when `p` is not a listed block.
  bool unmap(void* p);

 private:
  struct Block {
    uint64_t bytes;
    bool locked;
  };
  std::mutex mu_;
  std::unordered_map<void*, Block> blocks_;
};

}  // namespace axl::common
