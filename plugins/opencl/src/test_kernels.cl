// The OpenCL C source of plugin.h's test kernels (AXL_TEST_KERNEL_*), built
// for each device at first use (module.cpp); the same contracts as the cuda
// backend's PTX and the hip backend's test_kernels.hip. Embedded as a string
// by plugins/opencl/CMakeLists.txt.
//
//   axl_test_increment_u32(global uint* data, uint n): data[i] += 1
//   axl_test_fill_u32(global uint* data, uint n, uint value): data[i] = value
//
// Threads are numbered as plugin.h does, over the whole 3-D grid and block:
// block (work-group) index x fastest, then y, then z, and within a block
// thread x fastest. queue_launch makes global = grid x block and local =
// block in each dimension, so get_group_id is the block index and
// get_local_id the thread index. The loops stride over the total thread
// count in 64 bits, as the other backends' do.

// This thread's linear index over the grid.
static ulong axl_first(void) {
  const ulong threads = (ulong)get_local_size(0) * get_local_size(1) * get_local_size(2);
  const ulong block =
      get_group_id(0) + (ulong)get_num_groups(0) * (get_group_id(1) + (ulong)get_num_groups(1) * get_group_id(2));
  const ulong thread = get_local_id(0) + (ulong)get_local_size(0) * (get_local_id(1) + (ulong)get_local_size(1) * get_local_id(2));
  return block * threads + thread;
}

// The grid's thread count.
static ulong axl_stride(void) {
  return (ulong)get_global_size(0) * get_global_size(1) * get_global_size(2);
}

__kernel void axl_test_increment_u32(__global uint* data, uint n) {
  for (ulong i = axl_first(); i < n; i += axl_stride()) data[i] += 1u;
}

__kernel void axl_test_fill_u32(__global uint* data, uint n, uint value) {
  for (ulong i = axl_first(); i < n; i += axl_stride()) data[i] = value;
}
