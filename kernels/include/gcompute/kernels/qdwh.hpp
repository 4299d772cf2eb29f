// SPDX-License-Identifier: Apache-2.0
// The QDWH iteration's weights (Nakatsukasa, Bai and Gygi 2010), shared by the CPU and the GPU
// polar SVD.
#pragma once

#include <cmath>

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

}  // namespace gcompute::kernels
