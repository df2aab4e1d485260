// The hip backend's test kernels (plugins/hip/src/test_kernels.hip, what
// hiprtc compiles on a device) run here as host C++: a shim defines HIP's
// built-in index variables and qualifiers, and a launch loops over every
// thread of the 3-D grid and block, one after another (the kernels have no
// barriers, so that is a valid schedule). Checks plugin.h's numbering over
// the whole grid: every element below n written exactly once, none past it.
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

namespace {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};
Dim3 threadIdx, blockIdx, blockDim, gridDim;

}  // namespace

#define __global__
#define __device__
#include "test_kernels.hip"
#undef __global__
#undef __device__

namespace {

template <class Kernel, class... Args>
void launch(Kernel k, Dim3 grid, Dim3 block, Args... args) {
  gridDim = grid;
  blockDim = block;
  for (blockIdx.z = 0; blockIdx.z < grid.z; ++blockIdx.z)
    for (blockIdx.y = 0; blockIdx.y < grid.y; ++blockIdx.y)
      for (blockIdx.x = 0; blockIdx.x < grid.x; ++blockIdx.x)
        for (threadIdx.z = 0; threadIdx.z < block.z; ++threadIdx.z)
          for (threadIdx.y = 0; threadIdx.y < block.y; ++threadIdx.y)
            for (threadIdx.x = 0; threadIdx.x < block.x; ++threadIdx.x) k(args...);
}

struct Shape {
  Dim3 grid, block;
  unsigned n;
};

// The CTS's shapes (cts.kernel.test_kernel_grids) and a few more: y and z
// only, fewer threads than elements, more threads than elements.
const Shape kShapes[] = {
    {{1, 1, 1}, {1, 1, 1}, 1},      {{4, 1, 1}, {64, 1, 1}, 256}, {{3, 1, 1}, {100, 1, 1}, 257},
    {{2, 3, 2}, {4, 2, 2}, 190},    {{7, 5, 1}, {3, 1, 1}, 100},  {{1, 1, 1}, {32, 1, 1}, 1000},
    {{1, 1, 3}, {1, 2, 1}, 50},     {{1, 4, 1}, {1, 1, 4}, 16},   {{3, 2, 2}, {2, 3, 2}, 100},
    {{2, 2, 2}, {8, 8, 2}, 1000},
};

}  // namespace

TEST_CASE("the HIP test kernels cover n over a 3-D grid and block, each element once") {
  for (const Shape& s : kShapes) {
    INFO("grid (" << s.grid.x << ", " << s.grid.y << ", " << s.grid.z << ") block (" << s.block.x << ", "
                  << s.block.y << ", " << s.block.z << "), n = " << s.n);
    constexpr unsigned kSentinel = 0xDEADBEEFu;
    std::vector<unsigned> data(s.n + 16, kSentinel);
    launch(axl_test_fill_u32, s.grid, s.block, data.data(), s.n, 1000u);
    // Increment counts: an element reached by two threads would be 1002,
    // by none 1000.
    launch(axl_test_increment_u32, s.grid, s.block, data.data(), s.n);
    size_t wrong = 0;
    for (unsigned i = 0; i < s.n; ++i) wrong += data[i] != 1001u;
    CHECK(wrong == 0);
    for (unsigned i = s.n; i < s.n + 16; ++i) CHECK(data[i] == kSentinel);
  }
}
