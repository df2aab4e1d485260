// saxpy as a plain OpenMP loop (saxpy_openmp.cpp): bench_vs_pocl's baseline
// for what this machine's cores and memory allow.
#pragma once

#include <cstdint>

namespace axl_bench {

// y[i] = a * x[i] + y[i] for i < n, on every core.
void saxpy_openmp(float a, const float* x, float* y, uint64_t n);

}  // namespace axl_bench
