// The launch-trace hook: while the core has tracing on, a plugin reports each
// copy, fill and launch it enqueues, on the enqueuing thread. Off, the cost
// is one relaxed load per enqueue; with AXL_NO_TRACE_HOOK defined (a
// benchmark build that measures that cost) the hook compiles away entirely.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>

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
  // scalar arguments (see hash_args).
  void launch(uint64_t queue_trace_id, const char* kernel_name, const uint32_t grid[3],
              const uint32_t block[3], uint64_t shared_mem_bytes,
              uint64_t args_hash) const noexcept {
    // Each field written once (blank() zeroes the record first): this runs
    // on every traced launch.
    axl_trace_record r;
    r.struct_size = sizeof(axl_trace_record);
    r.queue_trace_id = queue_trace_id;
    r.kind = AXL_TRACE_KERNEL_LAUNCH;
    r.memcpy_kind = AXL_MEMCPY_NONE;
    r.name = kernel_name;
    std::memcpy(r.grid, grid, sizeof r.grid);
    std::memcpy(r.block, block, sizeof r.block);
    r.shared_mem_bytes = shared_mem_bytes;
    r.memcpy_bytes = 0;
    r.memset_bytes = 0;
    r.memset_value = 0;
    r.memset_value_size = 0;
    r.args_hash = args_hash;
    host_.trace(r);
  }

  // A stable hash for args_hash, the same in every process and run,
  // continuing from `h` (start with kHashSeed). It mixes whole 64-bit words
  // (xor, multiply, fold the high half down), then the byte count:
  // byte-at-a-time FNV-1a was 15% of a traced launch. Nothing stores these
  // values across processes, so the function may change.
  static constexpr uint64_t kHashSeed = 0xcbf29ce484222325ull;
  // The last `r` (1-7) bytes as one word, in fixed-size loads (a scalar
  // argument is usually 4 bytes; a variable-size memcpy is a library call).
  // Every byte lands in the word, so different tails give different words.
  static uint64_t tail_word(const unsigned char* p, uint64_t r) noexcept {
    if (r >= 4) {
      uint32_t lo, hi;
      std::memcpy(&lo, p, 4);
      std::memcpy(&hi, p + r - 4, 4);
      return lo | uint64_t{hi} << 32;
    }
    return uint64_t{p[0]} | uint64_t{p[r / 2]} << 8 | uint64_t{p[r - 1]} << 16;
  }
  static uint64_t hash_word(uint64_t h, uint64_t w) noexcept {
    h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 32);
  }
  static uint64_t hash_bytes(uint64_t h, const void* data, uint64_t size) noexcept {
    const auto* p = static_cast<const unsigned char*>(data);
    uint64_t i = 0;
    for (; i + 8 <= size; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      h = hash_word(h, w);
    }
    if (i < size) h = hash_word(h, tail_word(p + i, size - i));
    return hash_word(h, size);
  }

  // The args_hash of a launch: argument kinds, sizes and scalar values.
  // Buffer addresses differ from run to run, so only scalars identify a launch.
  static uint64_t hash_args(const axl_kernel_arg* args, uint32_t num_args) noexcept {
    uint64_t h = kHashSeed;
    for (const axl_kernel_arg* a = args; a != args + num_args; ++a) {
      h = hash_word(h, static_cast<uint32_t>(a->kind) | uint64_t{a->size} << 32);
      if (a->kind != AXL_ARG_SCALAR) continue;
      if (a->size == 4) {
        // hash_bytes(h, a->value, 4) unrolled (its tail word holds the four
        // bytes twice): most scalars are 4 bytes, and this is per launch.
        uint32_t v;
        std::memcpy(&v, a->value, 4);
        h = hash_word(hash_word(h, v | uint64_t{v} << 32), 4);
      } else {
        h = hash_bytes(h, a->value, a->size);
      }
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
