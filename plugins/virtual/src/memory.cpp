// Device memory: a budget per device, addresses in the virtual address space
// (virtual_backend.hpp), host allocations behind them, and guard mode; plus
// pinned host memory.
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <optional>

#include "virtual_backend.hpp"

namespace axl::virt {

namespace {

// Freed guard-mode mappings kept inaccessible; older ones are unmapped. They
// hold no memory (their pages were dropped), only address space.
constexpr size_t kQuarantineEntries = 4096;

uint64_t page_size() noexcept {
  const long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? static_cast<uint64_t>(p) : 4096;
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// Finds addresses for `span` bytes in the device's range: after the newest
// allocation while the range lasts (so a freed address is not handed out
// again soon, and a stale one is reported as such), then the first gap.
std::optional<uint64_t> reserve_addresses(Device& d, uint64_t span) {
  if (span <= kDeviceStride && d.next_offset <= kDeviceStride - span) {
    const uint64_t off = d.next_offset;
    d.next_offset += span;
    return off;
  }
  uint64_t prev_end = 0;
  for (const auto& [off, a] : d.allocations) {
    if (off - prev_end >= span) break;
    prev_end = off + a.span;
  }
  if (kDeviceStride - prev_end < span) return std::nullopt;
  d.next_offset = prev_end + span;
  return prev_end;
}

// Guard mode: the allocation ends exactly where an inaccessible page begins
// (up to the 256-byte alignment), with another such page before it.
axl_status map_guarded(uint64_t bytes, Allocation& a) {
  const uint64_t page = page_size();
  const uint64_t data = round_up(round_up(bytes, kAllocAlign), page);
  const size_t len = static_cast<size_t>(data + 2 * page);
  void* p = mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    return backend().host.report_errno(
        AXL_ERROR_OUT_OF_DEVICE_MEMORY,
        common::str("guard mode: mapping ", len, " bytes for a ", bytes, "-byte allocation failed"),
        err);
  }
  auto* base = static_cast<unsigned char*>(p);
  if (mprotect(base + page, data, PROT_READ | PROT_WRITE) != 0) {
    const int err = errno;
    munmap(p, len);
    return backend().host.report_errno(
        AXL_ERROR_OUT_OF_DEVICE_MEMORY,
        common::str("guard mode: making ", data, " bytes accessible failed"), err);
  }
  a.map = p;
  a.map_len = len;
  a.host = base + page + data - round_up(bytes, kAllocAlign);
  return AXL_SUCCESS;
}

void release_backing(const Allocation& a) {
  if (a.map == nullptr) {
    std::free(a.host);
    return;
  }
  // Drop the pages and keep the addresses inaccessible: work that still
  // touches this memory after its free (the core promises none does) faults.
  madvise(a.map, a.map_len, MADV_DONTNEED);
  mprotect(a.map, a.map_len, PROT_NONE);
  Backend& b = backend();
  std::lock_guard<std::mutex> lk(b.quarantine_mu);
  if (b.quarantine.size() >= kQuarantineEntries) {
    munmap(b.quarantine.front().first, b.quarantine.front().second);
    b.quarantine.erase(b.quarantine.begin());
  }
  b.quarantine.emplace_back(a.map, a.map_len);
}

}  // namespace

Device* device_of_address(axl_devaddr address) noexcept {
  if (address < kAddressBase) return nullptr;
  const uint64_t index = (address - kAddressBase) / kDeviceStride;
  if (index >= kMaxDevices) return nullptr;
  return backend().devices[index].load(std::memory_order_acquire);
}

axl_status resolve(Device& device, axl_devaddr address, uint64_t bytes, const char* role,
                   unsigned char** out, std::vector<unsigned char*>* mirrors) {
  if (address < device.base() || address - device.base() >= kDeviceStride) {
    if (const Device* other = device_of_address(address)) {
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str(role, " address ", hex(address), " is memory of virtual device ",
                              other->index, ", not of virtual device ", device.index,
                              " (the queue's device); copy between devices with a peer copy"));
    }
    return fail(AXL_ERROR_INVALID_ARGUMENT,
                common::str(role, " address ", hex(address),
                            " is not a virtual device address (virtual device ", device.index,
                            "'s memory is at ", hex(device.base()), " and up)"));
  }
  const uint64_t offset = address - device.base();
  std::lock_guard<std::mutex> lk(device.mem_mu);
  auto it = device.allocations.upper_bound(offset);
  if (it == device.allocations.begin() ||
      offset >= std::prev(it)->second.offset + std::prev(it)->second.bytes) {
    return fail(AXL_ERROR_INVALID_ARGUMENT,
                common::str(role, " address ", hex(address),
                            " is not inside any live allocation of virtual device ", device.index,
                            " (freed, or never allocated)"));
  }
  const Allocation& a = std::prev(it)->second;
  const uint64_t within = offset - a.offset;
  // Guard mode leaves the end unchecked on purpose: the overrun reaches the
  // inaccessible page and faults where it happens (see memory_alloc).
  if (a.map == nullptr && bytes > a.bytes - within) {
    return fail(AXL_ERROR_OUT_OF_RANGE,
                common::str(role, ": ", bytes, " bytes at ", hex(address), " run past the end of the ",
                            a.bytes, "-byte allocation at ", hex(device.base() + a.offset),
                            " (offset ", within, ")"));
  }
  *out = a.host + within;
  if (mirrors) {
    mirrors->clear();
    if (a.mirrors)
      for (unsigned char* m : *a.mirrors) mirrors->push_back(m + within);
  }
  return AXL_SUCCESS;
}

axl_status map_alias(Device& d, unsigned char* host, uint64_t bytes,
                     std::shared_ptr<const std::vector<unsigned char*>> mirrors, axl_devaddr* out) {
  std::lock_guard<std::mutex> lk(d.mem_mu);
  const std::optional<uint64_t> offset = reserve_addresses(d, round_up(bytes, kAllocAlign) + kAllocGap);
  if (!offset)
    return fail(AXL_ERROR_OUT_OF_DEVICE_MEMORY,
                common::str("cannot map a ", bytes, "-byte multicast object on virtual device ", d.index,
                            ": its address range has no gap that large left"));
  Allocation a;
  a.offset = *offset;
  a.bytes = bytes;
  a.span = round_up(bytes, kAllocAlign) + kAllocGap;
  a.host = host;
  a.mirrors = std::move(mirrors);
  d.allocations.emplace(a.offset, std::move(a));
  *out = d.base() + *offset;
  return AXL_SUCCESS;
}

void unmap_alias(Device& d, axl_devaddr address) noexcept {
  std::lock_guard<std::mutex> lk(d.mem_mu);
  if (address >= d.base()) d.allocations.erase(address - d.base());
}

unsigned char* backing_of(Device& d, axl_devaddr address) noexcept {
  std::lock_guard<std::mutex> lk(d.mem_mu);
  auto it = address >= d.base() ? d.allocations.find(address - d.base()) : d.allocations.end();
  return it == d.allocations.end() ? nullptr : it->second.host;
}

axl_status memory_alloc(axl_pdevice device, uint64_t bytes, axl_devaddr* out_address) noexcept {
  return guarded("memory_alloc", [&]() -> axl_status {
    Backend& b = backend();
    if (out_address == nullptr || bytes == 0)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("memory_alloc: need bytes > 0 and a non-NULL out_address (bytes = ",
                              bytes, ")"));
    Device& d = *from(device);
    if (std::optional<FaultHit> hit = b.faults.check(FaultOp::kAlloc)) return fail(*hit);
    if (bytes > d.total_bytes)
      return fail(AXL_ERROR_OUT_OF_DEVICE_MEMORY,
                  common::str("cannot allocate ", bytes, " bytes on virtual device ", d.index,
                              ": it has ", d.total_bytes, " bytes in all (AXL_VIRTUAL_DEVICE_MEMORY)"));
    const uint64_t charge = round_up(bytes, kAllocAlign);
    std::lock_guard<std::mutex> lk(d.mem_mu);
    if (charge > d.total_bytes - d.used_bytes)
      return fail(AXL_ERROR_OUT_OF_DEVICE_MEMORY,
                  common::str("cannot allocate ", bytes, " bytes on virtual device ", d.index, ": ",
                              d.used_bytes, " of its ", d.total_bytes,
                              " bytes are in use (AXL_VIRTUAL_DEVICE_MEMORY)"));
    const std::optional<uint64_t> offset = reserve_addresses(d, charge + kAllocGap);
    if (!offset)
      return fail(AXL_ERROR_OUT_OF_DEVICE_MEMORY,
                  common::str("cannot allocate ", bytes, " bytes on virtual device ", d.index,
                              ": its address range has no gap that large left"));
    Allocation a;
    a.offset = *offset;
    a.bytes = bytes;
    a.span = charge + kAllocGap;
    if (config().guard) {
      if (axl_status s = map_guarded(bytes, a)) return s;
    } else {
      // The exact size, so AddressSanitizer checks every access against it.
      void* p = nullptr;
      if (int rc = posix_memalign(&p, kAllocAlign, static_cast<size_t>(bytes)); rc != 0 || !p) {
        return b.host.report_errno(
            AXL_ERROR_OUT_OF_DEVICE_MEMORY,
            common::str("host memory behind a ", bytes, "-byte allocation on virtual device ",
                        d.index, " could not be allocated"),
            rc != 0 ? rc : ENOMEM);
      }
      a.host = static_cast<unsigned char*>(p);
    }
    try {
      d.allocations.emplace(a.offset, a);
    } catch (...) {
      release_backing(a);
      throw;
    }
    d.used_bytes += charge;
    *out_address = d.base() + a.offset;
    return AXL_SUCCESS;
  });
}

axl_status memory_free(axl_pdevice device, axl_devaddr address) noexcept {
  return guarded("memory_free", [&]() -> axl_status {
    Device& d = *from(device);
    Allocation a;
    {
      std::lock_guard<std::mutex> lk(d.mem_mu);
      auto it = address >= d.base() ? d.allocations.find(address - d.base()) : d.allocations.end();
      if (it == d.allocations.end())
        return fail(AXL_ERROR_INVALID_ARGUMENT,
                    common::str("memory_free: ", hex(address),
                                " is not the start of a live allocation of virtual device ",
                                d.index));
      // Its bytes are another allocation's: freeing them here would free
      // that one's too.
      if (it->second.mirrors)
        return fail(AXL_ERROR_INVALID_ARGUMENT,
                    common::str("memory_free: ", hex(address), " is a multicast mapping of virtual device ",
                                d.index, "; multicast_destroy releases it"));
      // An injected failure leaves the memory allocated, as a failed
      // cuMemFree would.
      if (std::optional<FaultHit> hit = backend().faults.check(FaultOp::kFree)) return fail(*hit);
      a = it->second;
      d.allocations.erase(it);
      d.used_bytes -= round_up(a.bytes, kAllocAlign);
    }
    release_backing(a);
    return AXL_SUCCESS;
  });
}

axl_status pinned_alloc(axl_pdevice, uint64_t bytes, void** out_host) noexcept {
  return guarded("pinned_alloc", [&]() -> axl_status {
    Backend& b = backend();
    if (out_host == nullptr || bytes == 0)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("pinned_alloc: need bytes > 0 and a non-NULL out_host (bytes = ",
                              bytes, ")"));
    if (std::optional<FaultHit> hit = b.faults.check(FaultOp::kPinnedAlloc)) return fail(*hit);
    const uint64_t page = page_size();
    if (bytes > UINT64_MAX - page)
      return fail(AXL_ERROR_OUT_OF_HOST_MEMORY, common::str("cannot pin ", bytes, " bytes"));
    const size_t length = static_cast<size_t>(round_up(bytes, page));
    // Whole pages of their own, as page-locked memory is; nothing is locked:
    // the virtual device "DMAs" with memcpy, which needs no locked pages.
    common::PinnedPages::Mapped m;
    if (axl_status s = b.pinned.map(b.host, length, /*lock=*/false, &m)) return s;
    *out_host = m.host;
    return AXL_SUCCESS;
  });
}

axl_status pinned_free(axl_pdevice, void* host) noexcept {
  return guarded("pinned_free", [&]() -> axl_status {
    if (!backend().pinned.unmap(host))
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("pinned_free: ", host, " is not a live pinned allocation of the virtual backend"));
    return AXL_SUCCESS;
  });
}

}  // namespace axl::virt
