// SPDX-License-Identifier: Apache-2.0
// What eigenpairs of a symmetric matrix must be, whichever solver produced them.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>

#include "support/oracle.hpp"

namespace gcompute::testing {

/// Expects w and the columns of V (n x n, row-major) to be eigenpairs of the symmetric n x n
/// matrix A: V orthonormal (max |V^T V - I| over entries) and |A V - V diag(w)|_F / |A|_F, each
/// within `tol`.
inline void expect_eigenpairs(const double* a, const double* v, const double* w, std::int64_t n,
                              double tol) {
  EXPECT_LE(orthonormal_columns_error(v, n, n), tol) << "V not orthogonal";
  EXPECT_LE(eigen_residual(a, v, w, n), tol) << "A V != V diag(w)";
}

}  // namespace gcompute::testing
