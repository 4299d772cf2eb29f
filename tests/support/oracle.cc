// SPDX-License-Identifier: Apache-2.0
#include "support/oracle.hpp"

#include <gtest/gtest.h>
#include <lapack.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <utility>

namespace gcompute::testing {

namespace {

// alpha op(A) op(B) + beta C in long double or, with `magnitudes`, the same sum over the
// terms' absolute values.
std::vector<long double> gemm_terms(const double* a, const double* b, const double* c,
                                    std::int64_t m, std::int64_t n, std::int64_t k, bool ta,
                                    bool tb, double alpha, double beta, bool magnitudes) {
  const auto term = [magnitudes](long double x) { return magnitudes ? std::fabs(x) : x; };
  const std::int64_t lda = ta ? m : k, ldb = tb ? k : n;
  std::vector<long double> out(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      long double acc = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        acc += term(static_cast<long double>(op_at(a, lda, ta, i, p)) * op_at(b, ldb, tb, p, j));
      }
      long double v = term(static_cast<long double>(alpha)) * acc;
      if (beta != 0) v += term(static_cast<long double>(beta) * c[i * n + j]);
      out[i * n + j] = v;
    }
  }
  return out;
}

}  // namespace

std::vector<long double> reference_gemm(const double* a, const double* b, const double* c,
                                        std::int64_t m, std::int64_t n, std::int64_t k, bool ta,
                                        bool tb, double alpha, double beta) {
  return gemm_terms(a, b, c, m, n, k, ta, tb, alpha, beta, false);
}

std::vector<long double> reference_gemm_abs(const double* a, const double* b, const double* c,
                                            std::int64_t m, std::int64_t n, std::int64_t k, bool ta,
                                            bool tb, double alpha, double beta) {
  return gemm_terms(a, b, c, m, n, k, ta, tb, alpha, beta, true);
}

LapackSvd lapack_svd(const std::vector<double>& a, std::int64_t m, std::int64_t n, bool vectors) {
  LapackSvd r;
  const std::int64_t p = std::min(m, n);
  r.s.assign(static_cast<std::size_t>(p), 0.0);
  if (p == 0) return r;
  // Row-major A (m x n) is column-major A^T (n x m): factor A^T = V S U^T, so LAPACK's "U"
  // (n x p, column-major) is our Vt (p x n, row-major) and its "VT" (p x m) is our U.
  std::vector<double> at(a);
  lapack_int rows = static_cast<lapack_int>(n), cols = static_cast<lapack_int>(m);
  lapack_int lda = std::max<lapack_int>(1, rows);
  lapack_int pp = static_cast<lapack_int>(p);
  r.vt.assign(static_cast<std::size_t>(vectors ? p * n : 1), 0.0);
  r.u.assign(static_cast<std::size_t>(vectors ? m * p : 1), 0.0);
  const char job = vectors ? 'S' : 'N';
  lapack_int ldu = vectors ? rows : 1, ldvt = vectors ? pp : 1;
  lapack_int info = 0, lwork = -1;
  double query = 0;
  LAPACK_dgesvd(&job, &job, &rows, &cols, at.data(), &lda, r.s.data(), r.vt.data(), &ldu,
                r.u.data(), &ldvt, &query, &lwork, &info);
  lwork = static_cast<lapack_int>(query);
  std::vector<double> work(static_cast<std::size_t>(std::max<lapack_int>(1, lwork)));
  LAPACK_dgesvd(&job, &job, &rows, &cols, at.data(), &lda, r.s.data(), r.vt.data(), &ldu,
                r.u.data(), &ldvt, work.data(), &lwork, &info);
  r.info = static_cast<int>(info);
  if (!vectors) {
    r.u.clear();
    r.vt.clear();
  }
  return r;
}

std::vector<double> lapack_jacobi_singular_values(const std::vector<double>& a, std::int64_t m,
                                                  std::int64_t n) {
  // dgejsv needs rows >= cols: the column-major view of row-major A is A^T (n x m); take A
  // itself (a transposed copy) when A is tall.
  const std::int64_t rows = std::max(m, n), cols = std::min(m, n);
  std::vector<double> b(a);
  if (m > n) {
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) b[j * m + i] = a[i * n + j];
    }
  }
  std::vector<double> sva(static_cast<std::size_t>(cols));
  if (cols == 0) return sva;
  lapack_int lm = static_cast<lapack_int>(rows), ln = static_cast<lapack_int>(cols);
  lapack_int lwork = static_cast<lapack_int>(
      std::max<std::int64_t>({2 * rows + cols, 4 * cols + 1, 7}) + (rows + cols) * 128);
  std::vector<double> work(static_cast<std::size_t>(lwork));
  std::vector<lapack_int> iwork(static_cast<std::size_t>(rows + 3 * cols + 3));
  lapack_int one = 1, info = 0;
  double dummy = 0;
  LAPACK_dgejsv("F", "N", "N", "R", "N", "N", &lm, &ln, b.data(), &lm, sva.data(), &dummy, &one,
                &dummy, &one, work.data(), &lwork, iwork.data(), &info);
  EXPECT_EQ(info, 0);
  const double scale = work[0] / work[1];
  for (double& x : sva) x *= scale;
  return sva;
}

LapackEigh lapack_eigh(const std::vector<double>& a, std::int64_t n, bool vectors) {
  LapackEigh r;
  r.w.assign(static_cast<std::size_t>(n), 0.0);
  if (n == 0) return r;
  // Row-major lower triangle = column-major upper triangle.
  std::vector<double> z(a);
  lapack_int ln = static_cast<lapack_int>(n), info = 0, lwork = -1;
  const char job = vectors ? 'V' : 'N';
  double query = 0;
  LAPACK_dsyev(&job, "U", &ln, z.data(), &ln, r.w.data(), &query, &lwork, &info);
  lwork = static_cast<lapack_int>(query);
  std::vector<double> work(static_cast<std::size_t>(std::max<lapack_int>(1, lwork)));
  LAPACK_dsyev(&job, "U", &ln, z.data(), &ln, r.w.data(), work.data(), &lwork, &info);
  r.info = static_cast<int>(info);
  if (vectors) {  // column-major Z (eigenvectors as columns) to row-major V
    r.v.resize(z.size());
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t k = 0; k < n; ++k) r.v[i * n + k] = z[k * n + i];
    }
  }
  return r;
}

double frobenius(const double* x, std::int64_t count) {
  long double s = 0;
  for (std::int64_t i = 0; i < count; ++i) s += static_cast<long double>(x[i]) * x[i];
  return static_cast<double>(std::sqrt(s));
}

namespace {

// max |<q_a, q_b> - delta_ab| over `count` vectors of `length` elements, element i of vector a
// at q[a * vector_stride + i * element_stride]; NaN counts as infinite.
double orthonormal_error(const double* q, std::int64_t count, std::int64_t length,
                         std::int64_t vector_stride, std::int64_t element_stride) {
  double worst = 0;
  for (std::int64_t a = 0; a < count; ++a) {
    for (std::int64_t b = a; b < count; ++b) {
      long double dot = 0;
      for (std::int64_t i = 0; i < length; ++i) {
        dot += static_cast<long double>(q[a * vector_stride + i * element_stride]) *
               q[b * vector_stride + i * element_stride];
      }
      const double err = static_cast<double>(std::fabs(dot - (a == b ? 1.0L : 0.0L)));
      worst = std::max(worst, std::isnan(err) ? kInf : err);
    }
  }
  return worst;
}

}  // namespace

double orthonormal_columns_error(const double* q, std::int64_t rows, std::int64_t cols) {
  return orthonormal_error(q, cols, rows, 1, cols);
}

double orthonormal_rows_error(const double* q, std::int64_t rows, std::int64_t cols) {
  return orthonormal_error(q, rows, cols, cols, 1);
}

double reconstruction_error(const double* a, const double* u, const double* s, const double* vt,
                            std::int64_t m, std::int64_t n, std::int64_t u_cols) {
  const std::int64_t p = std::min(m, n);
  long double diff = 0;
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      long double v = 0;
      for (std::int64_t l = 0; l < p; ++l) {
        v += static_cast<long double>(u[i * u_cols + l]) * s[l] * vt[l * n + j];
      }
      const long double d = v - a[i * n + j];
      diff += d * d;
    }
  }
  const double norm_a = frobenius(a, m * n);
  const double err = static_cast<double>(std::sqrt(diff));
  if (std::isnan(err)) return kInf;
  return norm_a > 0 ? err / norm_a : err;
}

std::vector<double> random_orthonormal_columns(Rng& rng, std::int64_t m, std::int64_t p) {
  std::vector<long double> q(static_cast<std::size_t>(m * p));  // column-contiguous
  for (auto& x : q) x = rng.normal();
  for (std::int64_t j = 0; j < p; ++j) {
    long double* v = q.data() + j * m;
    for (int pass = 0; pass < 2; ++pass) {
      for (std::int64_t c = 0; c < j; ++c) {
        const long double* w = q.data() + c * m;
        long double dot = 0;
        for (std::int64_t i = 0; i < m; ++i) dot += v[i] * w[i];
        for (std::int64_t i = 0; i < m; ++i) v[i] -= dot * w[i];
      }
    }
    long double norm = 0;
    for (std::int64_t i = 0; i < m; ++i) norm += v[i] * v[i];
    norm = std::sqrt(norm);
    for (std::int64_t i = 0; i < m; ++i) v[i] /= norm;
  }
  std::vector<double> out(static_cast<std::size_t>(m * p));
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < p; ++j) out[i * p + j] = static_cast<double>(q[j * m + i]);
  }
  return out;
}

std::vector<double> matrix_with_singular_values(Rng& rng, std::int64_t m, std::int64_t n,
                                                const std::vector<double>& sigma) {
  const auto p = static_cast<std::int64_t>(sigma.size());
  const std::vector<double> q1 = random_orthonormal_columns(rng, m, p);
  const std::vector<double> q2 = random_orthonormal_columns(rng, n, p);
  std::vector<double> a(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      long double v = 0;
      for (std::int64_t l = 0; l < p; ++l) {
        v += static_cast<long double>(q1[i * p + l]) * sigma[l] * q2[j * p + l];
      }
      a[i * n + j] = static_cast<double>(v);
    }
  }
  return a;
}

std::vector<double> matrix_with_eigenvalues(Rng& rng, const std::vector<double>& lambda) {
  const auto n = static_cast<std::int64_t>(lambda.size());
  const std::vector<double> q = random_orthonormal_columns(rng, n, n);
  std::vector<double> a(static_cast<std::size_t>(n * n));
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = i; j < n; ++j) {
      long double v = 0;
      for (std::int64_t l = 0; l < n; ++l) {
        v += static_cast<long double>(q[i * n + l]) * lambda[l] * q[j * n + l];
      }
      a[i * n + j] = a[j * n + i] = static_cast<double>(v);
    }
  }
  return a;
}

double eigen_residual(const double* a, const double* v, const double* w, std::int64_t n) {
  long double diff = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t k = 0; k < n; ++k) {
      long double av = 0;
      for (std::int64_t l = 0; l < n; ++l)
        av += static_cast<long double>(a[i * n + l]) * v[l * n + k];
      const long double d = av - static_cast<long double>(v[i * n + k]) * w[k];
      diff += d * d;
    }
  }
  const double norm_a = frobenius(a, n * n);
  const double err = static_cast<double>(std::sqrt(diff));
  if (std::isnan(err)) return kInf;
  return norm_a > 0 ? err / norm_a : err;
}

std::vector<double> floyd_warshall_reference(const std::vector<double>& w, std::int64_t n,
                                             bool* negative_cycle) {
  std::vector<double> d(w);
  for (std::int64_t i = 0; i < n; ++i) d[i * n + i] = std::min(0.0, d[i * n + i]);
  for (std::int64_t k = 0; k < n; ++k) {
    for (std::int64_t i = 0; i < n; ++i) {
      const double dik = d[i * n + k];
      if (dik == kInf) continue;
      for (std::int64_t j = 0; j < n; ++j) {
        const double s = dik + d[k * n + j];
        if (s < d[i * n + j]) d[i * n + j] = s;
      }
    }
  }
  if (negative_cycle != nullptr) {
    *negative_cycle = false;
    for (std::int64_t v = 0; v < n; ++v) *negative_cycle |= d[v * n + v] < 0;
  }
  return d;
}

std::vector<double> dijkstra(const std::vector<double>& w, std::int64_t n, std::int64_t source) {
  std::vector<double> dist(static_cast<std::size_t>(n), kInf);
  using Item = std::pair<double, std::int64_t>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
  dist[source] = 0;
  heap.emplace(0.0, source);
  while (!heap.empty()) {
    const auto [du, u] = heap.top();
    heap.pop();
    if (du > dist[u]) continue;
    for (std::int64_t v = 0; v < n; ++v) {
      const double wt = w[u * n + v];
      if (wt == kInf || du + wt >= dist[v]) continue;
      dist[v] = du + wt;
      heap.emplace(dist[v], v);
    }
  }
  return dist;
}

std::vector<std::int32_t> next_hop_rule(const std::vector<double>& w, const std::vector<double>& d,
                                        std::int64_t n) {
  std::vector<std::int32_t> out(static_cast<std::size_t>(n * n), -1);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      const double target = d[i * n + j];
      std::int32_t& hop = out[i * n + j];
      if (i == j) {
        hop = static_cast<std::int32_t>(i);
      } else if (target == kInf) {
        hop = -1;
      } else if (w[i * n + j] == target) {
        hop = static_cast<std::int32_t>(j);
      } else {
        double best = kInf;
        for (std::int64_t k = 0; k < n; ++k) {
          const double wk = w[i * n + k];
          if (k != i && wk != kInf && wk + d[k * n + j] == target && wk < best) {
            best = wk;  // k ascends: the first k of the least weight is kept
            hop = static_cast<std::int32_t>(k);
          }
        }
      }
    }
  }
  return out;
}

}  // namespace gcompute::testing
