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
 *     uint32_t n = *(const uint32_t*)a[3];
 *     uint64_t base = (uint64_t)c->block_idx[0] * c->block[0];
 *     for (uint32_t t = 0; t < c->block[0]; ++t)
 *       if (base + t < n) y[base + t] = alpha * x[base + t] + y[base + t];
 *   }
 *   AXL_CPU_KERNEL_SIGNATURE(saxpy, AXL_CPU_SCALAR(float), AXL_CPU_BUFFER,
 *                            AXL_CPU_BUFFER, AXL_CPU_SCALAR(uint32_t));
 *
 * The signature is optional. With it, the backend checks every launch of
 * the kernel before queueing it (the argument count, and each argument's
 * kind and bytes), as OpenCL checks clSetKernelArg against a kernel's
 * parameters: a wrong list is AXL_ERROR_INVALID_ARGUMENT naming the
 * argument (ValueError in Python) and the kernel never runs. Without one a
 * symbol says nothing about its parameters, so nothing is checked: the
 * kernel must refuse a wrong list itself through num_args, as a CUDA kernel
 * launched with the wrong parameters reads garbage.
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

/* -- declared signatures (optional) -----------------------------------------
 *
 * A kernel `name` declares its parameters by exporting, beside it, a
 * constant axl_cpu_kernel_signature named `name` followed by
 * AXL_CPU_SIGNATURE_SUFFIX. AXL_CPU_KERNEL_SIGNATURE writes it. The backend
 * reads it once, when the kernel is first looked up (module_get_kernel),
 * and refuses a malformed one there with AXL_ERROR_INVALID_ARGUMENT. A cpu
 * backend from before signatures (axl 1.0.0) ignores the symbol and checks
 * nothing. */

#define AXL_CPU_SIGNATURE_SUFFIX "_axl_signature"

/* Parameter kinds. The values are plugin.h's AXL_ARG_DEVADDR and
 * AXL_ARG_SCALAR, so a module needs only this header. */
enum {
  AXL_CPU_PARAM_BUFFER = 0, /* a buffer: args[i] points at its 8-byte address */
  AXL_CPU_PARAM_SCALAR = 1  /* size bytes of a plain value (1 to 65536) */
};

typedef struct axl_cpu_kernel_param {
  int32_t kind;  /* AXL_CPU_PARAM_* */
  uint32_t size; /* bytes: 8 for a buffer, the value's size for a scalar */
} axl_cpu_kernel_param;

typedef struct axl_cpu_kernel_signature {
  size_t struct_size;                 /* sizeof(axl_cpu_kernel_signature) */
  uint32_t num_params;                /* entries in params (at most 4096) */
  const axl_cpu_kernel_param* params; /* NULL when num_params is 0 */
} axl_cpu_kernel_signature;

/* One parameter of AXL_CPU_KERNEL_SIGNATURE: a buffer, a scalar of a C
 * type, or a scalar of n bytes (a struct passed by value). */
#define AXL_CPU_BUFFER {AXL_CPU_PARAM_BUFFER, 8u}
#define AXL_CPU_SCALAR(type) {AXL_CPU_PARAM_SCALAR, (uint32_t)sizeof(type)}
#define AXL_CPU_SCALAR_BYTES(n) {AXL_CPU_PARAM_SCALAR, (uint32_t)(n)}

/* AXL_CPU_KERNEL_SIGNATURE(kernel, param, ...): declares `kernel`'s
 * parameters, in order, at file scope after the kernel. A kernel of no
 * parameters uses AXL_CPU_KERNEL_NO_PARAMS(kernel), since C has no empty
 * array. */
#define AXL_CPU_KERNEL_SIGNATURE(kernel, ...)                                            \
  static const axl_cpu_kernel_param kernel##_axl_params_[] = {__VA_ARGS__};             \
  typedef char kernel##_axl_use_AXL_CPU_KERNEL_NO_PARAMS_for_none_                      \
      [sizeof(kernel##_axl_params_) != 0 ? 1 : -1];                                    \
  AXL_CPU_KERNEL const axl_cpu_kernel_signature kernel##_axl_signature = {              \
      sizeof(axl_cpu_kernel_signature),                                                 \
      (uint32_t)(sizeof(kernel##_axl_params_) / sizeof(kernel##_axl_params_[0])),       \
      kernel##_axl_params_}
#define AXL_CPU_KERNEL_NO_PARAMS(kernel)                                                 \
  AXL_CPU_KERNEL const axl_cpu_kernel_signature kernel##_axl_signature = {              \
      sizeof(axl_cpu_kernel_signature), 0u, 0}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* AXL_CPU_KERNEL_H_ */
