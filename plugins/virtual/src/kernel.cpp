// Kernel launches: checked, priced (simulated latency), recorded in the
// launch trace, and never executed: a virtual device is a compile target
// with no code to run. The built-in test kernels are recorded the same way,
// so the conformance suite skips its result checks on virtual devices.
#include "virtual_backend.hpp"

namespace axl::virt {

namespace {

// Per-block dynamic shared memory a launch may ask for: the largest of
// current GPUs (228 KiB on sm_90), so a launch that could never run on one
// is refused here too.
constexpr uint64_t kMaxSharedMemBytes = 228u << 10;
// Bounds on argument lists, as the cpu backend's (CUDA allows 32 KiB in all).
constexpr uint32_t kMaxScalarBytes = 64u << 10;
constexpr uint32_t kMaxArgs = 4096;

constexpr Param kIncrementParams[] = {{AXL_ARG_DEVADDR, 8}, {AXL_ARG_SCALAR, 4}};
constexpr Param kFillParams[] = {{AXL_ARG_DEVADDR, 8}, {AXL_ARG_SCALAR, 4}, {AXL_ARG_SCALAR, 4}};

// What the core cannot know: this backend's limits and, for the built-in
// kernels, their parameter lists. Device addresses among the arguments are
// not checked: a pinned host buffer is a valid argument, and nothing runs.
axl_status validate_launch(const Kernel& k, const axl_launch_config* config,
                           const axl_kernel_arg* args, uint32_t num_args) {
  if (axl_status s = common::check_launch_config(fail, k.name.c_str(), config)) return s;
  if (config->shared_mem_bytes > kMaxSharedMemBytes)
    return fail(AXL_ERROR_INVALID_ARGUMENT,
                common::str("launch of '", k.name, "': shared_mem_bytes = ", config->shared_mem_bytes,
                            " exceeds the virtual device's ", kMaxSharedMemBytes, " bytes per block"));
  const std::string bad = common::check_launch_args(
      k.name.c_str(), k.params, k.param_count, args, num_args, {kMaxArgs, kMaxScalarBytes});
  if (!bad.empty()) return fail(AXL_ERROR_INVALID_ARGUMENT, bad);
  return AXL_SUCCESS;
}


Kernel& test_kernel(int32_t which) {
  // Never destroyed: built-in kernels live until backend_shutdown and beyond.
  static Kernel* const increment =
      new Kernel{"axl_test_increment_u32", kIncrementParams, 2, nullptr};
  static Kernel* const fill = new Kernel{"axl_test_fill_u32", kFillParams, 3, nullptr};
  return which == AXL_TEST_KERNEL_INCREMENT_U32 ? *increment : *fill;
}

}  // namespace

axl_status queue_launch(axl_pqueue queue, axl_pkernel kernel, const axl_launch_config* config,
                        const axl_kernel_arg* args, uint32_t num_args) noexcept {
  return guarded("queue_launch", [&]() -> axl_status {
    Backend& b = backend();
    Queue* q = from(queue);
    const Kernel& k = *from(kernel);
    if (axl_status s = validate_launch(k, config, args, num_args)) return s;
    const common::OpInfo info{common::OpKind::kLaunch, 0};
    std::optional<FaultHit> hit = b.faults.check(FaultOp::kLaunch);
    if (hit && !hit->async) return fail(*hit);
    // The launch occupies the queue for its simulated time and does nothing
    // else; an @async failure takes its place.
    axl_status s = AXL_SUCCESS;
    if (hit) {
      s = q->work.enqueue(info, [status = hit->status, text = hit->message](std::string& message) {
        message = text;
        return status;
      });
    } else {
      s = q->work.enqueue(info, [] {});
    }
    if (s != AXL_SUCCESS)
      return fail(s, common::str("cannot launch '", k.name, "': ", common::WorkQueue::refusal_message()));
    if (b.tracer.enabled())
      b.tracer.launch(q->trace_id, k.name.c_str(), config->grid, config->block,
                      config->shared_mem_bytes, common::Tracer::hash_args(args, num_args));
    return AXL_SUCCESS;
  });
}

axl_status device_get_test_kernel(axl_pdevice, int32_t which, axl_pkernel* out_kernel) noexcept {
  return guarded("device_get_test_kernel", [&]() -> axl_status {
    if (out_kernel == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "device_get_test_kernel: out_kernel is NULL");
    if (which != AXL_TEST_KERNEL_INCREMENT_U32 && which != AXL_TEST_KERNEL_FILL_U32)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("device_get_test_kernel: ", which,
                              " is not AXL_TEST_KERNEL_INCREMENT_U32 (0) or AXL_TEST_KERNEL_FILL_U32 (1)"));
    *out_kernel = reinterpret_cast<axl_pkernel>(&test_kernel(which));
    return AXL_SUCCESS;
  });
}

}  // namespace axl::virt
