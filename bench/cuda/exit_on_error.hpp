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

/// A cuBLAS or cuSOLVER status (0 is success); any other prints "status N" and exits 1.
inline void exit_on_library_failure(int status, const char* file, int line, const char* call) {
  if (status == 0) return;
  char why[32];
  std::snprintf(why, sizeof(why), "status %d", status);
  exit_on_failure(file, line, call, why);
}

}  // namespace gcompute::bench

#define CHECK_CUDA(call)                                                                     \
  do {                                                                                       \
    if (const cudaError_t e_ = (call); e_ != cudaSuccess)                                    \
      ::gcompute::bench::exit_on_failure(__FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
  } while (0)

/// For cuBLAS and cuSOLVER calls (their status enums, 0 = success).
#define CHECK_LIBRARY(call) \
  ::gcompute::bench::exit_on_library_failure(static_cast<int>(call), __FILE__, __LINE__, #call)
