// The machine's limit for bench_vs_pocl's saxpy: the same loop as the
// kernels, parallelised with OpenMP over every core, compiled with the
// kernels' flags (-O3 -march=native, benchmarks/CMakeLists.txt). Its own file so that only it needs -fopenmp.
#include "saxpy_openmp.hpp"

namespace axl_bench {

void saxpy_openmp(float a, const float* __restrict x, float* __restrict y, uint64_t n) {
#pragma omp parallel for simd schedule(static)
  for (uint64_t i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
}

}  // namespace axl_bench
