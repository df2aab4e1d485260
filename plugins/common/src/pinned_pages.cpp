#include "axl/common/pinned_pages.hpp"

#include <sys/mman.h>

#include <cerrno>

namespace axl::common {

axl_status PinnedPages::map(const HostServices& host, uint64_t length, bool lock, Mapped* out) {
  void* p = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return host.report_errno(AXL_ERROR_OUT_OF_HOST_MEMORY,
                             str("mapping ", length, " bytes of pinned memory failed"), errno);
  Mapped m;
  m.host = p;
  if (lock) {
    m.locked = mlock(p, length) == 0;
    if (!m.locked) m.lock_errno = errno;
  }
  try {
    std::lock_guard<std::mutex> lk(mu_);
    blocks_.emplace(p, Block{length, m.locked});
  } catch (...) {
    if (m.locked) munlock(p, length);
    munmap(p, length);
    throw;
  }
  *out = m;
  return AXL_SUCCESS;
}

bool PinnedPages::unmap(void* p) {
  Block block{};
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = blocks_.find(p);
    if (it == blocks_.end()) return false;
    block = it->second;
    blocks_.erase(it);
  }
  if (block.locked) munlock(p, block.bytes);
  munmap(p, block.bytes);
  return true;
}

}  // namespace axl::common
