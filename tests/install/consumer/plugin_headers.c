/* Compiled, never run: axl::plugin_api alone gives a backend or kernel
 * author plugin.h, status.h and cpu_kernel.h. */
#include <axl/cpu_kernel.h>
#include <axl/plugin.h>
#include <axl/status.h>

AXL_CPU_KERNEL void consumer_noop_kernel(const axl_cpu_kernel_ctx* ctx, void* const* args) {
  (void)ctx;
  (void)args;
}
AXL_CPU_KERNEL_NO_PARAMS(consumer_noop_kernel);

AXL_CPU_KERNEL void consumer_scale_kernel(const axl_cpu_kernel_ctx* ctx, void* const* args) {
  (void)ctx;
  (void)args;
}
AXL_CPU_KERNEL_SIGNATURE(consumer_scale_kernel, AXL_CPU_BUFFER, AXL_CPU_SCALAR(float),
                         AXL_CPU_SCALAR_BYTES(12));
