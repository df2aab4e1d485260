// Flag: the completion flag of plugin.h, an 8-byte counter in host memory that
// queues wait on and write, and that the host reads and writes directly
// through its raw address with atomics.
#pragma once

#include <atomic>
#include <cstdint>

#include "axl/common/ref_counted.hpp"
#include "axl/common/work_queue.hpp"
#include "axl/status.h"

namespace axl::common {

// Blocks the calling thread until the 8-byte value at `value` (read with
// acquire loads) is >= `target`, polling as Flag::wait_at_least does. For
// flags whose storage a driver allocates (Level Zero host memory).
void wait_at_least(const uint64_t* value, uint64_t target) noexcept;

class Flag : public RefCounted<Flag> {
 public:
  Flag() = default;

  // The value's address, 8-byte aligned, valid for the flag's life. The core
  // and the application access it with acquire loads and release stores.
  uint64_t* host_address() noexcept { return &value_; }

  // Acquire load of the current value.
  uint64_t load() const noexcept;
  // Release store of `value`.
  void store(uint64_t value) noexcept;

  // Blocks the calling thread until the value is >= `value`. Polls: the host
  // writes the flag through its raw address and never notifies anyone, so
  // std::atomic::wait (which relies on notify) cannot be used. Spins briefly
  // for a fast hand-off, then sleeps with a backoff capped at 100 us so a
  // long wait costs next to no CPU and a late signal is seen within 0.1 ms.
  void wait_at_least(uint64_t value) const noexcept;

  // Enqueues an operation that blocks `queue` until the value is >= `value`.
  axl_status enqueue_wait(WorkQueue& queue, uint64_t value);
  // Enqueues a release store of `value`, after everything enqueued before.
  axl_status enqueue_write(WorkQueue& queue, uint64_t value);

 private:
  friend class RefCounted<Flag>;
  ~Flag() = default;

  // Own cache line: a polled flag next to hot data would slow both down.
  alignas(64) mutable uint64_t value_ = 0;
};

}  // namespace axl::common
