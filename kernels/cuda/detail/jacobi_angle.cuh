// SPDX-License-Identifier: Apache-2.0
// The angle of a Jacobi rotation, shared by the one-sided SVD drivers and the eigensolver.
#pragma once

#include <cuda_runtime.h>

#include <type_traits>

namespace gcompute::kernels::cuda::detail {

/// tan, sqrt(1 + tan^2) and cos - 1 of a Jacobi rotation angle.
template <typename T>
struct JacobiAngle {
  T t;
  T r;
  T cm1;
};

/// The rotation angle phi with cot(2 phi) = theta, |phi| <= pi / 4, by Rutishauser's
/// t = sign(theta) / (|theta| + sqrt(1 + theta^2)). cos - 1 = -t^2 / (r (1 + r)) is computed
/// without cancellation, for rotations applied as x + ((c - 1) x - s y).
template <typename T>
__device__ inline JacobiAngle<T> jacobi_angle(T theta) {
  // |theta| above this: theta^2 would overflow long before 1 + theta^2 differs from theta^2,
  // and t = 1 / (2 theta) to working precision.
  constexpr T kBigTheta = std::is_same_v<T, float> ? T(1.0e15f) : T(1.0e150);
  T t;
  if (fabs(theta) > kBigTheta) {
    t = T(0.5) / theta;
  } else {
    t = (theta >= T(0) ? T(1) : T(-1)) / (fabs(theta) + sqrt(T(1) + theta * theta));
  }
  const T r = sqrt(T(1) + t * t);
  return {t, r, -(t * t) / (r * (T(1) + r))};
}

}  // namespace gcompute::kernels::cuda::detail
