// SPDX-License-Identifier: Apache-2.0
// cuda::matmul through cublasGemmStridedBatchedEx_64 (64-bit sizes and batch count).
// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the operands are passed
// swapped, each with its own leading dimension, and nothing is transposed in memory.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "detail/stop_pacer.hpp"
#include "gcompute/kernels/cuda/check.hpp"
#include "gcompute/kernels/cuda/matmul.hpp"

namespace gcompute::kernels::cuda {
namespace {

struct GemmTypes {
  cudaDataType_t data;
  cublasComputeType_t compute;
  bool double_scalars;  ///< alpha and beta are double for CUBLAS_COMPUTE_64F, float otherwise
};

/// Storage and compute types for a resolved precision (resolve_precision has ruled out other
/// pairs). f32 operands rounded to bf16 or f16 stay f32 in memory: cuBLAS rounds them as it
/// computes.
GemmTypes gemm_types(DType dtype, Precision p) {
  const bool f32_operands = dtype == DType::kF32;
  switch (p) {
    case Precision::kF64:
      return {CUDA_R_64F, CUBLAS_COMPUTE_64F, true};
    case Precision::kTF32:
      return {CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, false};
    case Precision::kBF16:
      return f32_operands ? GemmTypes{CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16BF, false}
                          : GemmTypes{CUDA_R_16BF, CUBLAS_COMPUTE_32F, false};
    case Precision::kF16:
      return f32_operands ? GemmTypes{CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16F, false}
                          : GemmTypes{CUDA_R_16F, CUBLAS_COMPUTE_32F, false};
    default:
      return {CUDA_R_32F, CUBLAS_COMPUTE_32F, false};
  }
}

// C = beta * C for k == 0 (an empty sum), where cuBLAS is not called. Computed in f32 for
// the 16-bit types, as cuBLAS's epilogue would.
template <typename T, typename S>
__global__ void scale_kernel(T* c, std::int64_t n, S beta) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    if constexpr (std::is_same_v<T, __half>) {
      c[i] = __float2half_rn(beta * __half2float(c[i]));
    } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      c[i] = __float2bfloat16_rn(beta * __bfloat162float(c[i]));
    } else {
      c[i] = beta * c[i];
    }
  }
}

template <typename T, typename S>
absl::Status scale(cudaStream_t stream, void* c, std::int64_t n, S beta) {
  constexpr int kThreads = 256;
  const std::int64_t blocks = (n + kThreads - 1) / kThreads;
  const unsigned int grid = static_cast<unsigned int>(blocks < 65536 ? blocks : 65536);
  scale_kernel<T, S><<<grid, kThreads, 0, stream>>>(static_cast<T*>(c), n, beta);
  GC_CUDA_CHECK_LAUNCH("scale_kernel");
  return absl::OkStatus();
}

absl::Status scale_c(const Context& ctx, void* c, std::int64_t n, const MatmulShape& s) {
  if (s.beta == 0.0) {  // C is not read: NaNs in it must not survive
    GC_CUDA_TRY(
        cudaMemsetAsync(c, 0, static_cast<std::size_t>(n) * dtype_size(s.dtype), ctx.stream));
    return absl::OkStatus();
  }
  if (s.beta == 1.0) return absl::OkStatus();
  const float fb = static_cast<float>(s.beta);
  switch (s.dtype) {
    case DType::kF32:
      return scale<float>(ctx.stream, c, n, fb);
    case DType::kF64:
      return scale<double>(ctx.stream, c, n, s.beta);
    case DType::kF16:
      return scale<__half>(ctx.stream, c, n, fb);
    case DType::kBF16:
      return scale<__nv_bfloat16>(ctx.stream, c, n, fb);
    case DType::kI32:
      break;
  }
  return absl::InternalError("matmul: unreachable dtype");
}

}  // namespace

absl::Status matmul(const Context& ctx, const void* a, const void* b, void* c, const MatmulShape& s,
                    StopToken stop, double panel_multiply_adds) {
  if (absl::Status st = validate(s); !st.ok()) return st;
  if (s.batch == 0 || s.m == 0 || s.n == 0) return absl::OkStatus();
  std::int64_t c_elements = 0;
  if (__builtin_mul_overflow(s.m, s.n, &c_elements) ||
      __builtin_mul_overflow(c_elements, s.batch, &c_elements)) {
    return absl::InvalidArgumentError(
        absl::StrCat("matmul: C of ", s.batch, "x", s.m, "x", s.n, " overflows 64-bit sizes"));
  }
  if (c == nullptr) return absl::InvalidArgumentError("matmul: null device pointer for C");
  if (s.k == 0) return scale_c(ctx, c, c_elements, s);
  if (a == nullptr || b == nullptr) {
    return absl::InvalidArgumentError("matmul: null device pointer for A or B");
  }
  if (ctx.cublas == nullptr) return absl::FailedPreconditionError("matmul: no cuBLAS handle");

  const Precision precision = *resolve_precision(s.dtype, s.precision);
  const GemmTypes t = gemm_types(s.dtype, precision);
  // The handle is the lane's: bind it to this stream and to host scalars, and keep the
  // default math mode so that CUBLAS_COMPUTE_32F never silently becomes TF32.
  GC_CUBLAS_TRY(cublasSetStream(ctx.cublas, ctx.stream));
  GC_CUBLAS_TRY(cublasSetPointerMode(ctx.cublas, CUBLAS_POINTER_MODE_HOST));
  GC_CUBLAS_TRY(cublasSetMathMode(ctx.cublas, CUBLAS_DEFAULT_MATH));

  // Column-major view: C^T (n x m, ldc = n) = op(B)^T (n x k) * op(A)^T (k x m).
  // Row-major B (k x n) is column-major n x k with ld n: no transpose; a transposed B is
  // stored n x k row-major, i.e. column-major k x n with ld k: CUBLAS_OP_T. Likewise for A.
  const cublasOperation_t op_b = s.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = s.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const std::int64_t ldb = s.transpose_b ? s.k : s.n;
  const std::int64_t lda = s.transpose_a ? s.m : s.k;
  const long long stride_a = s.a_batch == 1 ? 0 : s.m * s.k;
  const long long stride_b = s.b_batch == 1 ? 0 : s.k * s.n;
  const long long stride_c = s.m * s.n;

  const double alpha_d = s.alpha;
  const double beta_d = s.beta;
  const float alpha_f = static_cast<float>(s.alpha);
  const float beta_f = static_cast<float>(s.beta);
  const void* alpha = t.double_scalars ? static_cast<const void*>(&alpha_d) : &alpha_f;
  const void* beta = t.double_scalars ? static_cast<const void*>(&beta_d) : &beta_f;

  // One call for C[batch0, batch0 + count) rows [row0, row0 + rows). A band of op(A)'s rows
  // starts at row row0 of A, or at its column row0 when A is stored transposed.
  const std::size_t e = dtype_size(s.dtype);
  const auto gemm = [&](std::int64_t batch0, std::int64_t count, std::int64_t row0,
                        std::int64_t rows) -> absl::Status {
    const char* pa =
        static_cast<const char*>(a) + (batch0 * stride_a + (s.transpose_a ? row0 : row0 * s.k)) * e;
    const char* pb = static_cast<const char*>(b) + batch0 * stride_b * e;
    char* pc = static_cast<char*>(c) + (batch0 * stride_c + row0 * s.n) * e;
    GC_CUBLAS_TRY(cublasGemmStridedBatchedEx_64(
        ctx.cublas, op_b, op_a, s.n, rows, s.k, alpha, pb, t.data, ldb, stride_b, pa, t.data, lda,
        stride_a, beta, pc, t.data, s.n, stride_c, count, t.compute, CUBLAS_GEMM_DEFAULT));
    return absl::OkStatus();
  };

  const double per_matrix = static_cast<double>(s.m) * static_cast<double>(s.n) * s.k;
  const bool tensor_cores = t.data == CUDA_R_16F || t.data == CUDA_R_16BF ||
                            (t.compute != CUBLAS_COMPUTE_64F && t.compute != CUBLAS_COMPUTE_32F);
  const double panel = panel_multiply_adds > 0
                           ? panel_multiply_adds
                           : kMatmulPanelMultiplyAdds * (tensor_cores ? 8.0 : 1.0);
  if (per_matrix * static_cast<double>(s.batch) <= 2 * panel) return gemm(0, s.batch, 0, s.m);

  detail::StopPacer pacer(ctx.stream, ctx.events[3], 1, stop);
  const auto cancelled = [&](std::int64_t done, std::int64_t of, const char* what) {
    return absl::CancelledError(
        absl::StrCat("matmul: cancelled after ", done, " of ", of, " ", what));
  };
  if (per_matrix <= panel) {  // whole matrices, several per call
    const std::int64_t group =
        std::max<std::int64_t>(1, static_cast<std::int64_t>(panel / per_matrix));
    for (std::int64_t b0 = 0; b0 < s.batch; b0 += group) {
      const std::int64_t count = std::min(group, s.batch - b0);
      if (absl::Status st = gemm(b0, count, 0, s.m); !st.ok()) return st;
      const absl::StatusOr<bool> stopping = pacer.stop_after_step();
      if (!stopping.ok()) return stopping.status();
      if (*stopping) return cancelled(b0 + count, s.batch, "matrices");
    }
    return absl::OkStatus();
  }
  // Bands of C's rows, a multiple of 128 (cuBLAS's tiles) wherever the matrix allows.
  const double per_row = static_cast<double>(s.n) * s.k;
  std::int64_t band =
      std::max<std::int64_t>(128, static_cast<std::int64_t>(panel / per_row) / 128 * 128);
  band = std::min(band, s.m);
  const std::int64_t bands = (s.m + band - 1) / band;
  for (std::int64_t bi = 0; bi < s.batch; ++bi) {
    for (std::int64_t r0 = 0; r0 < s.m; r0 += band) {
      if (absl::Status st = gemm(bi, 1, r0, std::min(band, s.m - r0)); !st.ok()) return st;
      const absl::StatusOr<bool> stopping = pacer.stop_after_step();
      if (!stopping.ok()) return stopping.status();
      if (*stopping) return cancelled(bi * bands + r0 / band + 1, s.batch * bands, "row bands");
    }
  }
  return absl::OkStatus();
}

}  // namespace gcompute::kernels::cuda
