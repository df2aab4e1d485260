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

// Small allocations come from plain malloc, aligned by hand, with the block
// they came from recorded just below the address. posix_memalign would give
// the same alignment but splits a chunk on every call and merges the pieces
// on every free: ~1,400 instructions per allocate + free of 64 bytes against
// ~100 here, the largest part of a small `Buffer`'s cost (issue 16).
struct SmallHeader {
  void* block;     // what malloc returned
  uint64_t bytes;  // what was asked for
  uint64_t check;  // kSmallCheck ^ block: a free of anything else is refused
};
constexpr uint64_t kSmallCheck = 0x61786c736d616c6cull;  // "axlsmall"
constexpr uint64_t kSmallSlack = kMinAlign + sizeof(SmallHeader);

#if defined(__SANITIZE_ADDRESS__)
#define AXL_CPU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AXL_CPU_ASAN 1
#endif
#endif
#ifdef AXL_CPU_ASAN
extern "C" void __asan_poison_memory_region(void const volatile* addr, size_t size);
extern "C" void __asan_unpoison_memory_region(void const volatile* addr, size_t size);
#endif

// The slack around a small allocation is poisoned under ASan, so an overrun
// past the bytes asked for is still reported as it would be with memalign.
void small_poison(char* block, uint64_t address, uint64_t bytes, bool poison) noexcept {
#ifdef AXL_CPU_ASAN
  char* user = reinterpret_cast<char*>(address);
  char* header = user - sizeof(SmallHeader);
  char* end = block + bytes + kSmallSlack;
  auto apply = [poison](char* from, char* to) {
    if (to <= from) return;
    if (poison)
      __asan_poison_memory_region(from, static_cast<size_t>(to - from));
    else
      __asan_unpoison_memory_region(from, static_cast<size_t>(to - from));
  };
  apply(block, header);
  apply(user + bytes, end);
#else
  (void)block, (void)address, (void)bytes, (void)poison;
#endif
}

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
    if (bytes < kLargeFrom) {
      void* block = std::malloc(static_cast<size_t>(bytes + kSmallSlack));
      if (block == nullptr) {
        return b.host.report_errno(AXL_ERROR_OUT_OF_DEVICE_MEMORY,
                                   common::str("allocating ", bytes, " bytes (aligned to ", kMinAlign, ") failed"),
                                   ENOMEM);
      }
      const uint64_t base = reinterpret_cast<uint64_t>(block);
      const uint64_t address = (base + sizeof(SmallHeader) + kMinAlign - 1) / kMinAlign * kMinAlign;
      auto* h = reinterpret_cast<SmallHeader*>(address - sizeof(SmallHeader));
      h->block = block;
      h->bytes = bytes;
      h->check = kSmallCheck ^ base;
      small_poison(static_cast<char*>(block), address, bytes, true);
      *out_address = address;
      return AXL_SUCCESS;
    }
    const uint64_t align = std::max(page_size(), kMinAlign);
    const uint64_t lead = kLargeLead;
    void* p = nullptr;
    const int rc = posix_memalign(&p, align, static_cast<size_t>(bytes + lead));
    if (rc != 0 || p == nullptr) {
      return b.host.report_errno(
          AXL_ERROR_OUT_OF_DEVICE_MEMORY,
          common::str("allocating ", bytes, " bytes (aligned to ", align, ") failed"),
          rc != 0 ? rc : ENOMEM);
    }
    const auto address = reinterpret_cast<axl_devaddr>(p) + lead;
    try {
      b.large_blocks.add(address);
    } catch (...) {
      std::free(p);
      throw;
    }
    *out_address = address;
    return AXL_SUCCESS;
  });
}

axl_status memory_free(axl_pdevice, axl_devaddr address) noexcept {
  return guarded("memory_free", [&]() -> axl_status {
    // A large block's address lies kLargeLead past a page boundary and is in
    // the set; a small allocation that happens to start there is not in it.
    if (address % page_size() == kLargeLead && backend().large_blocks.remove(address)) {
      std::free(reinterpret_cast<void*>(address - kLargeLead));
      return AXL_SUCCESS;
    }
    if (address % kMinAlign != 0 || address < kSmallSlack) {
      return backend().host.report(AXL_ERROR_INVALID_ARGUMENT,
                                   common::str("memory_free: ", address, " is not an address memory_alloc returned"));
    }
    auto* h = reinterpret_cast<SmallHeader*>(address - sizeof(SmallHeader));
    const uint64_t base = reinterpret_cast<uint64_t>(h->block);
    // The block lies at most kSmallSlack below the address; anything else is
    // a free of memory this backend did not allocate, or a header overwritten
    // by a write below the buffer: refused and leaked rather than handed to
    // free(), which would corrupt the heap.
    if ((h->check ^ base) != kSmallCheck || base > address || address - base > kSmallSlack) {
      return backend().host.report(
          AXL_ERROR_INVALID_ARGUMENT,
          common::str("memory_free: ", address, " is not a live allocation of this backend (its header is not intact)"));
    }
    void* block = h->block;
    h->check = 0;  // a second free of the address is refused while the block is unused
    small_poison(static_cast<char*>(block), address, h->bytes, false);
    std::free(block);
    return AXL_SUCCESS;
  });
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
