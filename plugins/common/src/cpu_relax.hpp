// A spin-wait hint shared by the polling loops in this library.
#pragma once

namespace axl::common::detail {

// Tells the core we are spinning: frees the sibling hyper-thread and avoids
// the memory-order pipeline flush when the awaited store lands.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace axl::common::detail
