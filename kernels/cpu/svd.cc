// SPDX-License-Identifier: Apache-2.0
// One-sided (Hestenes) Jacobi SVD on the host.
//
// The iteration orthogonalises the columns of a working matrix W (m x n with m >= n; a wide
// matrix is factored as its transpose with U and V swapped) by plane rotations, accumulating
// the rotations in V. Once every pair of columns is orthogonal to the relative tolerance,
// sigma_j = |w_j|, u_j = w_j / sigma_j. Columns of W and V are stored contiguously (W is kept
// transposed) so that each rotation streams two contiguous vectors.
#include "gcompute/kernels/cpu/svd.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>
#include <numeric>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"

namespace gcompute::kernels::cpu {
namespace {

constexpr std::int64_t kTile = 32;

// dst (cols x rows) = transpose of src (rows x cols), both row-major, cache-blocked.
template <typename T, typename U>
void transpose_into(const T* src, U* dst, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t i0 = 0; i0 < rows; i0 += kTile) {
    const std::int64_t i1 = std::min(rows, i0 + kTile);
    for (std::int64_t j0 = 0; j0 < cols; j0 += kTile) {
      const std::int64_t j1 = std::min(cols, j0 + kTile);
      for (std::int64_t j = j0; j < j1; ++j) {
        for (std::int64_t i = i0; i < i1; ++i)
          dst[j * rows + i] = static_cast<U>(src[i * cols + j]);
      }
    }
  }
}

// The three inner products of one column pair, accumulated in double. Eight independent
// partial sums per product, in chunks of a fixed size: the compiler vectorises that at -O2
// without reassociating anything, so results stay deterministic.
constexpr int kLanes = 8;

template <typename T>
void pair_products(const T* x, const T* y, std::int64_t len, double& xx, double& yy, double& xy) {
  double a[kLanes] = {}, b[kLanes] = {}, g[kLanes] = {};
  std::int64_t i = 0;
  for (; i + kLanes <= len; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      const double xv = x[i + l], yv = y[i + l];
      a[l] += xv * xv;
      b[l] += yv * yv;
      g[l] += xv * yv;
    }
  }
  for (; i < len; ++i) {
    const double xv = x[i], yv = y[i];
    a[0] += xv * xv;
    b[0] += yv * yv;
    g[0] += xv * yv;
  }
  auto total = [](const double* v) {
    return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
  };
  xx = total(a);
  yy = total(b);
  xy = total(g);
}

template <typename T>
double norm2(const T* x, std::int64_t len) {
  double s = 0;
  for (std::int64_t i = 0; i < len; ++i) s += static_cast<double>(x[i]) * x[i];
  return s;
}

// x' = c x - s y, y' = s x + c y (x and y are different columns). Fixed-size chunks, as
// above, so that it vectorises.
template <typename T>
void rotate(T* __restrict__ x, T* __restrict__ y, std::int64_t len, T c, T s) {
  std::int64_t i = 0;
  for (; i + kLanes <= len; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      const T xv = x[i + l], yv = y[i + l];
      x[i + l] = c * xv - s * yv;
      y[i + l] = s * xv + c * yv;
    }
  }
  for (; i < len; ++i) {
    const T xv = x[i], yv = y[i];
    x[i] = c * xv - s * yv;
    y[i] = s * xv + c * yv;
  }
}

// X holds `count` vectors of length `len`, the first `r` orthonormal. Replaces vectors
// r..count-1 by an orthonormal basis of part of the orthogonal complement: with the
// Householder QR X[:, :r] = Q R, they are Q e_r, ..., Q e_{count-1}. Computed in double.
template <typename T>
void complete_basis(T* x, std::int64_t r, std::int64_t count, std::int64_t len) {
  if (r >= count) return;
  std::vector<double> h(static_cast<std::size_t>(r * len));
  std::vector<double> tau(static_cast<std::size_t>(r), 0.0);
  for (std::int64_t i = 0; i < r * len; ++i) h[i] = x[i];
  for (std::int64_t k = 0; k < r; ++k) {
    double* v = h.data() + k * len;
    double norm = 0;
    for (std::int64_t i = k; i < len; ++i) norm += v[i] * v[i];
    norm = std::sqrt(norm);
    std::fill(v, v + k, 0.0);          // the R part; the reflector acts on rows k.. only
    if (norm == 0) continue;           // tau = 0: identity
    v[k] += v[k] >= 0 ? norm : -norm;  // v = x + sign(x_k) |x| e_k, no cancellation
    double vtv = 0;
    for (std::int64_t i = k; i < len; ++i) vtv += v[i] * v[i];
    tau[k] = 2.0 / vtv;
    for (std::int64_t c = k + 1; c < r; ++c) {
      double* w = h.data() + c * len;
      double dot = 0;
      for (std::int64_t i = k; i < len; ++i) dot += v[i] * w[i];
      dot *= tau[k];
      for (std::int64_t i = k; i < len; ++i) w[i] -= dot * v[i];
    }
  }
  std::vector<double> q(static_cast<std::size_t>(len));
  for (std::int64_t j = r; j < count; ++j) {
    std::fill(q.begin(), q.end(), 0.0);
    q[j] = 1.0;
    for (std::int64_t k = r - 1; k >= 0; --k) {  // Q e_j = H_0 (H_1 (... H_{r-1} e_j))
      if (tau[k] == 0) continue;
      const double* v = h.data() + k * len;
      double dot = 0;
      for (std::int64_t i = k; i < len; ++i) dot += v[i] * q[i];
      dot *= tau[k];
      for (std::int64_t i = k; i < len; ++i) q[i] -= dot * v[i];
    }
    T* out = x + j * len;
    for (std::int64_t i = 0; i < len; ++i) out[i] = static_cast<T>(q[i]);
  }
}

struct Options {
  double tol;
  int max_sweeps;
};

template <typename T>
absl::StatusOr<SvdInfo> svd_one(const T* a, T* s_out, T* u_out, T* vt_out, const SvdShape& shape,
                                const Options& opt, StopToken stop, std::int64_t index) {
  const std::int64_t m = shape.m, n = shape.n;
  const bool wide = m < n;
  const std::int64_t len = std::max(m, n);   // length of a working column
  const std::int64_t cols = std::min(m, n);  // number of working columns (= p)

  // Non-finite input has no SVD; it would also stall the sweeps until max_sweeps.
  double max_abs = 0;
  for (std::int64_t i = 0; i < m * n; ++i) {
    const double v = std::abs(static_cast<double>(a[i]));
    if (!std::isfinite(v)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "svd: matrix ", index, " has a non-finite element at (", i / n, ", ", i % n, ")"));
    }
    max_abs = std::max(max_abs, v);
  }
  // Scale by a power of two (exact) so that max |a_ij| is in [1, 2): squared norms can then
  // neither overflow nor underflow for any representable input.
  const int exponent = max_abs > 0 ? std::ilogb(max_abs) : 0;

  std::vector<T> w(static_cast<std::size_t>(cols * len));
  if (wide) {  // W = A^T: working column j is row j of A
    std::copy(a, a + m * n, w.begin());
  } else {
    transpose_into(a, w.data(), m, n);
  }
  if (exponent != 0) {
    for (T& v : w) v = std::ldexp(v, -exponent);
  }
  std::vector<T> v;
  if (shape.compute_uv) {
    v.assign(static_cast<std::size_t>(cols * cols), T(0));
    for (std::int64_t j = 0; j < cols; ++j) v[j * cols + j] = T(1);
  }

  constexpr double kNegligible = std::numeric_limits<T>::min();  // threshold on |w_j|^2
  SvdInfo info;
  for (int sweep = 1; sweep <= opt.max_sweeps; ++sweep) {
    if (stop.stop_requested()) {
      return absl::CancelledError(
          absl::StrCat("svd: cancelled after ", sweep - 1, " sweeps (matrix ", index, ")"));
    }
    bool rotated = false;
    for (std::int64_t p = 0; p + 1 < cols; ++p) {
      T* x = w.data() + p * len;
      for (std::int64_t q = p + 1; q < cols; ++q) {
        T* y = w.data() + q * len;
        double alpha, beta, gamma;
        pair_products(x, y, len, alpha, beta, gamma);
        // A zero column is orthogonal to anything. So, in effect, is a negligible one (|w|^2
        // below the smallest normal number, in scaled units where max |a_ij| >= 1): its
        // direction is rounding noise that rotations cannot improve once its entries are
        // subnormal, so iterating on it would never converge. Such columns get sigma ~ 0 and
        // a completed U column below.
        if (alpha <= kNegligible || beta <= kNegligible) continue;
        if (std::abs(gamma) <= opt.tol * std::sqrt(alpha) * std::sqrt(beta)) continue;
        rotated = true;
        // Rutishauser's formulas: the smaller root t of t^2 + 2 zeta t - 1 = 0 (|angle| <=
        // pi/4), which zeroes the off-diagonal of the 2x2 Gram matrix.
        const double zeta = (beta - alpha) / (2.0 * gamma);
        const double az = std::abs(zeta);
        const double t = az < 1e150 ? std::copysign(1.0 / (az + std::sqrt(1.0 + zeta * zeta)), zeta)
                                    : 0.5 / zeta;
        const double c = 1.0 / std::sqrt(1.0 + t * t);
        const double sn = c * t;
        rotate(x, y, len, static_cast<T>(c), static_cast<T>(sn));
        if (shape.compute_uv) {
          rotate(v.data() + p * cols, v.data() + q * cols, cols, static_cast<T>(c),
                 static_cast<T>(sn));
        }
      }
    }
    info.sweeps = sweep;
    if (!rotated) {
      info.converged = true;
      break;
    }
  }

  // sigma_j = |w_j|, sorted descending (stable, so equal values keep column order).
  std::vector<double> sigma(static_cast<std::size_t>(cols));
  for (std::int64_t j = 0; j < cols; ++j) sigma[j] = std::sqrt(norm2(w.data() + j * len, len));
  std::vector<std::int64_t> order(static_cast<std::size_t>(cols));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::int64_t i, std::int64_t j) { return sigma[i] > sigma[j]; });
  for (std::int64_t j = 0; j < cols; ++j) {
    const double value = std::ldexp(sigma[order[j]], exponent);
    // Only f32 can overflow here (sigma_1 <= sqrt(m n) max |a_ij|); saturate, never UB.
    s_out[j] = value > std::numeric_limits<T>::max() ? std::numeric_limits<T>::infinity()
                                                     : static_cast<T>(value);
  }
  if (!shape.compute_uv) return info;

  // Left vectors (U for a tall matrix, V for a wide one): w_j / sigma_j for the columns that
  // took part in the iteration (non-negligible), then an orthonormal completion for the rest
  // and, with full_matrices, up to len vectors.
  const std::int64_t left_count = shape.full_matrices ? len : cols;
  std::vector<T> left(static_cast<std::size_t>(left_count * len));
  std::int64_t rank = 0;
  for (; rank < cols && sigma[order[rank]] * sigma[order[rank]] > kNegligible; ++rank) {
    const T* src = w.data() + order[rank] * len;
    T* dst = left.data() + rank * len;
    const double inv = 1.0 / sigma[order[rank]];
    for (std::int64_t i = 0; i < len; ++i) dst[i] = static_cast<T>(src[i] * inv);
  }
  complete_basis(left.data(), rank, left_count, len);

  // Right vectors: columns of the accumulated rotations, permuted like sigma.
  std::vector<T> right(static_cast<std::size_t>(cols * cols));
  for (std::int64_t j = 0; j < cols; ++j) {
    std::copy_n(v.data() + order[j] * cols, cols, right.data() + j * cols);
  }

  if (!wide) {  // U (m x left_count) holds the left vectors as columns; Vt rows are V columns
    transpose_into(left.data(), u_out, left_count, len);
    std::copy(right.begin(), right.end(), vt_out);
  } else {  // A^T = U' S V'^T, so U = V' (m x m) and Vt rows are the left vectors
    transpose_into(right.data(), u_out, cols, cols);
    std::copy(left.begin(), left.end(), vt_out);
  }
  return info;
}

template <typename T>
absl::StatusOr<SvdInfo> svd_typed(const T* a, T* s, T* u, T* vt, const SvdShape& shape,
                                  StopToken stop) {
  const Options opt{effective_tolerance(shape),
                    shape.max_sweeps > 0 ? shape.max_sweeps : kSvdDefaultMaxSweeps};
  const std::int64_t p = std::min(shape.m, shape.n);
  const std::int64_t a_stride = shape.m * shape.n;
  const std::int64_t u_stride = shape.m * svd_u_cols(shape);
  const std::int64_t vt_stride = svd_vt_rows(shape) * shape.n;

  SvdInfo total{0, true};
  absl::Status error;
  std::mutex mu;
  std::atomic<std::int64_t> next{0};
  auto worker = [&] {
    for (std::int64_t b = next++; b < shape.batch; b = next++) {
      absl::StatusOr<SvdInfo> r =
          svd_one(a + b * a_stride, s + b * p, shape.compute_uv ? u + b * u_stride : nullptr,
                  shape.compute_uv ? vt + b * vt_stride : nullptr, shape, opt, stop, b);
      std::lock_guard<std::mutex> lock(mu);
      if (!r.ok()) {
        if (error.ok()) error = r.status();
        next = shape.batch;  // stop handing out work
        return;
      }
      total.sweeps = std::max(total.sweeps, r->sweeps);
      total.converged = total.converged && r->converged;
    }
  };
  // Matrices of a batch are independent: spread them over the hardware threads.
  const std::int64_t hw = std::max<unsigned>(1, std::thread::hardware_concurrency());
  const std::int64_t threads = std::min(hw, shape.batch);
  std::vector<std::thread> pool;
  for (std::int64_t t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(worker);
    } catch (const std::system_error&) {
      break;  // out of threads: the running ones take all the work
    }
  }
  worker();
  for (std::thread& t : pool) t.join();
  if (!error.ok()) return error;
  return total;
}

}  // namespace

absl::StatusOr<SvdInfo> svd_jacobi(const void* a, void* s, void* u, void* vt, const SvdShape& shape,
                                   StopToken stop) {
  if (absl::Status st = validate(shape); !st.ok()) return st;
  if (shape.batch == 0) return SvdInfo{0, true};
  if (shape.m * shape.n > 0 && a == nullptr) {
    return absl::InvalidArgumentError("svd: null input buffer");
  }
  if (std::min(shape.m, shape.n) > 0 && s == nullptr) {
    return absl::InvalidArgumentError("svd: null S buffer");
  }
  if (shape.compute_uv && ((shape.m > 0 && svd_u_cols(shape) > 0 && u == nullptr) ||
                           (shape.n > 0 && svd_vt_rows(shape) > 0 && vt == nullptr))) {
    return absl::InvalidArgumentError("svd: compute_uv needs U and Vt buffers");
  }
  if (shape.dtype == DType::kF32) {
    return svd_typed(static_cast<const float*>(a), static_cast<float*>(s), static_cast<float*>(u),
                     static_cast<float*>(vt), shape, stop);
  }
  return svd_typed(static_cast<const double*>(a), static_cast<double*>(s), static_cast<double*>(u),
                   static_cast<double*>(vt), shape, stop);
}

}  // namespace gcompute::kernels::cpu
