// SPDX-License-Identifier: Apache-2.0
// What a CUDA kernel entry point needs from its caller (the engine's lane): a stream and,
// for operations built on the libraries, handles already bound to that stream.
// Kernels never create streams or handles themselves.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusolverDn.h>

namespace gcompute::kernels::cuda {

struct Context {
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;        ///< bound to `stream`; may be null for pure kernels
  cusolverDnHandle_t cusolver = nullptr;  ///< bound to `stream`; may be null
  int device = 0;
  /// Optional second stream of higher priority for a kernel's critical path (APSP runs the next
  /// round's pivot work there while the bulk of a round runs on `stream`). Kernels join it back
  /// into `stream` before returning, so callers only ever wait on `stream`. May be null.
  cudaStream_t priority_stream = nullptr;
};

}  // namespace gcompute::kernels::cuda
