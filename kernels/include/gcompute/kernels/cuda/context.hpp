// SPDX-License-Identifier: Apache-2.0
// What a CUDA kernel entry point needs from its caller (the engine's lane, or a test's
// Resources): a stream, library handles already bound to it, and events it may borrow for the
// length of one call. A non-owning view: kernels never create streams, handles or events.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusolverDn.h>

#include <array>

#include "gcompute/kernels/cuda/stream.hpp"

namespace gcompute::kernels::cuda {

/// Events a Context lends to a kernel: APSP joins its two streams and paces its cancellation
/// checks with them.
inline constexpr int kContextEvents = 5;

struct Context {
  StreamView stream{};
  cublasHandle_t cublas = nullptr;        ///< bound to `stream`; may be null for pure kernels
  cusolverDnHandle_t cusolver = nullptr;  ///< bound to `stream`; may be null
  int device = 0;
  /// Optional second stream of higher priority for a kernel's critical path (APSP runs the next
  /// round's pivot work there while the bulk of a round runs on `stream`). Kernels join it back
  /// into `stream` before returning, so callers only ever wait on `stream`. A default view
  /// means there is none.
  StreamView priority_stream{};
  /// Events on `device` (timing disabled) that a kernel may record and wait on during one call;
  /// owned by the caller, like the streams. Kernels that need them and find them null return
  /// FAILED_PRECONDITION.
  std::array<cudaEvent_t, kContextEvents> events{};
};

}  // namespace gcompute::kernels::cuda
