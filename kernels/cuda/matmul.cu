// SPDX-License-Identifier: Apache-2.0
// cuda::matmul through cublasGemmStridedBatchedEx_64 (64-bit sizes and batch count).
// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the operands are passed
// swapped, each with its own leading dimension, and nothing is transposed in memory.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "gcompute/kernels/cuda/check.hpp"
#include "gcompute/kernels/cuda/matmul.hpp"

namespace gcompute::kernels::cuda {
namespace {

struct GemmTypes {
  cudaDataType_t data;
  cublasComputeType_t compute;
  bool double_scalars;  ///< alpha and beta are double for CUBLAS_COMPUTE_64F, float otherwise
};

/// Storage and compute types for a resolved precision (validate() has ruled out other pairs).
GemmTypes gemm_types(DType dtype, Precision p) {
  switch (dtype) {
    case DType::kF64:
      return {CUDA_R_64F, CUBLAS_COMPUTE_64F, true};
    case DType::kF16:
      return {CUDA_R_16F, CUBLAS_COMPUTE_32F, false};
    case DType::kBF16:
      return {CUDA_R_16BF, CUBLAS_COMPUTE_32F, false};
    default:
      break;
  }
  switch (p) {
    case Precision::kTF32:
      return {CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, false};
    case Precision::kBF16:
      return {CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16BF, false};
    case Precision::kF16:
      return {CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16F, false};
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

absl::Status matmul(const Context& ctx, const void* a, const void* b, void* c,
                    const MatmulShape& s) {
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

  GC_CUBLAS_TRY(cublasGemmStridedBatchedEx_64(
      ctx.cublas, op_b, op_a, s.n, s.m, s.k, alpha, b, t.data, ldb, stride_b, a, t.data, lda,
      stride_a, beta, c, t.data, s.n, stride_c, s.batch, t.compute, CUBLAS_GEMM_DEFAULT));
  return absl::OkStatus();
}

}  // namespace gcompute::kernels::cuda
