// SPDX-License-Identifier: Apache-2.0
// Small helpers the CUDA drivers share: grid sizes for grid-stride loops and the library type
// tags of an element type.
#pragma once

#include <cublas_api.h>
#include <library_types.h>

#include <algorithm>
#include <cstdint>

namespace gcompute::kernels::cuda::detail {

/// Blocks of `threads` for `work` items of a grid-stride loop: enough for one item a thread,
/// at least 1 and at most 2^20 (the loop covers the rest).
inline unsigned grid_1d(std::int64_t work, int threads) {
  const std::int64_t g = (work + threads - 1) / threads;
  return static_cast<unsigned>(std::clamp<std::int64_t>(g, 1, 1 << 20));
}

/// CUDA_R_32F or CUDA_R_64F for float or double.
template <typename T>
constexpr cudaDataType_t cuda_type() {
  return sizeof(T) == 4 ? CUDA_R_32F : CUDA_R_64F;
}

/// The cuBLAS compute type of exactly the element precision, whatever math mode the handle was
/// given (PEDANTIC: no TF32).
template <typename T>
constexpr cublasComputeType_t pedantic_compute_type() {
  return sizeof(T) == 4 ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_64F_PEDANTIC;
}

}  // namespace gcompute::kernels::cuda::detail
