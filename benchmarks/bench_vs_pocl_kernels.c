/* The cpu backend's side of bench_vs_pocl: the same two kernels as the
 * OpenCL C program in bench_vs_pocl.cpp, as a cpu kernel module
 * (axl/cpu_kernel.h), built -O3 -march=native by benchmarks/CMakeLists.txt:
 * PoCL compiles its kernels for the CPU it runs on, and the same loop built
 * for the baseline x86-64 ISA (SSE2) is ~1.25x slower per CPU-second.
 *
 * The cpu backend calls a kernel once per block; each call loops over its
 * block's threads, one element per thread, so the loop is what the
 * compiler vectorises (PoCL vectorises across a work-group the same way).
 */
#include <axl/cpu_kernel.h>

AXL_CPU_KERNEL void axl_bench_empty(const axl_cpu_kernel_ctx* ctx, void* const* args) {
  (void)ctx;
  (void)args;
}

/* y[i] = a * x[i] + y[i] for i < n; arguments (float a, x, y, uint32_t n). */
AXL_CPU_KERNEL void axl_bench_saxpy(const axl_cpu_kernel_ctx* ctx, void* const* args) {
  if (ctx->num_args != 4) return; /* a wrong argument list would read past args */
  const float a = *(const float*)args[0];
  const float* restrict x = *(const float* const*)args[1];
  float* restrict y = *(float* const*)args[2];
  const uint64_t n = *(const uint32_t*)args[3];
  const uint64_t begin = (uint64_t)ctx->block_idx[0] * ctx->block[0];
  uint64_t end = begin + ctx->block[0];
  if (end > n) end = n;
  for (uint64_t i = begin; i < end; ++i) y[i] = a * x[i] + y[i];
}
