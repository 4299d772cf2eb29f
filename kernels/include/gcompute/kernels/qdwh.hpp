// SPDX-License-Identifier: Apache-2.0
// The QDWH iteration (Nakatsukasa, Bai and Gygi 2010) for the polar factor, shared by the CPU
// and the GPU polar SVD: its weights, its bound and its loop. Each backend supplies the linear
// algebra of a step on its own iterate X.
#pragma once

#include <cmath>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gcompute/kernels/status_macros.hpp"
#include "gcompute/kernels/stop_token.hpp"
#include "gcompute/kernels/svd_types.hpp"

namespace gcompute::kernels {

/// The coefficients of one QDWH step X <- X (a I + b X^T X)(I + c X^T X)^-1.
struct QdwhWeights {
  double a, b, c;
};

/// The dynamically weighted Halley coefficients for a lower bound l in (0, 1] on the iterate's
/// smallest singular value.
inline QdwhWeights qdwh_weights(double l) {
  const double l2 = l * l;
  const double d = std::cbrt(4.0 * (1.0 - l2) / (l2 * l2));
  const double sd = std::sqrt(1.0 + d);
  const double a = sd + 0.5 * std::sqrt(8.0 - 4.0 * d + 8.0 * (2.0 - l2) / (l2 * sd));
  const double b = (a - 1.0) * (a - 1.0) / 4.0;
  return {a, b, a + b - 1.0};
}

/// The lower bound after a step with weights w from lower bound l (at most 1).
inline double qdwh_next_bound(double l, const QdwhWeights& w) {
  const double next = l * (w.a + w.b * l * l) / (1.0 + w.c * l * l);
  return next < 1.0 ? next : 1.0;
}

/// Iterates X (n x n, ||X||_2 <= 1, sigma_min(X) >= l) towards its polar factor, `steps` doing
/// the linear algebra on its own X:
///   absl::Status keep_previous();                  // X_prev <- X
///   absl::StatusOr<bool> cholesky_step(weights);   // false, X unchanged: Z not pos. definite
///   absl::Status qr_step(weights);
///   absl::StatusOr<bool> cholesky_qr_step(weights); // false, X unchanged: not pos. def.
///   absl::StatusOr<double> orthogonality_error();  // ||X^T X - I||_F
///   absl::StatusOr<double> step_size();            // ||X - X_prev||_F
/// The Cholesky step is cheaper but accurate only while c <= 100 (Nakatsukasa and Higham 2012).
/// Between that and kCholeskyQrMaxCEps / eps the CholeskyQR2 step replaces the QR step: the same
/// update, from a QR factorization of Z = [sqrt(c) X; I] by two Cholesky passes (GEMM-shaped).
/// cond(Z)^2 = (1 + c sigma_max^2) / (1 + c sigma_min^2) <= 1 + c, so the first pass's Gram has
/// condition number at most 1 + c, about 1000 times below 1 / eps before dimension factors (the
/// proven sufficient condition, about 18 n^2 (1 + c) eps <= 1, is far stricter at large n; the
/// margin is empirical: numpy emulations at n = 500-800 left about 0.5 c eps after the first
/// pass and 4 eps after the second, and no Gram failed). A Gram that is not numerically positive
/// definite sends the step to the QR one.
inline constexpr double kCholeskyQrMaxCEps = 1e-3;

template <typename Steps>
absl::StatusOr<SvdInfo> qdwh_iterate(Steps& steps, std::int64_t n, double l, double eps,
                                     int max_iterations, const StopToken& stop, const char* op) {
  const double dx_tolerance = std::cbrt(5 * eps);
  const double orthogonality_tolerance = 10 * static_cast<double>(n) * eps;
  SvdInfo info{0, false};
  while (!info.converged && info.sweeps < max_iterations) {
    if (stop.stop_requested()) {
      return absl::CancelledError(
          absl::StrCat(op, ": cancelled after ", info.sweeps, " QDWH iterations"));
    }
    ++info.sweeps;
    const QdwhWeights w = qdwh_weights(l);
    GC_RETURN_IF_ERROR(steps.keep_previous());
    bool done = false;
    if (w.c <= 100) {
      GC_ASSIGN_OR_RETURN(done, steps.cholesky_step(w));
    } else if (w.c * eps <= kCholeskyQrMaxCEps) {
      GC_ASSIGN_OR_RETURN(done, steps.cholesky_qr_step(w));
    }
    if (!done) GC_RETURN_IF_ERROR(steps.qr_step(w));
    l = qdwh_next_bound(l, w);
    // Until l_k = 1 nothing can have converged, and nothing is measured (on a GPU a measurement
    // costs a synchronisation).
    if (1.0 - l > 10 * eps) continue;
    // Converged once X is orthogonal to the contract's precision: the iterates keep A's
    // singular vectors, so an orthogonal iterate is the polar factor, and U = Up V inherits
    // exactly ||X^T X - I||_F. Where l0 was a true lower bound this holds as soon as l_k = 1,
    // which saves the step that would only confirm it. Singular values at zero (rank
    // deficiency) stay at zero and never pass that test; then the step size decides: the
    // iteration is cubically convergent, so a step dx leaves an error of about dx^3 <= 5 eps.
    GC_ASSIGN_OR_RETURN(const double orthogonality, steps.orthogonality_error());
    if (orthogonality <= orthogonality_tolerance) {
      info.converged = true;
      break;
    }
    GC_ASSIGN_OR_RETURN(const double dx, steps.step_size());
    info.converged = dx <= dx_tolerance;
  }
  return info;
}

}  // namespace gcompute::kernels
