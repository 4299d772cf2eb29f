// SPDX-License-Identifier: Apache-2.0
// SVD through the polar decomposition (kPolar): A = Up * H by QDWH, H = V * diag(s) * V^T by
// ?syevd, U = Up * V.
//
// QDWH (Nakatsukasa, Bai and Gygi 2010; Nakatsukasa and Higham 2012) iterates
//   X_{k+1} = X_k (a_k I + b_k X_k^T X_k) (I + c_k X_k^T X_k)^-1,  X_0 = A / alpha,
// a rational map that sends every singular value in [l_k, 1] into [l_{k+1}, 1] with weights
// chosen from the lower bound l_k, so that l_k reaches 1 in at most 6 iterations for
// cond(A) <= 1e16. While c_k > 100 the step is computed from the QR factorization of
// [sqrt(c_k) X_k; I] (stable for any conditioning): by Householder QR while c_k eps > 1e-3, else
// by CholeskyQR2 (two Cholesky passes, GEMM-shaped); afterwards from the Cholesky factor of
// I + c_k X_k^T X_k, whose condition number is then at most 101. A tall matrix is first
// reduced to its n x n triangular factor R (A = Q R), whose polar factor gives A's: Q Up_R.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "detail/buffer.hpp"
#include "detail/dense.hpp"
#include "detail/lapack.hpp"
#include "detail/svd_tall.hpp"
#include "gcompute/kernels/qdwh.hpp"

namespace gcompute::kernels::cpu::detail {
namespace {

constexpr const char* kOp = "svd";

template <typename T>
class Qdwh {
 public:
  Qdwh(Int n, Buffer<T>& x) : n_(n), nn_(static_cast<std::size_t>(n) * n), x_(x), x_prev_(nn_) {}

  // The steps of qdwh_iterate, on X in x.
  absl::Status keep_previous() {
    x_prev_ = x_;
    return absl::OkStatus();
  }

  absl::StatusOr<double> step_size() const {
    double sum = 0;
    for (std::size_t i = 0; i < nn_; ++i) {
      const double d = static_cast<double>(x_[i]) - static_cast<double>(x_prev_[i]);
      sum += d * d;
    }
    return std::sqrt(sum);
  }

  // ||X^T X - I||_F from the upper triangle of X^T X - I (syrk).
  absl::StatusOr<double> orthogonality_error() {
    identity_into_z();
    syrk_t(n_, n_, 1.0, x_.data(), n_, -1.0, z_.data(), n_);
    double sum = 0;
    for (Int j = 0; j < n_; ++j) {
      for (Int i = 0; i <= j; ++i) {
        const double g = z_[static_cast<std::size_t>(j) * n_ + i];
        sum += (i == j ? 1.0 : 2.0) * g * g;
      }
    }
    return std::sqrt(sum);
  }

  // X <- (b/c) X + (a - b/c)/sqrt(c) * Q1 Q2^T with [sqrt(c) X; I] = [Q1; Q2] R.
  absl::Status qr_step(const QdwhWeights& w) {
    const Int n2 = 2 * n_;
    stack_into(w, z_);
    tau_.resize(static_cast<std::size_t>(n_));
    absl::StatusOr<Int> info = call_with_workspace<T>(kOp, "geqrf", [&](T* wk, Int lw, Int* inf) {
      geqrf(n2, n_, z_.data(), n2, tau_.data(), wk, lw, inf);
    });
    if (!info.ok()) return info.status();
    info = call_with_workspace<T>(kOp, "orgqr", [&](T* wk, Int lw, Int* inf) {
      orgqr(n2, n_, n_, z_.data(), n2, tau_.data(), wk, lw, inf);
    });
    if (!info.ok()) return info.status();
    update_from_stack(w, z_);
    return absl::OkStatus();
  }

  // qr_step's update with [Q1; Q2] from CholeskyQR2 (see qdwh_iterate): R1 from
  // I + c X^T X, Q = [sqrt(c) X; I] R1^-1, then once more on Q. False, X untouched, when a Gram
  // is not numerically positive definite.
  // The stack goes in z (which the QR step has grown to 2n x n already), the Gram in gram.
  absl::StatusOr<bool> cholesky_qr_step(const QdwhWeights& w) {
    const Int n2 = 2 * n_;
    GC_ASSIGN_OR_RETURN(bool definite, factor_step_gram(w.c, gram_));
    if (!definite) return false;
    stack_into(w, z_);
    trsm_right_upper(CblasNoTrans, n2, n_, gram_.data(), n_, z_.data(), n2);
    syrk_t(n_, n2, 1.0, z_.data(), n2, 0.0, gram_.data(), n_);
    GC_ASSIGN_OR_RETURN(definite, potrf_upper(gram_));
    if (!definite) return false;
    trsm_right_upper(CblasNoTrans, n2, n_, gram_.data(), n_, z_.data(), n2);
    update_from_stack(w, z_);
    return true;
  }

  // X <- (b/c) X + (a - b/c) X Z^-1 with Z = I + c X^T X = W^T W (Cholesky). False, X
  // untouched, when Z is not numerically positive definite (then the caller takes the QR step).
  absl::StatusOr<bool> cholesky_step(const QdwhWeights& w) {
    GC_ASSIGN_OR_RETURN(const bool definite, factor_step_gram(w.c, z_));
    if (!definite) return false;
    trsm_right_upper(CblasNoTrans, n_, n_, z_.data(), n_, x_.data(), n_);
    trsm_right_upper(CblasTrans, n_, n_, z_.data(), n_, x_.data(), n_);
    const T bc = static_cast<T>(w.b / w.c), ab = static_cast<T>(w.a - w.b / w.c);
    for (std::size_t i = 0; i < nn_; ++i) x_[i] = ab * x_[i] + bc * x_prev_[i];
    return true;
  }

 private:
  /// z <- the n x n identity.
  void identity_into_z() {
    z_.resize(nn_);
    set_identity(z_.data(), n_, n_, n_);
  }

  /// g (n x n) <- R (upper) with R^T R = I + c X^T X, the Gram of [sqrt(c) X; I] that both the
  /// Cholesky and the CholeskyQR2 step factor; false when it is not numerically positive definite.
  absl::StatusOr<bool> factor_step_gram(double c, Buffer<T>& g) {
    g.resize(nn_);
    set_identity(g.data(), n_, n_, n_);
    syrk_t(n_, n_, c, x_.data(), n_, 1.0, g.data(), n_);
    return potrf_upper(g);
  }

  /// g (n x n) <- its Cholesky factor (upper); false when it is not numerically positive definite.
  absl::StatusOr<bool> potrf_upper(Buffer<T>& g) {
    Int info = 0;
    potrf('U', n_, g.data(), n_, &info);
    if (absl::Status st = check_info<T>(kOp, "potrf", info); !st.ok()) return st;
    return info == 0;
  }

  /// stack (2n x n) <- [sqrt(c) X; I].
  void stack_into(const QdwhWeights& w, Buffer<T>& stack) const {
    const Int n2 = 2 * n_;
    stack.assign(static_cast<std::size_t>(n2) * n_, T(0));
    const T root_c = static_cast<T>(std::sqrt(w.c));
    for (Int j = 0; j < n_; ++j) {
      T* col = stack.data() + static_cast<std::int64_t>(j) * n2;
      const T* xc = x_.data() + static_cast<std::int64_t>(j) * n_;
      for (Int i = 0; i < n_; ++i) col[i] = root_c * xc[i];
      col[n_ + j] = T(1);
    }
  }

  /// X <- (b/c) X + (a - b/c)/sqrt(c) Q1 Q2^T for [Q1; Q2] in stack (2n x n).
  void update_from_stack(const QdwhWeights& w, const Buffer<T>& stack) {
    const Int n2 = 2 * n_;
    const double bc = w.b / w.c;
    gemm(CblasNoTrans, CblasTrans, n_, n_, n_, (w.a - bc) / std::sqrt(w.c), stack.data(), n2,
         stack.data() + n_, n2, bc, x_.data(), n_);
  }

  Int n_;
  std::size_t nn_;
  Buffer<T>& x_;
  Buffer<T> x_prev_, z_, gram_, tau_;
};

// A lower bound on sigma_min(X) from LAPACK's 1-norm condition estimate:
// sigma_min >= 1 / (sqrt(n) ||X^-1||_1), ||X^-1||_1 ~ 1 / (rcond ||X||_1).
template <typename T>
absl::StatusOr<double> sigma_min_estimate(const Buffer<T>& x, Int n, bool triangular) {
  Buffer<T> work(static_cast<std::size_t>(4) * n);
  std::vector<Int> iwork(static_cast<std::size_t>(n));
  const double norm1 = lange('1', n, n, x.data(), n, work.data());
  T rcond = 0;
  Int info = 0;
  if (triangular) {
    trcon('1', 'U', 'N', n, x.data(), n, &rcond, work.data(), iwork.data(), &info);
    if (absl::Status st = check_info<T>(kOp, "trcon", info); !st.ok()) return st;
  } else {
    Buffer<T> lu(x);
    std::vector<Int> ipiv(static_cast<std::size_t>(n));
    getrf(n, n, lu.data(), n, ipiv.data(), &info);
    if (absl::Status st = check_info<T>(kOp, "getrf", info); !st.ok()) return st;
    if (info > 0) return 0.0;  // exactly singular
    gecon('1', n, lu.data(), n, static_cast<T>(norm1), &rcond, work.data(), iwork.data(), &info);
    if (absl::Status st = check_info<T>(kOp, "gecon", info); !st.ok()) return st;
  }
  return static_cast<double>(rcond) * norm1 / std::sqrt(static_cast<double>(n));
}

// Replaces the columns of the column-major rows x cols matrix u (cols <= rows) by the Q of
// its Householder QR, signed so that the diagonal of R is non-negative: orthonormal columns
// that keep every column that already was orthogonal to the ones before it (up to rounding).
template <typename T>
absl::Status orthonormalize_columns(T* u, Int rows, Int cols) {
  Buffer<T> tau(static_cast<std::size_t>(cols));
  absl::StatusOr<Int> info = call_with_workspace<T>(kOp, "geqrf", [&](T* wk, Int lw, Int* inf) {
    geqrf(rows, cols, u, rows, tau.data(), wk, lw, inf);
  });
  if (!info.ok()) return info.status();
  std::vector<bool> negative(static_cast<std::size_t>(cols));
  for (Int j = 0; j < cols; ++j) negative[j] = u[j + static_cast<std::int64_t>(j) * rows] < 0;
  info = call_with_workspace<T>(kOp, "orgqr", [&](T* wk, Int lw, Int* inf) {
    orgqr(rows, cols, cols, u, rows, tau.data(), wk, lw, inf);
  });
  if (!info.ok()) return info.status();
  for (Int j = 0; j < cols; ++j) {
    if (!negative[j]) continue;
    T* col = u + static_cast<std::int64_t>(j) * rows;
    for (Int i = 0; i < rows; ++i) col[i] = -col[i];
  }
  return absl::OkStatus();
}

}  // namespace

template <typename T>
absl::StatusOr<SvdInfo> polar_tall(const TallSvdArgs<T>& x, int max_iterations, StopToken stop) {
  const Int m = x.m, n = x.n;
  const bool vectors = x.ub != nullptr;
  const std::size_t nn = static_cast<std::size_t>(n) * n;
  const double eps = std::numeric_limits<T>::epsilon();

  // Scale by a power of two (exact) so that max |b_ij| is in [1, 2): X^T X can then neither
  // overflow nor underflow.
  double max_abs = 0;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(m) * n; ++i) {
    max_abs = std::max(max_abs, std::abs(static_cast<double>(x.b[i])));
  }
  if (max_abs == 0) {
    std::fill(x.s, x.s + n, T(0));
    if (vectors) {
      set_identity(x.ub, m, x.ucols, m);
      set_identity(x.vb, n, n, n);
    }
    return SvdInfo{0, true};
  }
  const int exponent = std::ilogb(max_abs);
  if (exponent != 0) {
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(m) * n; ++i) {
      x.b[i] = std::ldexp(x.b[i], -exponent);
    }
  }

  // A0: B itself when square, else R of B = Q R (Q kept as reflectors in b and tau).
  const bool tall = m > n;
  Buffer<T> a0(nn, T(0)), tau;
  if (tall) {
    tau.resize(static_cast<std::size_t>(n));
    absl::StatusOr<Int> info = call_with_workspace<T>(kOp, "geqrf", [&](T* wk, Int lw, Int* inf) {
      geqrf(m, n, x.b, m, tau.data(), wk, lw, inf);
    });
    if (!info.ok()) return info.status();
    for (Int j = 0; j < n; ++j) {
      std::copy_n(x.b + static_cast<std::int64_t>(j) * m, j + 1,
                  a0.data() + static_cast<std::int64_t>(j) * n);
    }
  } else {
    std::copy_n(x.b, nn, a0.data());
  }

  // X0 = A0 / alpha with alpha >= ||A0||_2, and l0 <= sigma_min(X0) (clamped below at eps^2,
  // where singular values count as zero; they are handled after the iteration).
  Buffer<T> work(static_cast<std::size_t>(n));
  const double alpha = std::min(lange('F', n, n, a0.data(), n, work.data()),
                                std::sqrt(lange('1', n, n, a0.data(), n, work.data()) *
                                          lange('I', n, n, a0.data(), n, work.data())));
  Buffer<T> xk(a0);
  for (T& v : xk) v = static_cast<T>(v / alpha);
  absl::StatusOr<double> l_est = sigma_min_estimate(xk, n, tall);
  if (!l_est.ok()) return l_est.status();
  double l = std::clamp(*l_est, eps * eps, 1.0);

  Qdwh<T> qdwh(n, xk);
  absl::StatusOr<SvdInfo> iterated = qdwh_iterate(qdwh, n, l, eps, max_iterations, stop, kOp);
  if (!iterated.ok()) return iterated.status();
  SvdInfo info = *iterated;

  // H = Up^T A0 (symmetric positive semidefinite up to rounding), then H = V diag(lambda) V^T.
  Buffer<T> h(nn);
  if (tall) {  // A0 = R is upper triangular
    transpose(xk.data(), h.data(), n, n);
    trmm_right_upper(n, n, a0.data(), n, h.data(), n);
  } else {
    gemm(CblasTrans, CblasNoTrans, n, n, n, 1.0, xk.data(), n, a0.data(), n, 0.0, h.data(), n);
  }
  for (Int j = 0; j < n; ++j) {
    for (Int i = 0; i < j; ++i) {
      const T mean =
          (h[i + static_cast<std::size_t>(j) * n] + h[j + static_cast<std::size_t>(i) * n]) / 2;
      h[i + static_cast<std::size_t>(j) * n] = h[j + static_cast<std::size_t>(i) * n] = mean;
    }
  }
  Buffer<T> lambda(static_cast<std::size_t>(n));
  const char jobz = vectors ? 'V' : 'N';
  const Int liwork = vectors ? 3 + 5 * n : 1;
  std::vector<Int> iwork(static_cast<std::size_t>(liwork));
  absl::StatusOr<Int> eig = call_with_workspace<T>(kOp, "syevd", [&](T* wk, Int lw, Int* inf) {
    syevd(jobz, 'U', n, h.data(), n, lambda.data(), wk, lw, iwork.data(), liwork, inf);
  });
  if (!eig.ok()) return eig.status();
  if (*eig > 0) info.converged = false;

  // sigma_i = |lambda_i| (lambda_i < 0 only by rounding), descending; U gets the sign.
  std::vector<Int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), Int{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](Int i, Int j) { return std::abs(lambda[i]) > std::abs(lambda[j]); });
  for (Int k = 0; k < n; ++k) {
    x.s[k] = saturate<T>(std::ldexp(std::abs(static_cast<double>(lambda[order[k]])), exponent));
  }
  if (!vectors) return info;

  for (Int k = 0; k < n; ++k) {
    std::copy_n(h.data() + static_cast<std::int64_t>(order[k]) * n, n,
                x.vb + static_cast<std::int64_t>(k) * n);
  }
  // U = Up V (n x n), columns of negative lambda negated; for a tall B then Q [U; 0] (and Q's
  // remaining columns for the full M x M factor).
  Buffer<T> w(nn);
  gemm(CblasNoTrans, CblasNoTrans, n, n, n, 1.0, xk.data(), n, x.vb, n, 0.0, w.data(), n);
  for (Int k = 0; k < n; ++k) {
    if (lambda[order[k]] < 0) {
      for (Int i = 0; i < n; ++i) w[i + static_cast<std::size_t>(k) * n] *= T(-1);
    }
  }
  if (!tall) {
    std::copy(w.begin(), w.end(), x.ub);
  } else {
    set_identity(x.ub, m, x.ucols, m);
    for (Int j = 0; j < n; ++j) {
      std::copy_n(w.data() + static_cast<std::int64_t>(j) * n, n,
                  x.ub + static_cast<std::int64_t>(j) * m);
    }
    absl::StatusOr<Int> q = call_with_workspace<T>(kOp, "ormqr", [&](T* wk, Int lw, Int* inf) {
      ormqr('L', 'N', m, x.ucols, n, x.b, m, tau.data(), x.ub, m, wk, lw, inf);
    });
    if (!q.ok()) return q.status();
  }
  // Singular values at rounding level (<= sqrt(n) eps sigma_1) have arbitrary left vectors,
  // and Up is no isometry on their directions: it maps what QDWH left at zero to zero and
  // partly converged noise to shorter vectors, so those columns of Up V are neither unit nor
  // orthogonal to the rest. Where such values exist, or a column is not unit, the columns are
  // orthonormalised in order (largest sigma first): a change of order eps for the columns of
  // the significant values, any orthonormal completion for the others (their sigma_i bounds
  // what that adds to the residual).
  const double negligible =
      std::sqrt(static_cast<double>(n)) * eps * std::abs(static_cast<double>(lambda[order[0]]));
  bool orthonormalize = std::abs(static_cast<double>(lambda[order[n - 1]])) <= negligible;
  for (Int j = 0; j < x.ucols && !orthonormalize; ++j) {
    const T* col = x.ub + static_cast<std::int64_t>(j) * m;
    double sum = 0;
    for (Int i = 0; i < m; ++i) sum += static_cast<double>(col[i]) * col[i];
    orthonormalize = std::abs(std::sqrt(sum) - 1.0) > 10 * n * eps;
  }
  if (orthonormalize) {
    if (absl::Status st = orthonormalize_columns(x.ub, m, x.ucols); !st.ok()) return st;
  }
  return info;
}

template absl::StatusOr<SvdInfo> polar_tall<float>(const TallSvdArgs<float>&, int, StopToken);
template absl::StatusOr<SvdInfo> polar_tall<double>(const TallSvdArgs<double>&, int, StopToken);

}  // namespace gcompute::kernels::cpu::detail
