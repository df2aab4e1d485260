/* axl/cpu_kernel.h: the one C signature of a kernel in a CPU-backend module.
 *
 * A CPU module is an ELF shared object; each kernel is an exported C function
 * of type axl_cpu_kernel_fn. The cpu backend calls it once per block of the
 * grid, spreading blocks over a thread pool sized to the machine; the kernel
 * loops over the threads of its block itself (block[0] * block[1] * block[2]
 * of them). Blocks may run concurrently and in any order, as on a GPU.
 *
 * Example (saxpy over n floats, one element per thread):
 *
 *   AXL_CPU_KERNEL void saxpy(const axl_cpu_kernel_ctx* c, void* const* a) {
 *     float alpha = *(const float*)a[0];
 *     const float* x = *(const float* const*)a[1];
 *     float* y = *(float* const*)a[2];
 *     if (c->num_args != 4) return;  // wrong argument list: do nothing
 *     uint32_t n = *(const uint32_t*)a[3];
 *     uint64_t base = (uint64_t)c->block_idx[0] * c->block[0];
 *     for (uint32_t t = 0; t < c->block[0]; ++t)
 *       if (base + t < n) y[base + t] = alpha * x[base + t] + y[base + t];
 *   }
 */
#ifndef AXL_CPU_KERNEL_H_
#define AXL_CPU_KERNEL_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct axl_cpu_kernel_ctx {
  size_t struct_size;        /* sizeof(axl_cpu_kernel_ctx) */
  uint32_t grid[3];          /* grid size in blocks (x, y, z) */
  uint32_t block[3];         /* block size in threads (x, y, z) */
  uint32_t block_idx[3];     /* this block's index in the grid (x, y, z) */
  uint32_t num_args;         /* entries in args: what the launch passed, so a
                                kernel can refuse a wrong argument list
                                instead of reading past it */
  void* shared_mem;          /* shared_mem_bytes of scratch private to this
                                block, 64-byte aligned; NULL when 0 bytes */
  uint64_t shared_mem_bytes; /* bytes at shared_mem */
} axl_cpu_kernel_ctx;

/* args[i] points at the i-th launch argument's value: for a buffer, at its
 * device address (on the cpu backend, the host pointer); for a scalar, at its
 * bytes. Valid for the duration of the call. */
typedef void (*axl_cpu_kernel_fn)(const axl_cpu_kernel_ctx* ctx,
                                  void* const* args);

#if defined(__GNUC__)
#define AXL_CPU_KERNEL_VISIBILITY __attribute__((visibility("default")))
#else
#define AXL_CPU_KERNEL_VISIBILITY
#endif

#ifdef __cplusplus
#define AXL_CPU_KERNEL extern "C" AXL_CPU_KERNEL_VISIBILITY
#else
#define AXL_CPU_KERNEL AXL_CPU_KERNEL_VISIBILITY
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* AXL_CPU_KERNEL_H_ */
