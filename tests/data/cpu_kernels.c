/* Kernels for the cpu backend's tests and examples, built into
 * libaxl_test_cpu_kernels.so. Each follows axl/cpu_kernel.h: called once per
 * block, looping over the block's threads itself. Element kernels stride by
 * the whole grid, so any grid size covers any n. Each declares its
 * signature, so the backend refuses a wrong argument list before the kernel
 * runs; undeclared_arg_count declares none, and the last two declare
 * malformed ones, for the tests of what the backend does then. */
#include <stdint.h>

#include "axl/cpu_kernel.h"

static uint64_t block_threads(const axl_cpu_kernel_ctx* c) {
  return (uint64_t)c->block[0] * c->block[1] * c->block[2];
}

static uint64_t grid_blocks(const axl_cpu_kernel_ctx* c) {
  return (uint64_t)c->grid[0] * c->grid[1] * c->grid[2];
}

/* x fastest, then y, then z: the same order the backend counts blocks in. */
static uint64_t linear_block(const axl_cpu_kernel_ctx* c) {
  return c->block_idx[0] +
         (uint64_t)c->grid[0] * (c->block_idx[1] + (uint64_t)c->grid[1] * c->block_idx[2]);
}

/* y[i] = alpha * x[i] + y[i] for i < n. */
AXL_CPU_KERNEL void saxpy(const axl_cpu_kernel_ctx* c, void* const* a) {
  const float alpha = *(const float*)a[0];
  const float* x = *(const float* const*)a[1];
  float* y = *(float* const*)a[2];
  const uint32_t n = *(const uint32_t*)a[3];
  const uint64_t threads = block_threads(c);
  const uint64_t stride = threads * grid_blocks(c);
  for (uint64_t base = linear_block(c) * threads; base < n; base += stride) {
    const uint64_t end = base + threads < n ? base + threads : n;
    for (uint64_t i = base; i < end; ++i) y[i] = alpha * x[i] + y[i];
  }
}
AXL_CPU_KERNEL_SIGNATURE(saxpy, AXL_CPU_SCALAR(float), AXL_CPU_BUFFER, AXL_CPU_BUFFER, AXL_CPU_SCALAR(uint32_t));

/* c[i] = a[i] + b[i] for i < n. */
AXL_CPU_KERNEL void vector_add_f32(const axl_cpu_kernel_ctx* c, void* const* a) {
  const float* x = *(const float* const*)a[0];
  const float* y = *(const float* const*)a[1];
  float* out = *(float* const*)a[2];
  const uint32_t n = *(const uint32_t*)a[3];
  const uint64_t threads = block_threads(c);
  const uint64_t stride = threads * grid_blocks(c);
  for (uint64_t base = linear_block(c) * threads; base < n; base += stride) {
    const uint64_t end = base + threads < n ? base + threads : n;
    for (uint64_t i = base; i < end; ++i) out[i] = x[i] + y[i];
  }
}
AXL_CPU_KERNEL_SIGNATURE(vector_add_f32, AXL_CPU_BUFFER, AXL_CPU_BUFFER, AXL_CPU_BUFFER, AXL_CPU_SCALAR(uint32_t));

/* data[i] += 1 for i < n. */
AXL_CPU_KERNEL void increment_u32(const axl_cpu_kernel_ctx* c, void* const* a) {
  uint32_t* data = *(uint32_t* const*)a[0];
  const uint32_t n = *(const uint32_t*)a[1];
  const uint64_t threads = block_threads(c);
  const uint64_t stride = threads * grid_blocks(c);
  for (uint64_t base = linear_block(c) * threads; base < n; base += stride) {
    const uint64_t end = base + threads < n ? base + threads : n;
    for (uint64_t i = base; i < end; ++i) data[i] += 1;
  }
}
AXL_CPU_KERNEL_SIGNATURE(increment_u32, AXL_CPU_BUFFER, AXL_CPU_SCALAR(uint32_t));

/* out[b] = b for the linear id b of every block: shows that each block ran
 * and saw its own coordinates. */
AXL_CPU_KERNEL void write_block_index(const axl_cpu_kernel_ctx* c, void* const* a) {
  uint32_t* out = *(uint32_t* const*)a[0];
  const uint64_t b = linear_block(c);
  out[b] = (uint32_t)b;
}
AXL_CPU_KERNEL_SIGNATURE(write_block_index, AXL_CPU_BUFFER);

/* counts[b] += 1 for the linear id b of every block: each block owns its
 * slot, so after one launch every count is exactly 1 unless a block ran
 * twice or not at all. */
AXL_CPU_KERNEL void count_block_runs(const axl_cpu_kernel_ctx* c, void* const* a) {
  uint32_t* counts = *(uint32_t* const*)a[0];
  counts[linear_block(c)] += 1;
}
AXL_CPU_KERNEL_SIGNATURE(count_block_runs, AXL_CPU_BUFFER);

/* Per block: thread t stores (block id + t) into shared memory, then the
 * block reduces it: out[b] = sum over t of (b + t). Writes 0xFFFFFFFF when
 * the scratch is missing, too small or not 64-byte aligned. */
AXL_CPU_KERNEL void use_shared(const axl_cpu_kernel_ctx* c, void* const* a) {
  uint32_t* out = *(uint32_t* const*)a[0];
  const uint64_t b = linear_block(c);
  const uint64_t threads = block_threads(c);
  uint32_t* shared = (uint32_t*)c->shared_mem;
  if (shared == 0 || ((uintptr_t)shared % 64) != 0 ||
      c->shared_mem_bytes < threads * sizeof(uint32_t)) {
    out[b] = 0xFFFFFFFFu;
    return;
  }
  for (uint64_t t = 0; t < threads; ++t) shared[t] = (uint32_t)(b + t);
  uint32_t sum = 0;
  for (uint64_t t = 0; t < threads; ++t) sum += shared[t];
  out[b] = sum;
}
AXL_CPU_KERNEL_SIGNATURE(use_shared, AXL_CPU_BUFFER);

/* Writes the bytes of its scalar arguments, in order, to out (a[0]): a 1-,
 * 2-, 4-, 8-, 12- and 16-byte value, 43 bytes in all, so a test can check
 * that a launch copies every width of value exactly. Block 0 only. */
AXL_CPU_KERNEL void echo_scalars(const axl_cpu_kernel_ctx* c, void* const* a) {
  static const uint32_t sizes[6] = {1, 2, 4, 8, 12, 16};
  unsigned char* out = *(unsigned char* const*)a[0];
  if (linear_block(c) != 0) return;
  for (int i = 0; i < 6; ++i) {
    const unsigned char* v = (const unsigned char*)a[1 + i];
    for (uint32_t b = 0; b < sizes[i]; ++b) *out++ = v[b];
  }
}
AXL_CPU_KERNEL_SIGNATURE(echo_scalars, AXL_CPU_BUFFER, AXL_CPU_SCALAR(uint8_t), AXL_CPU_SCALAR(uint16_t), AXL_CPU_SCALAR(uint32_t),
                         AXL_CPU_SCALAR(uint64_t), AXL_CPU_SCALAR_BYTES(12), AXL_CPU_SCALAR_BYTES(16));

/* out[0] = the number of arguments the launch passed. It declares no
 * signature, so the backend checks no list against it: any count reaches it. */
AXL_CPU_KERNEL void undeclared_arg_count(const axl_cpu_kernel_ctx* c, void* const* a) {
  if (c->num_args < 1 || linear_block(c) != 0) return;
  **(uint32_t* const*)a[0] = c->num_args;
}

/* out[0] (a[0]) = the sum of the first word of each later argument, a
 * buffer, and out[1] = the number of arguments. No signature: any count of
 * buffers reaches it, so a test can check that each buffer argument (a
 * view's too) arrives as its own address, past the counts an enqueue keeps
 * on the stack. Block 0 only. */
AXL_CPU_KERNEL void sum_first_words(const axl_cpu_kernel_ctx* c, void* const* a) {
  if (c->num_args < 1 || linear_block(c) != 0) return;
  uint32_t* out = *(uint32_t* const*)a[0];
  uint32_t sum = 0;
  for (uint32_t i = 1; i < c->num_args; ++i) sum += **(const uint32_t* const*)a[i];
  out[0] = sum;
  out[1] = c->num_args;
}

/* Two kernels whose signatures are malformed, written by hand as a module
 * without the macros might: a scalar of 0 bytes, and a struct_size from
 * before the struct had its fields. Looking either up is an error. */
AXL_CPU_KERNEL void zero_byte_scalar(const axl_cpu_kernel_ctx* c, void* const* a) {
  (void)c;
  (void)a;
}
static const axl_cpu_kernel_param zero_byte_params[] = {AXL_CPU_BUFFER, AXL_CPU_SCALAR_BYTES(0)};
AXL_CPU_KERNEL const axl_cpu_kernel_signature zero_byte_scalar_axl_signature = {
    sizeof(axl_cpu_kernel_signature), 2, zero_byte_params};

AXL_CPU_KERNEL void short_signature(const axl_cpu_kernel_ctx* c, void* const* a) {
  (void)c;
  (void)a;
}
AXL_CPU_KERNEL const axl_cpu_kernel_signature short_signature_axl_signature = {4, 0, 0};

/* Takes nothing (AXL_CPU_KERNEL_NO_PARAMS): any argument is refused. */
AXL_CPU_KERNEL void no_params(const axl_cpu_kernel_ctx* c, void* const* a) {
  (void)c;
  (void)a;
}
AXL_CPU_KERNEL_NO_PARAMS(no_params);
