/* The CTS's module for backends of api "cpu" (cases_module.cpp): the one
 * kernel every CTS module has.
 *
 * axl_cts_increment_u32(axl_devaddr data, uint32_t n): data[i] += 1 for
 * i < n, whatever the grid (AXL_TEST_KERNEL_INCREMENT_U32's contract): each
 * block strides over the elements by the whole grid's thread count.
 */
#include <axl/cpu_kernel.h>

AXL_CPU_KERNEL void axl_cts_increment_u32(const axl_cpu_kernel_ctx* ctx, void* const* args) {
  if (ctx->num_args != 2) return; /* a wrong argument list would read past args */
  uint32_t* data = *(uint32_t* const*)args[0];
  const uint32_t n = *(const uint32_t*)args[1];
  const uint64_t threads_per_block = (uint64_t)ctx->block[0] * ctx->block[1] * ctx->block[2];
  const uint64_t blocks = (uint64_t)ctx->grid[0] * ctx->grid[1] * ctx->grid[2];
  const uint64_t block = ((uint64_t)ctx->block_idx[2] * ctx->grid[1] + ctx->block_idx[1]) * ctx->grid[0] +
                         ctx->block_idx[0];
  const uint64_t stride = threads_per_block * blocks;
  for (uint64_t first = block * threads_per_block; first < n; first += stride) {
    uint64_t end = first + threads_per_block;
    if (end > n) end = n;
    for (uint64_t i = first; i < end; ++i) data[i] += 1;
  }
}
