// The launch-trace hook: while the core has tracing on, a plugin reports each
// copy, fill and launch it enqueues, on the enqueuing thread. Off, the cost
// is one relaxed load per enqueue; with AXL_NO_TRACE_HOOK defined (a
// benchmark build that measures that cost) the hook compiles away entirely.
#pragma once

#include <atomic>
#include <cstdint>

#include "axl/common/plugin_support.hpp"
#include "axl/plugin.h"

namespace axl::common {

class Tracer {
 public:
  explicit Tracer(const HostServices& host) noexcept : host_(host) {}

  // backend_set_tracing.
  void set_enabled(bool on) noexcept { enabled_.store(on, std::memory_order_relaxed); }

  // Whether to build and emit records. Relaxed: a record racing with the
  // switch may go either way, which the core's ordering tolerates.
  bool enabled() const noexcept {
#ifdef AXL_NO_TRACE_HOOK
    return false;
#else
    return enabled_.load(std::memory_order_relaxed);
#endif
  }

  // A copy of `bytes` in direction `memcpy_kind` (AXL_MEMCPY_*), reported
  // under the backend's API name for it (e.g. "memcpy_htod").
  void memcpy(uint64_t queue_trace_id, int32_t memcpy_kind, const char* name,
              uint64_t bytes) const noexcept {
    axl_trace_record r = blank(queue_trace_id, AXL_TRACE_MEMCPY, name);
    r.memcpy_kind = memcpy_kind;
    r.memcpy_bytes = bytes;
    host_.trace(r);
  }

  // A fill of `bytes` with the low `value_size` bytes of `value`.
  void memset(uint64_t queue_trace_id, const char* name, uint64_t bytes, uint32_t value,
              uint32_t value_size) const noexcept {
    axl_trace_record r = blank(queue_trace_id, AXL_TRACE_MEMSET, name);
    r.memset_bytes = bytes;
    r.memset_value = value_size >= 4 ? value : value & ((1u << (8 * value_size)) - 1u);
    r.memset_value_size = value_size;
    host_.trace(r);
  }

  // A kernel launch; `args_hash` is 0 or an address-free hash of the
  // scalar arguments (see hash_bytes).
  void launch(uint64_t queue_trace_id, const char* kernel_name, const uint32_t grid[3],
              const uint32_t block[3], uint64_t shared_mem_bytes,
              uint64_t args_hash) const noexcept {
    axl_trace_record r = blank(queue_trace_id, AXL_TRACE_KERNEL_LAUNCH, kernel_name);
    for (int i = 0; i < 3; ++i) {
      r.grid[i] = grid[i];
      r.block[i] = block[i];
    }
    r.shared_mem_bytes = shared_mem_bytes;
    r.args_hash = args_hash;
    host_.trace(r);
  }

  // FNV-1a, 64-bit, continuing from `h` (start with kHashSeed): a stable hash
  // for args_hash that is the same in every process and run.
  static constexpr uint64_t kHashSeed = 0xcbf29ce484222325ull;
  static uint64_t hash_bytes(uint64_t h, const void* data, uint64_t size) noexcept {
    const auto* p = static_cast<const unsigned char*>(data);
    for (uint64_t i = 0; i < size; ++i) {
      h ^= p[i];
      h *= 0x100000001b3ull;
    }
    return h;
  }

  // The args_hash of a launch: argument kinds, sizes and scalar values.
  // Buffer addresses differ from run to run, so only scalars identify a launch.
  static uint64_t hash_args(const axl_kernel_arg* args, uint32_t num_args) noexcept {
    uint64_t h = kHashSeed;
    for (uint32_t i = 0; i < num_args; ++i) {
      h = hash_bytes(h, &args[i].kind, sizeof args[i].kind);
      h = hash_bytes(h, &args[i].size, sizeof args[i].size);
      if (args[i].kind == AXL_ARG_SCALAR) h = hash_bytes(h, args[i].value, args[i].size);
    }
    return h;
  }

 private:
  static axl_trace_record blank(uint64_t queue_trace_id, int32_t kind, const char* name) noexcept {
    axl_trace_record r{};
    r.struct_size = sizeof(axl_trace_record);
    r.queue_trace_id = queue_trace_id;
    r.kind = kind;
    r.memcpy_kind = AXL_MEMCPY_NONE;
    r.name = name;
    return r;
  }

  const HostServices& host_;
  std::atomic<bool> enabled_{false};
};

}  // namespace axl::common
