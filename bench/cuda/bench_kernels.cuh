// SPDX-License-Identifier: Apache-2.0
// Device helpers the APSP benchmarks share: a hash for generating inputs on the GPU and an
// element-wise comparison of two results.
#pragma once

#include <cuda_runtime.h>

namespace gcompute::bench {

/// A 32-bit hash of element index `e` under `seed` (a splitmix64 finaliser).
__device__ inline unsigned hash3(unsigned long long e, unsigned seed) {
  unsigned long long x = e * 0x9E3779B97F4A7C15ull + seed;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<unsigned>(x);
}

/// *out += the number of positions where a and b differ.
__global__ inline void count_diff(const float* a, const float* b, long long count,
                                  unsigned long long* out) {
  unsigned long long local = 0;
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < count;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    local += a[e] != b[e];
  }
  if (local) atomicAdd(out, local);
}

}  // namespace gcompute::bench
