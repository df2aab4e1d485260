#include "axl/common/flag.hpp"

#include <chrono>
#include <thread>

#include "cpu_relax.hpp"

namespace axl::common {

static_assert(std::atomic_ref<uint64_t>::required_alignment <= 8,
              "the ABI promises an 8-byte aligned flag the host can use atomically");

uint64_t Flag::load() const noexcept {
  return std::atomic_ref<uint64_t>(value_).load(std::memory_order_acquire);
}

void Flag::store(uint64_t value) noexcept {
  std::atomic_ref<uint64_t>(value_).store(value, std::memory_order_release);
}

void Flag::wait_at_least(uint64_t value) const noexcept { axl::common::wait_at_least(&value_, value); }

void wait_at_least(const uint64_t* value, uint64_t target) noexcept {
  // atomic_ref needs a non-const object; the value is only ever loaded here.
  std::atomic_ref<uint64_t> v(*const_cast<uint64_t*>(value));
  auto load = [&] { return v.load(std::memory_order_acquire); };
  constexpr int kSpins = 128;
  constexpr auto kFirstSleep = std::chrono::microseconds(20);
  constexpr auto kMaxSleep = std::chrono::microseconds(100);
  for (int i = 0; i < kSpins; ++i) {
    if (load() >= target) return;
    detail::cpu_relax();
  }
  auto sleep = kFirstSleep;
  while (load() < target) {
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, std::chrono::duration_cast<std::chrono::microseconds>(kMaxSleep));
  }
}

axl_status Flag::enqueue_wait(WorkQueue& queue, uint64_t value) {
  return queue.enqueue(OpInfo{OpKind::kFlagWait, 0}, [self = Ref<Flag>(this), &queue, value] {
    queue.note_flag_wait(self->host_address(), value);
    self->wait_at_least(value);
  });
}

axl_status Flag::enqueue_write(WorkQueue& queue, uint64_t value) {
  return queue.enqueue(OpInfo{OpKind::kFlagWrite, sizeof(uint64_t)},
                       [self = Ref<Flag>(this), value] { self->store(value); });
}

}  // namespace axl::common
