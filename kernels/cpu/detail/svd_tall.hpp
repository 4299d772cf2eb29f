// SPDX-License-Identifier: Apache-2.0
// SVD methods that need a tall column-major matrix (?gejsv, QDWH) behind the row-major
// interface.
//
// A row-major m x n matrix read column-major is A^T (n x m). For m <= n that is already tall:
// its SVD A^T = V S U^T yields A's right vectors as the left ones, and the column-major left
// factor (n x p) is exactly row-major Vt, so only the small m x m right factor is transposed.
// For m > n the input is transposed once into a column-major m x n copy (LAPACK overwrites its
// input, so a copy is made either way), and only U is transposed back.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "buffer.hpp"
#include "dense.hpp"
#include "gcompute/kernels/stop_token.hpp"
#include "gcompute/kernels/svd_types.hpp"
#include "lapack.hpp"

namespace gcompute::kernels::cpu::detail {

/// SVD of a column-major M x N matrix B with M >= N >= 1 (leading dimension M), which it
/// overwrites. Writes s (N values, descending, non-negative) and, when ub is not null, ub
/// (M x ucols, leading dimension M, orthonormal left vectors; ucols is N or M) and vb (N x N,
/// leading dimension N, right vectors as columns).
template <typename T>
struct TallSvdArgs {
  T* b;
  Int m;
  Int n;
  T* s;
  T* ub;
  Int ucols;
  T* vb;
};

/// ?gejsv (JOBA = 'F': QR with full pivoting, then one-sided Jacobi).
template <typename T>
absl::StatusOr<SvdInfo> gejsv_tall(const TallSvdArgs<T>& args);

/// QDWH polar decomposition, then ?syevd on H (svd_polar.cc). At most max_iterations QDWH
/// iterations; `stop` is polled before each.
template <typename T>
absl::StatusOr<SvdInfo> polar_tall(const TallSvdArgs<T>& args, int max_iterations, StopToken stop);

/// One row-major matrix (shape.m x shape.n, p = min(m, n) >= 1) through a tall core:
/// core(const TallSvdArgs<T>&) -> absl::StatusOr<SvdInfo>.
template <typename T, typename Core>
absl::StatusOr<SvdInfo> svd_via_tall(const T* a, T* s, T* u, T* vt, const SvdShape& shape,
                                     Core&& core) {
  const std::int64_t m = shape.m, n = shape.n;
  const bool vectors = shape.compute_uv;
  if (m <= n) {
    Buffer<T> b(a, a + m * n);
    Buffer<T> vb(vectors ? static_cast<std::size_t>(m * m) : 0);
    absl::StatusOr<SvdInfo> info = core(TallSvdArgs<T>{
        b.data(), static_cast<Int>(n), static_cast<Int>(m), s, vectors ? vt : nullptr,
        static_cast<Int>(svd_vt_rows(shape)), vectors ? vb.data() : nullptr});
    if (info.ok() && vectors) transpose(vb.data(), u, m, m);
    return info;
  }
  Buffer<T> b(static_cast<std::size_t>(m * n));
  transpose(a, b.data(), m, n);
  const std::int64_t uc = svd_u_cols(shape);
  Buffer<T> ub(vectors ? static_cast<std::size_t>(m * uc) : 0);
  absl::StatusOr<SvdInfo> info = core(
      TallSvdArgs<T>{b.data(), static_cast<Int>(m), static_cast<Int>(n), s,
                     vectors ? ub.data() : nullptr, static_cast<Int>(uc), vectors ? vt : nullptr});
  if (info.ok() && vectors) transpose(ub.data(), u, uc, m);
  return info;
}

}  // namespace gcompute::kernels::cpu::detail
