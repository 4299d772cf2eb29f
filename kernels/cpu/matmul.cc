// SPDX-License-Identifier: Apache-2.0
// Host matrix multiply through OpenBLAS. Row-major operands map directly onto CBLAS
// (CblasRowMajor); a batch is a loop of GEMMs, with a batch-1 operand reused for every
// product. Reduced precisions are emulated: inputs are rounded to the narrow format
// (exactly what a GPU's matrix unit sees) and multiplied by SGEMM, which accumulates in f32.
#include "gcompute/kernels/cpu/matmul.hpp"

#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gcompute/kernels/half.hpp"

namespace gcompute::kernels::cpu {
namespace {

// alpha and beta arrive as finite doubles; a value outside f32's range saturates to +-inf
// instead of being an undefined conversion.
float to_f32_saturating(double v) {
  constexpr double kMax = std::numeric_limits<float>::max();
  if (v > kMax) return std::numeric_limits<float>::infinity();
  if (v < -kMax) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(v);
}

struct Dims {
  int m, n, k, lda, ldb, ldc;
  CBLAS_TRANSPOSE ta, tb;
  std::int64_t a_size, b_size, c_size;  // elements per matrix
};

Dims make_dims(const MatmulShape& s) {
  Dims d{};
  d.m = static_cast<int>(s.m);
  d.n = static_cast<int>(s.n);
  d.k = static_cast<int>(s.k);
  // Leading dimensions are the row lengths of the stored matrices, at least 1 (BLAS rejects 0).
  d.lda = std::max(1, s.transpose_a ? d.m : d.k);
  d.ldb = std::max(1, s.transpose_b ? d.k : d.n);
  d.ldc = std::max(1, d.n);
  d.ta = s.transpose_a ? CblasTrans : CblasNoTrans;
  d.tb = s.transpose_b ? CblasTrans : CblasNoTrans;
  d.a_size = s.m * s.k;
  d.b_size = s.k * s.n;
  d.c_size = s.m * s.n;
  return d;
}

// k == 0: the product is empty, so C = beta * C (and C is not read when beta == 0).
template <typename T>
void scale_c(T* c, std::int64_t count, T beta) {
  if (beta == T(0)) {
    std::fill(c, c + count, T(0));
  } else {
    for (std::int64_t i = 0; i < count; ++i) c[i] *= beta;
  }
}

void blas_gemm(const Dims& d, int rows, float alpha, const float* a, const float* b, float beta,
               float* c) {
  cblas_sgemm(CblasRowMajor, d.ta, d.tb, rows, d.n, d.k, alpha, a, d.lda, b, d.ldb, beta, c, d.ldc);
}

void blas_gemm(const Dims& d, int rows, double alpha, const double* a, const double* b, double beta,
               double* c) {
  cblas_dgemm(CblasRowMajor, d.ta, d.tb, rows, d.n, d.k, alpha, a, d.lda, b, d.ldb, beta, c, d.ldc);
}

// Multiply-adds of one GEMM call: about 50 ms of one core or less, so the stop token is
// polled that often. Smaller panels would cost BLAS efficiency (B is packed once per call).
constexpr std::int64_t kPanelMacs = std::int64_t{1} << 28;

// C = alpha * op(A) * op(B) + beta * C in panels of rows of C; false when `stop` fired
// between two panels (C is then partly written).
template <typename T>
bool gemm(const Dims& d, T alpha, const T* a, const T* b, T beta, T* c, StopToken stop) {
  if (d.k == 0) {
    scale_c(c, d.c_size, beta);
    return true;
  }
  const std::int64_t row_macs = std::max<std::int64_t>(1, std::int64_t{d.n} * d.k);
  const std::int64_t panel = std::clamp<std::int64_t>(kPanelMacs / row_macs, 1, d.m);
  for (std::int64_t r0 = 0; r0 < d.m; r0 += panel) {
    if (stop.stop_requested()) return false;
    const auto rows = static_cast<int>(std::min<std::int64_t>(panel, d.m - r0));
    // Row r0 of op(A) starts at row r0 of A, or at column r0 when A is transposed.
    const T* ap = a + (d.ta == CblasTrans ? r0 : r0 * d.lda);
    blas_gemm(d, rows, alpha, ap, b, beta, c + r0 * d.ldc);
  }
  return true;
}

// Native precision: one GEMM per batch entry straight on the caller's buffers.
template <typename T>
bool matmul_native(const T* a, const T* b, T* c, const MatmulShape& s, const Dims& d, T alpha,
                   T beta, StopToken stop) {
  for (std::int64_t i = 0; i < s.batch; ++i) {
    const T* ai = a + (s.a_batch == 1 ? 0 : i) * d.a_size;
    const T* bi = b + (s.b_batch == 1 ? 0 : i) * d.b_size;
    if (!gemm(d, alpha, ai, bi, beta, c + i * d.c_size, stop)) return false;
  }
  return true;
}

// Loads `count` elements of one operand into f32 scratch: rounded to the emulated
// precision for f32 operands, decoded exactly for f16/bf16 operands.
void load_f32(const void* src, std::int64_t offset, std::int64_t count, DType dtype,
              Precision precision, float* dst) {
  if (dtype == DType::kF16 || dtype == DType::kBF16) {
    const auto* h = static_cast<const std::uint16_t*>(src) + offset;
    if (dtype == DType::kF16) {
      for (std::int64_t i = 0; i < count; ++i) dst[i] = f16_bits_to_float(h[i]);
    } else {
      for (std::int64_t i = 0; i < count; ++i) dst[i] = bf16_bits_to_float(h[i]);
    }
    return;
  }
  const float* f = static_cast<const float*>(src) + offset;
  switch (precision) {
    case Precision::kTF32:
      for (std::int64_t i = 0; i < count; ++i) dst[i] = round_to_tf32(f[i]);
      break;
    case Precision::kBF16:
      for (std::int64_t i = 0; i < count; ++i) dst[i] = round_to_bf16(f[i]);
      break;
    case Precision::kF16:
      for (std::int64_t i = 0; i < count; ++i) dst[i] = round_to_f16(f[i]);
      break;
    default:
      std::memcpy(dst, f, static_cast<std::size_t>(count) * sizeof(float));
      break;
  }
}

// Emulated precision: operands go through f32 scratch (a batch-1 operand is converted
// once). f32 outputs are written in place; f16/bf16 outputs are computed in f32 scratch and
// rounded back.
bool matmul_emulated(const void* a, const void* b, void* c, const MatmulShape& s, const Dims& d,
                     Precision precision, float alpha, float beta, StopToken stop) {
  const bool narrow_out = s.dtype == DType::kF16 || s.dtype == DType::kBF16;
  std::vector<float> sa(static_cast<std::size_t>(d.a_size));
  std::vector<float> sb(static_cast<std::size_t>(d.b_size));
  std::vector<float> sc(narrow_out ? static_cast<std::size_t>(d.c_size) : 0);
  if (s.a_batch == 1) load_f32(a, 0, d.a_size, s.dtype, precision, sa.data());
  if (s.b_batch == 1) load_f32(b, 0, d.b_size, s.dtype, precision, sb.data());
  for (std::int64_t i = 0; i < s.batch; ++i) {
    if (s.a_batch != 1) load_f32(a, i * d.a_size, d.a_size, s.dtype, precision, sa.data());
    if (s.b_batch != 1) load_f32(b, i * d.b_size, d.b_size, s.dtype, precision, sb.data());
    if (!narrow_out) {
      if (!gemm(d, alpha, sa.data(), sb.data(), beta, static_cast<float*>(c) + i * d.c_size,
                stop)) {
        return false;
      }
      continue;
    }
    auto* ch = static_cast<std::uint16_t*>(c) + i * d.c_size;
    if (beta != 0.0f) load_f32(c, i * d.c_size, d.c_size, s.dtype, precision, sc.data());
    if (!gemm(d, alpha, sa.data(), sb.data(), beta, sc.data(), stop)) return false;
    if (s.dtype == DType::kF16) {
      for (std::int64_t e = 0; e < d.c_size; ++e) ch[e] = float_to_f16_bits(sc[e]);
    } else {
      for (std::int64_t e = 0; e < d.c_size; ++e) ch[e] = float_to_bf16_bits(sc[e]);
    }
  }
  return true;
}

}  // namespace

absl::Status matmul(const void* a, const void* b, void* c, const MatmulShape& shape,
                    StopToken stop) {
  if (absl::Status st = validate(shape); !st.ok()) return st;
  absl::StatusOr<Precision> precision = resolve_precision(shape.dtype, shape.precision);
  if (!precision.ok()) return precision.status();
  if (shape.batch == 0 || shape.m == 0 || shape.n == 0) return absl::OkStatus();
  constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
  if (shape.m > kIntMax || shape.n > kIntMax || shape.k > kIntMax) {
    return absl::InvalidArgumentError(absl::StrCat("matmul: dimensions m=", shape.m, " n=", shape.n,
                                                   " k=", shape.k, " exceed the BLAS limit of ",
                                                   kIntMax));
  }
  if (c == nullptr || (shape.k > 0 && (a == nullptr || b == nullptr))) {
    return absl::InvalidArgumentError("matmul: null operand buffer");
  }
  const Dims d = make_dims(shape);
  bool finished = false;
  switch (*precision) {
    case Precision::kF64:
      finished = matmul_native(static_cast<const double*>(a), static_cast<const double*>(b),
                               static_cast<double*>(c), shape, d, shape.alpha, shape.beta, stop);
      break;
    case Precision::kF32:
      finished = matmul_native(static_cast<const float*>(a), static_cast<const float*>(b),
                               static_cast<float*>(c), shape, d, to_f32_saturating(shape.alpha),
                               to_f32_saturating(shape.beta), stop);
      break;
    default:
      finished = matmul_emulated(a, b, c, shape, d, *precision, to_f32_saturating(shape.alpha),
                                 to_f32_saturating(shape.beta), stop);
      break;
  }
  if (!finished) return absl::CancelledError("matmul: cancelled between panels");
  return absl::OkStatus();
}

}  // namespace gcompute::kernels::cpu
