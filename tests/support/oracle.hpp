// SPDX-License-Identifier: Apache-2.0
// Independent reference implementations for kernel tests: plain loops in higher precision,
// LAPACK drivers the kernels do not use for the same job (dgesvd, dgejsv, dsyev), textbook
// Floyd-Warshall and Dijkstra, and the norms used in assertions.
// Nothing here uses the code under test. All matrices are row-major.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "support/random.hpp"

namespace gcompute::testing {

/// Element (i, j) of op(X) where X is stored row-major with `ld` columns.
inline double op_at(const double* x, std::int64_t ld, bool transposed, std::int64_t i,
                    std::int64_t j) {
  return transposed ? x[j * ld + i] : x[i * ld + j];
}

/// alpha * op(A) * op(B) + beta * C for one m x n product, accumulated in long double.
/// A is m x k (k x m if ta), B is k x n (n x k if tb); c may be null when beta == 0.
std::vector<long double> reference_gemm(const double* a, const double* b, const double* c,
                                        std::int64_t m, std::int64_t n, std::int64_t k, bool ta,
                                        bool tb, double alpha, double beta);

/// Sum over the product of |alpha| |op(A)| |op(B)| + |beta| |C| (the scale of rounding errors).
std::vector<long double> reference_gemm_abs(const double* a, const double* b, const double* c,
                                            std::int64_t m, std::int64_t n, std::int64_t k, bool ta,
                                            bool tb, double alpha, double beta);

/// LAPACK dgesvd of an m x n matrix: s (min(m, n), descending), and with `vectors` the
/// thin U (m x p) and Vt (p x n). info is LAPACK's.
struct LapackSvd {
  std::vector<double> s, u, vt;
  int info = 0;
};
LapackSvd lapack_svd(const std::vector<double>& a, std::int64_t m, std::int64_t n, bool vectors);

/// Singular values (descending) of a row-major m x n matrix by LAPACK dgejsv in double, with
/// full pivoting (JOBA = 'F'): relative accuracy for graded matrices D1 * B * D2.
std::vector<double> lapack_jacobi_singular_values(const std::vector<double>& a, std::int64_t m,
                                                  std::int64_t n);

/// LAPACK dsyev (implicit QL/QR, not the divide-and-conquer or MRRR drivers) of a symmetric
/// n x n matrix, lower triangle used: w ascending and, with `vectors`, V row-major with the
/// eigenvectors as columns. info is LAPACK's.
struct LapackEigh {
  std::vector<double> w, v;
  int info = 0;
};
LapackEigh lapack_eigh(const std::vector<double>& a, std::int64_t n, bool vectors);

/// Frobenius norm, accumulated in long double.
double frobenius(const double* x, std::int64_t count);

/// max |Q^T Q - I| over entries, for the columns of a rows x cols matrix.
double orthonormal_columns_error(const double* q, std::int64_t rows, std::int64_t cols);
/// max |Q Q^T - I| over entries, for the rows of a rows x cols matrix.
double orthonormal_rows_error(const double* q, std::int64_t rows, std::int64_t cols);

/// |A - U diag(s) Vt|_F / max(|A|_F, tiny), with p = min(m, n) terms: U is m x u_cols (only
/// its first p columns are used), Vt is vt_rows x n (first p rows used).
double reconstruction_error(const double* a, const double* u, const double* s, const double* vt,
                            std::int64_t m, std::int64_t n, std::int64_t u_cols);

/// A random m x p matrix with orthonormal columns (p <= m): Gram-Schmidt, twice, on a
/// Gaussian matrix, in long double.
std::vector<double> random_orthonormal_columns(Rng& rng, std::int64_t m, std::int64_t p);

/// Q1 * diag(sigma) * Q2^T for random orthonormal Q1 (m x p) and Q2 (n x p), p = sigma.size().
std::vector<double> matrix_with_singular_values(Rng& rng, std::int64_t m, std::int64_t n,
                                                const std::vector<double>& sigma);

/// Q * diag(lambda) * Q^T for a random orthogonal Q (n = lambda.size()), accumulated in long
/// double and symmetrised exactly (element (j, i) is a copy of (i, j)).
std::vector<double> matrix_with_eigenvalues(Rng& rng, const std::vector<double>& lambda);

/// |A V - V diag(w)|_F / max(|A|_F, tiny) in long double, for a symmetric n x n A and V
/// (row-major) holding eigenvectors as columns.
double eigen_residual(const double* a, const double* v, const double* w, std::int64_t n);

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Textbook Floyd-Warshall (triple loop over k, i, j) in double: w is n x n with +inf for no
/// edge; the result has D[i][i] = min(0, W[i][i], cycles through i). negative_cycle is set when
/// some D[v][v] < 0.
std::vector<double> floyd_warshall_reference(const std::vector<double>& w, std::int64_t n,
                                             bool* negative_cycle = nullptr);

/// The next hops kApspNextHopCandidates' rule gives (apsp_types.hpp), computed naively from W
/// and exact distances D (both n x n, +inf for none): N[i][i] = i, -1 where D is +inf, j where
/// W[i][j] = D[i][j], else the least (W[i][k], k), k != i, with W[i][k] + D[k][j] = D[i][j].
std::vector<std::int32_t> next_hop_rule(const std::vector<double>& w, const std::vector<double>& d,
                                        std::int64_t n);

/// Single-source shortest distances by Dijkstra (non-negative weights only), +inf unreachable.
/// dist[source] = 0.
std::vector<double> dijkstra(const std::vector<double>& w, std::int64_t n, std::int64_t source);

}  // namespace gcompute::testing
