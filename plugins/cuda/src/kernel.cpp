// Kernel launches: cuLaunchKernel with the arguments' own addresses as
// kernelParams (no copy), reported to the launch trace.
#include "cuda_backend.hpp"

namespace axl::cuda {

namespace {

// CUDA's parameter space is 32764 bytes (4 KiB before CUDA 12.1 / Volta);
// the driver checks the total, these bound each argument and the count.
constexpr common::ArgLimits kArgLimits{4096, 32764};

}  // namespace

axl_status queue_launch(axl_pqueue queue, axl_pkernel kernel, const axl_launch_config* config,
                        const axl_kernel_arg* args, uint32_t num_args) noexcept {
  return guarded("queue_launch", [&]() -> axl_status {
    Queue& q = *from(queue);
    const Kernel& k = *from(kernel);
    if (config == nullptr || config->struct_size < sizeof(axl_launch_config))
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("launch of '", k.name, "': config is NULL or its struct_size is too small"));
    const std::string bad =
        common::check_launch_args(k.name.c_str(), k.params, k.param_count, args, num_args, kArgLimits);
    if (!bad.empty()) return fail(AXL_ERROR_INVALID_ARGUMENT, bad);
    if (axl_status s = make_current(*q.device)) return s;
    common::ArgPointers params(args, num_args);
    const CUresult r = api().cuLaunchKernel(k.fn, config->grid[0], config->grid[1], config->grid[2],
                                            config->block[0], config->block[1], config->block[2],
                                            static_cast<unsigned>(config->shared_mem_bytes), q.stream,
                                            params.data(), nullptr);
    if (r != CUDA_SUCCESS)
      return fail_cu(r, "cuLaunchKernel",
                     common::str("kernel '", k.name, "', grid ", config->grid[0], "x", config->grid[1], "x",
                                 config->grid[2], ", block ", config->block[0], "x", config->block[1], "x",
                                 config->block[2], ", ", config->shared_mem_bytes, " bytes shared memory"));
    Backend& b = backend();
    if (b.tracer.enabled())
      b.tracer.launch(q.trace_id, k.name.c_str(), config->grid, config->block, config->shared_mem_bytes,
                      common::Tracer::hash_args(args, num_args));
    return AXL_SUCCESS;
  });
}

}  // namespace axl::cuda
