// SPDX-License-Identifier: Apache-2.0
// Symmetric eigendecomposition A = V * diag(w) * V^T: shapes, the symmetry check, outcome.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "gcompute/kernels/dtype.hpp"

namespace gcompute::kernels {

/// Shape and options of a (batched) eigendecomposition of symmetric n x n matrices (f32 or
/// f64), row-major. Outputs per matrix:
///   w : n eigenvalues, ascending;
///   V : n x n row-major, the eigenvectors as columns (orthonormal), A * V = V * diag(w).
/// The decomposition reads the lower triangle (a_ij with i >= j), as numpy.linalg.eigh does;
/// the input must be symmetric to the tolerance below (check_symmetric). V is neither read nor
/// written when compute_vectors is false (it may be null).
struct EighShape {
  std::int64_t batch = 1;
  std::int64_t n = 0;
  DType dtype = DType::kF64;
  bool compute_vectors = true;
  /// A matrix counts as symmetric when every |a_ij - a_ji| <= symmetry_tolerance * max |a_kl|
  /// (the largest magnitude of that matrix: the max norm). 0 selects the default,
  /// n * machine epsilon of dtype: room for the rounding of a product such as B * B^T
  /// computed without symmetry, far below any real asymmetry.
  double symmetry_tolerance = 0.0;
};

/// What the solver did. converged is false where LAPACK reported that an eigenvalue did not
/// converge (info > 0) for some matrix of the batch; the outputs are written all the same.
struct EighInfo {
  bool converged = false;
};

/// The symmetry tolerance actually used (the default resolved).
double effective_symmetry_tolerance(const EighShape& shape);

/// INVALID_ARGUMENT for negative sizes, a dtype other than f32/f64, or a symmetry tolerance
/// outside [0, 1).
absl::Status validate(const EighShape& shape);

/// The largest asymmetry of a batch, measured relative to each matrix's max |a_kl|.
struct Asymmetry {
  std::int64_t batch_index = 0;
  std::int64_t row = 0;  ///< row > col: the element of the lower triangle
  std::int64_t col = 0;
  double lower = 0;     ///< a[row][col], the value the decomposition uses
  double upper = 0;     ///< a[col][row]
  double max_abs = 0;   ///< max |a_kl| of that matrix
  double relative = 0;  ///< |lower - upper| / max_abs (0 for a zero matrix)
};

/// Scans a host batch (row-major, shape.dtype) for the pair (i, j) with the largest relative
/// |a_ij - a_ji|; the first such pair in row-major order of the lower triangle wins ties.
/// Pairs with a NaN or infinite element are skipped (the non-finite check reports those).
/// a may be null only when the batch holds no elements.
Asymmetry find_max_asymmetry(const void* a, const EighShape& shape);

/// OK when the largest asymmetry is within effective_symmetry_tolerance; otherwise
/// INVALID_ARGUMENT naming the matrix, the pair, both values and the bound.
absl::Status check_symmetric(const void* a, const EighShape& shape);

}  // namespace gcompute::kernels
