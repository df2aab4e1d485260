// The backend's global state and the host facts several slots share.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <new>

#include "cpu_backend.hpp"

namespace axl::cpu {

Backend& backend() noexcept {
  // Constructed on first use and never destroyed (see Backend).
  alignas(Backend) static unsigned char storage[sizeof(Backend)];
  static Backend* const instance = ::new (static_cast<void*>(storage)) Backend();
  return *instance;
}

axl_status fail(axl_status status, const std::string& message) {
  return backend().host.report(status, message);
}

namespace {

// Reads one "Key:   N kB" line of /proc/meminfo, in bytes; 0 if absent.
uint64_t meminfo_bytes(const char* key) noexcept {
  FILE* f = std::fopen("/proc/meminfo", "re");
  if (f == nullptr) return 0;
  char line[256];
  uint64_t result = 0;
  const size_t key_len = std::strlen(key);
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, key, key_len) == 0 && line[key_len] == ':') {
      unsigned long long kib = 0;
      if (std::sscanf(line + key_len + 1, "%llu", &kib) == 1) result = kib * 1024ull;
      break;
    }
  }
  std::fclose(f);
  return result;
}

}  // namespace

uint64_t total_memory_bytes() noexcept {
  // Fixed for the life of the process; _SC_PHYS_PAGES is a sysinfo() system
  // call, which every allocation would otherwise pay (a third of a small
  // Buffer's cost in the allocation benchmark).
  static const uint64_t total = [] {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page_size = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page_size > 0) return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
    return meminfo_bytes("MemTotal");
  }();
  return total;
}

uint64_t available_memory_bytes() noexcept {
  // MemAvailable counts reclaimable page cache, which MemFree does not: it is
  // the kernel's own estimate of what can be allocated without swapping.
  uint64_t avail = meminfo_bytes("MemAvailable");
  if (avail == 0) {
    const long pages = sysconf(_SC_AVPHYS_PAGES);
    const long page_size = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page_size > 0) {
      avail = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
    }
  }
  return avail;
}

}  // namespace axl::cpu
