// The HIP C++ source of plugin.h's test kernels (AXL_TEST_KERNEL_*), compiled
// by hiprtc for each device's gfx target (module.cpp); the same contracts as
// the cuda backend's PTX (plugins/cuda/src/test_kernels.ptx). Embedded as a
// string by plugins/hip/CMakeLists.txt; tests/hip/test_kernels_host_test.cpp
// compiles this very file as host C++ to check its thread numbering.
//
//   axl_test_increment_u32(uint32_t* data, uint32_t n): data[i] += 1
//   axl_test_fill_u32(uint32_t* data, uint32_t n, uint32_t value): data[i] = value
//
// Threads are numbered as plugin.h does, over the whole 3-D grid and block
// (the cpu backend's for_each_element); the loops stride over the total
// thread count, in 64 bits: a grid can hold more than 2^32 threads, and a
// 32-bit index plus the stride could wrap below n.

// This thread's linear index over the grid.
static __device__ unsigned long long axl_first() {
  const unsigned long long threads = (unsigned long long)blockDim.x * blockDim.y * blockDim.z;
  const unsigned long long block =
      blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
  const unsigned long long thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  return block * threads + thread;
}

// The grid's thread count.
static __device__ unsigned long long axl_stride() {
  return (unsigned long long)blockDim.x * blockDim.y * blockDim.z * gridDim.x * gridDim.y * gridDim.z;
}

extern "C" __global__ void axl_test_increment_u32(unsigned int* data, unsigned int n) {
  for (unsigned long long i = axl_first(); i < n; i += axl_stride()) data[i] += 1u;
}

extern "C" __global__ void axl_test_fill_u32(unsigned int* data, unsigned int n, unsigned int value) {
  for (unsigned long long i = axl_first(); i < n; i += axl_stride()) data[i] = value;
}
