/* The quickstart's CPU kernel module: y = alpha * x + y over n floats.
 *
 * Launch arguments, in order: float alpha, buffer x, buffer y, uint32_t n.
 * One element per thread on a 1-D grid: the caller picks block[0] and sets
 * grid[0] = ceil(n / block[0]); threads past n do nothing, as on a GPU.
 */
#include <axl/cpu_kernel.h>

AXL_CPU_KERNEL void saxpy(const axl_cpu_kernel_ctx* ctx, void* const* args) {
  /* The signature below makes the backend refuse a wrong argument list;
   * this guard is for a cpu backend from before signatures (axl 1.0.0). */
  if (ctx->num_args != 4) return;
  const float alpha = *(const float*)args[0];
  const float* x = *(const float* const*)args[1];
  float* y = *(float* const*)args[2];
  const uint32_t n = *(const uint32_t*)args[3];
  /* 64-bit so a grid close to 2^32 elements cannot wrap around. */
  const uint64_t first = (uint64_t)ctx->block_idx[0] * ctx->block[0];
  uint64_t end = first + ctx->block[0];
  if (end > n) end = n;
  for (uint64_t i = first; i < end; ++i) y[i] = alpha * x[i] + y[i];
}

/* The argument list, checked by the backend before every launch: a wrong
 * one is refused (ValueError in Python) instead of reaching the reads above,
 * which would go past `args`. */
AXL_CPU_KERNEL_SIGNATURE(saxpy, AXL_CPU_SCALAR(float), AXL_CPU_BUFFER, AXL_CPU_BUFFER,
                         AXL_CPU_SCALAR(uint32_t));
