// Completion flags. Level Zero 1.4 has no command that waits for a memory
// value, so a queue's wait is host-assisted: the queue's host thread polls
// the flag (common::wait_at_least) and then signals an event the device
// waits on. A write is a device fill of the 8 bytes after earlier work.
#include "axl/common/flag.hpp"

#include <atomic>

#include "axl/common/slot_checks.hpp"
#include "l0_backend.hpp"

namespace axl::l0 {

axl_status Flag::create(Device& device, common::Ref<Flag>* out) {
  auto f = common::Ref<Flag>::adopt(new Flag());
  f->device_ = &device;
  ze_host_mem_alloc_desc_t hd{};
  hd.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC;
  void* p = nullptr;
  // 64-byte aligned: a polled word should not share a line with hot data.
  if (ze_result_t r = ze().zeMemAllocHost(device.context(), &hd, sizeof(uint64_t), 64, &p))
    return ze_fail("zeMemAllocHost", r, "for a completion flag", AXL_ERROR_OUT_OF_HOST_MEMORY);
  f->value = static_cast<uint64_t*>(p);
  std::atomic_ref<uint64_t>(*f->value).store(0, std::memory_order_release);
  *out = std::move(f);
  return AXL_SUCCESS;
}

Flag::~Flag() {
  if (value != nullptr) ze().zeMemFree(device_->context(), value);
}

axl_status flag_create(axl_pdevice device, axl_pflag* out_flag) noexcept {
  return guarded("flag_create", [&]() -> axl_status {
    if (out_flag == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "flag_create: out_flag is NULL");
    auto h = std::make_unique<FlagHandle>();
    if (axl_status s = Flag::create(*from(device), &h->flag)) return s;
    *out_flag = reinterpret_cast<axl_pflag>(h.release());
    return AXL_SUCCESS;
  });
}

axl_status flag_destroy(axl_pflag flag) noexcept {
  // Pending waits and writes hold their own references to the Flag.
  delete from(flag);
  return AXL_SUCCESS;
}

axl_status flag_get_device_address(axl_pflag flag, axl_devaddr* out) noexcept {
  // Host allocations are addressed by the same pointer on the device.
  return guarded("flag_get_device_address", [&] {
    return common::give(fail, "flag_get_device_address", out,
                        reinterpret_cast<axl_devaddr>(from(flag)->flag->value));
  });
}

axl_status flag_get_host_address(axl_pflag flag, uint64_t** out) noexcept {
  return guarded("flag_get_host_address",
                 [&] { return common::give(fail, "flag_get_host_address", out, from(flag)->flag->value); });
}

axl_status queue_write_flag(axl_pqueue queue, axl_pflag flag, uint64_t value) noexcept {
  return guarded("queue_write_flag", [&]() -> axl_status {
    Queue& q = *from(queue);
    common::Ref<Flag> f = from(flag)->flag;
    auto stored = std::make_unique<uint64_t>(value);
    std::lock_guard<std::mutex> lk(q.mu);
    if (axl_status s = order(q)) return s;
    if (ze_result_t r = ze().zeCommandListAppendMemoryFill(q.list, f->value, stored.get(),
                                                           sizeof(uint64_t), sizeof(uint64_t),
                                                           nullptr, 0, nullptr))
      return ze_fail("zeCommandListAppendMemoryFill", r, "writing a completion flag");
    q.need_barrier = true;
    Pending p;
    p.flag = std::move(f);
    p.pattern = std::move(stored);
    q.pending.push_back(std::move(p));
    return AXL_SUCCESS;
  });
}

axl_status queue_wait_flag(axl_pqueue queue, axl_pflag flag, uint64_t value) noexcept {
  return guarded("queue_wait_flag", [&]() -> axl_status {
    Queue& q = *from(queue);
    common::Ref<Flag> f = from(flag)->flag;
    common::Ref<Signal> go;
    if (axl_status s = Signal::create(*q.device, false, &go)) return s;
    std::lock_guard<std::mutex> lk(q.mu);
    if (ze_result_t r = ze().zeCommandListAppendWaitOnEvents(q.list, 1, &go->event))
      return ze_fail("zeCommandListAppendWaitOnEvents", r, "waiting on a completion flag");
    common::WorkQueue& hq = host_queue(q);
    axl_status s = hq.enqueue(common::OpInfo{common::OpKind::kFlagWait, 0}, [f, go, &hq, value] {
      hq.note_flag_wait(f->value, value);
      common::wait_at_least(f->value, value);
      ze().zeEventHostSignal(go->event);
    });
    if (s != AXL_SUCCESS) {
      ze().zeEventHostSignal(go->event);  // the device must not wait for it
      return fail(s, common::str("queue_wait_flag: ", common::WorkQueue::refusal_message()));
    }
    Pending p;
    p.signal = std::move(go);
    p.flag = std::move(f);
    q.pending.push_back(std::move(p));
    return AXL_SUCCESS;
  });
}

}  // namespace axl::l0
