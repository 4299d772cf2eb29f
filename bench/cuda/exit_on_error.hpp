// SPDX-License-Identifier: Apache-2.0
// Error checks for the benchmark programs: a failed CUDA call prints where and why, then the
// program exits 1 (a benchmark has nothing to recover; the library code returns Status).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

namespace gcompute::bench {

/// Prints "file:line: call: why" and exits 1.
[[noreturn]] inline void exit_on_failure(const char* file, int line, const char* call,
                                         const char* why) {
  std::fprintf(stderr, "%s:%d: %s: %s\n", file, line, call, why);
  std::exit(1);
}

}  // namespace gcompute::bench

#define CHECK_CUDA(call)                                                                     \
  do {                                                                                       \
    if (const cudaError_t e_ = (call); e_ != cudaSuccess)                                    \
      ::gcompute::bench::exit_on_failure(__FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
  } while (0)
