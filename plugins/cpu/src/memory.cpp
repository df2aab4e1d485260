// Device memory (plain host memory) and pinned host memory.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "cpu_backend.hpp"

namespace axl::cpu {

namespace {

// From this size on, allocations start kLargeLead bytes past a page
// boundary: big buffers are what kernels stream through, and a page-aligned
// base lets the kernel back them with whole (possibly huge) pages. Not on
// the boundary itself: memcpy from a page-aligned source (a big host array,
// another big buffer) into a page-aligned destination is ~1.1-1.2x slower
// on x86 than into one a few cache lines further in, because loads then
// alias the pending stores in the low 12 address bits (4 KiB aliasing);
// PoCL's buffers start 128 bytes in for the same reason. 256 keeps the ABI's
// alignment (plugin.h) and DLPack's recommended one. Smaller allocations get
// the ABI's 256 bytes.
constexpr uint64_t kLargeFrom = 1ull << 20;
constexpr uint64_t kMinAlign = 256;
constexpr uint64_t kLargeLead = 256;

uint64_t page_size() noexcept {
  static const uint64_t size = [] {
    const long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<uint64_t>(p) : uint64_t{4096};
  }();
  return size;
}

}  // namespace

void LargeBlocks::add(axl_devaddr address) {
  std::lock_guard<std::mutex> lk(mu_);
  live_.insert(address);
  count_.fetch_add(1, std::memory_order_relaxed);
}

bool LargeBlocks::remove(axl_devaddr address) noexcept {
  // The allocation happened before this free, so a zero here means "none".
  if (count_.load(std::memory_order_relaxed) == 0) return false;
  std::lock_guard<std::mutex> lk(mu_);
  if (live_.erase(address) == 0) return false;
  count_.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

axl_status memory_alloc(axl_pdevice, uint64_t bytes, axl_devaddr* out_address) noexcept {
  return guarded("memory_alloc", [&]() -> axl_status {
    Backend& b = backend();
    if (out_address == nullptr || bytes == 0) {
      return b.host.report(AXL_ERROR_INVALID_ARGUMENT,
                           common::str("memory_alloc: need bytes > 0 and a non-NULL "
                                       "out_address (bytes = ", bytes, ")"));
    }
    // With overcommit, malloc of more than the machine has can "succeed" and
    // the process dies at first touch instead; refuse up front what can never
    // fit.
    const uint64_t total = total_memory_bytes();
    if (bytes > total) {
      return b.host.report(AXL_ERROR_OUT_OF_DEVICE_MEMORY,
                           common::str("cannot allocate ", bytes,
                                       " bytes: the host has only ", total, " bytes of memory"));
    }
    const bool large = bytes >= kLargeFrom;
    const uint64_t align = large ? std::max(page_size(), kMinAlign) : kMinAlign;
    const uint64_t lead = large ? kLargeLead : 0;
    void* p = nullptr;
    const int rc = posix_memalign(&p, align, static_cast<size_t>(bytes + lead));
    if (rc != 0 || p == nullptr) {
      return b.host.report_errno(
          AXL_ERROR_OUT_OF_DEVICE_MEMORY,
          common::str("allocating ", bytes, " bytes (aligned to ", align, ") failed"),
          rc != 0 ? rc : ENOMEM);
    }
    const auto address = reinterpret_cast<axl_devaddr>(p) + lead;
    if (large) {
      try {
        b.large_blocks.add(address);
      } catch (...) {
        std::free(p);
        throw;
      }
    }
    *out_address = address;
    return AXL_SUCCESS;
  });
}

axl_status memory_free(axl_pdevice, axl_devaddr address) noexcept {
  // A large block's address lies kLargeLead past a page boundary and is in
  // the set; a small allocation that happens to start there is not in it.
  const bool large = address % page_size() == kLargeLead && backend().large_blocks.remove(address);
  std::free(reinterpret_cast<void*>(address - (large ? kLargeLead : 0)));
  return AXL_SUCCESS;
}

axl_status pinned_alloc(axl_pdevice, uint64_t bytes, void** out_host) noexcept {
  return guarded("pinned_alloc", [&]() -> axl_status {
    Backend& b = backend();
    if (out_host == nullptr || bytes == 0) {
      return b.host.report(AXL_ERROR_INVALID_ARGUMENT,
                           common::str("pinned_alloc: need bytes > 0 and a non-NULL "
                                       "out_host (bytes = ", bytes, ")"));
    }
    const uint64_t total = total_memory_bytes();
    if (bytes > total) {
      return b.host.report(AXL_ERROR_OUT_OF_HOST_MEMORY,
                           common::str("cannot pin ", bytes, " bytes: the host has only ",
                                       total, " bytes of memory"));
    }
    const uint64_t page = page_size();
    const uint64_t length = (bytes + page - 1) / page * page;
    common::PinnedPages::Mapped m;
    if (axl_status s = b.pinned.map(b.host, length, /*lock=*/true, &m)) return s;
    if (!m.locked) {
      const int err = m.lock_errno;
      // Unprivileged processes get RLIMIT_MEMLOCK (often 8 MiB). Unlocked
      // memory is still correct on this backend, where "the device" copies
      // with memcpy; only the page-fault guarantee is lost. Say so once.
      if (!b.mlock_fallback_logged.exchange(true)) {
        b.host.log(AXL_LOG_WARN,
                   common::str("mlock of ", length, " bytes of pinned memory failed (",
                               strerrorname_np(err), "); pinned allocations stay unlocked. Raise "
                               "RLIMIT_MEMLOCK (ulimit -l) to lock them."));
      }
    }
    *out_host = m.host;
    return AXL_SUCCESS;
  });
}

axl_status pinned_free(axl_pdevice, void* host) noexcept {
  return guarded("pinned_free", [&]() -> axl_status {
    if (!backend().pinned.unmap(host))
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("pinned_free: ", host, " is not a live pinned allocation of this backend"));
    return AXL_SUCCESS;
  });
}

}  // namespace axl::cpu
