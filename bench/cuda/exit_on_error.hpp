// SPDX-License-Identifier: Apache-2.0
// Error checks for the benchmark programs: a failed CUDA call prints where and why, then the
// program exits 1 (a benchmark has nothing to recover; the library code returns Status).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusolver_common.h>

#include <cstdio>
#include <cstdlib>

namespace gcompute::bench {

/// Prints "file:line: call: why" and exits 1.
[[noreturn]] inline void exit_on_failure(const char* file, int line, const char* call,
                                         const char* why) {
  std::fprintf(stderr, "%s:%d: %s: %s\n", file, line, call, why);
  std::exit(1);
}

/// A failed cuBLAS call prints the status's name and exits 1.
inline void exit_on_library_failure(cublasStatus_t status, const char* file, int line,
                                    const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  exit_on_failure(file, line, call, cublasGetStatusName(status));
}

/// A failed cuSOLVER call prints "status N" (cuSOLVER has no name lookup) and exits 1.
inline void exit_on_library_failure(cusolverStatus_t status, const char* file, int line,
                                    const char* call) {
  if (status == CUSOLVER_STATUS_SUCCESS) return;
  char why[32];
  std::snprintf(why, sizeof(why), "status %d", static_cast<int>(status));
  exit_on_failure(file, line, call, why);
}

}  // namespace gcompute::bench

#define CHECK_CUDA(call)                                                                     \
  do {                                                                                       \
    if (const cudaError_t e_ = (call); e_ != cudaSuccess)                                    \
      ::gcompute::bench::exit_on_failure(__FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
  } while (0)

/// For cuBLAS and cuSOLVER calls.
#define CHECK_LIBRARY(call) \
  ::gcompute::bench::exit_on_library_failure((call), __FILE__, __LINE__, #call)
