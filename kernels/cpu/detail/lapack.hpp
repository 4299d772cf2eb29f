// SPDX-License-Identifier: Apache-2.0
// Typed wrappers over the LAPACK and CBLAS routines the CPU kernels use: one overload per element
// type, so templates over float/double call the S or D routine. Matrices are column-major (the
// LAPACK convention); callers pass a row-major matrix as its column-major transpose.
#pragma once

#include <cblas.h>
#include <lapack.h>

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "buffer.hpp"

namespace gcompute::kernels::cpu::detail {

using Int = lapack_int;

/// "d" + name for double, "s" + name for float (the routine's LAPACK name, for messages).
template <typename T>
std::string routine(const char* name) {
  return absl::StrCat(std::is_same_v<T, double> ? "d" : "s", name);
}

/// OK for info >= 0; for info < 0 (LAPACK rejected argument -info) an INTERNAL error naming
/// the operation, the routine and the argument: a bug here, never the caller's input.
template <typename T>
absl::Status check_info(const char* op, const char* name, Int info) {
  if (info >= 0) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat(op, ": LAPACK ", routine<T>(name), " rejected argument ", -info));
}

/// True when every value fits LAPACK's 32-bit integers.
inline bool fits_int(std::int64_t v) {
  return v >= 0 && v <= std::numeric_limits<Int>::max();
}

/// A workspace size returned by a LAPACK query (in work[0]), rounded up: single precision
/// rounds large sizes to 24 bits. -1 when it does not fit an Int.
template <typename T>
std::int64_t queried_size(T value) {
  const double v = static_cast<double>(value) * (std::is_same_v<T, float> ? 1.0000002 : 1.0);
  if (!(v < static_cast<double>(std::numeric_limits<Int>::max()))) return -1;
  return static_cast<std::int64_t>(v) + 1;
}

/// Runs a LAPACK routine that takes (work, lwork, info), given as call(work, lwork, info): a
/// workspace query (lwork = -1) first, then the call with that workspace. Returns LAPACK's info
/// (>= 0), the error of check_info, or RESOURCE_EXHAUSTED when the workspace does not fit
/// LAPACK's 32-bit sizes.
template <typename T, typename Call>
absl::StatusOr<Int> call_with_workspace(const char* op, const char* name, Call&& call) {
  T query = T(0);
  Int info = 0;
  call(&query, Int{-1}, &info);
  if (absl::Status st = check_info<T>(op, name, info); !st.ok()) return st;
  const std::int64_t lwork = queried_size(query);
  if (lwork < 0) {
    return absl::ResourceExhaustedError(absl::StrCat(
        op, ": LAPACK ", routine<T>(name), " needs more workspace than 32-bit LAPACK can index"));
  }
  Buffer<T> work(static_cast<std::size_t>(lwork));
  call(work.data(), static_cast<Int>(lwork), &info);
  if (absl::Status st = check_info<T>(op, name, info); !st.ok()) return st;
  return info;
}

// ---- LAPACK ----------------------------------------------------------------------------------

inline void gesdd(char jobz, Int m, Int n, double* a, Int lda, double* s, double* u, Int ldu,
                  double* vt, Int ldvt, double* work, Int lwork, Int* iwork, Int* info) {
  LAPACK_dgesdd(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info);
}
inline void gesdd(char jobz, Int m, Int n, float* a, Int lda, float* s, float* u, Int ldu,
                  float* vt, Int ldvt, float* work, Int lwork, Int* iwork, Int* info) {
  LAPACK_sgesdd(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info);
}

inline void gejsv(char joba, char jobu, char jobv, char jobr, char jobt, char jobp, Int m, Int n,
                  double* a, Int lda, double* sva, double* u, Int ldu, double* v, Int ldv,
                  double* work, Int lwork, Int* iwork, Int* info) {
  LAPACK_dgejsv(&joba, &jobu, &jobv, &jobr, &jobt, &jobp, &m, &n, a, &lda, sva, u, &ldu, v, &ldv,
                work, &lwork, iwork, info);
}
inline void gejsv(char joba, char jobu, char jobv, char jobr, char jobt, char jobp, Int m, Int n,
                  float* a, Int lda, float* sva, float* u, Int ldu, float* v, Int ldv, float* work,
                  Int lwork, Int* iwork, Int* info) {
  LAPACK_sgejsv(&joba, &jobu, &jobv, &jobr, &jobt, &jobp, &m, &n, a, &lda, sva, u, &ldu, v, &ldv,
                work, &lwork, iwork, info);
}

inline void geqrf(Int m, Int n, double* a, Int lda, double* tau, double* work, Int lwork,
                  Int* info) {
  LAPACK_dgeqrf(&m, &n, a, &lda, tau, work, &lwork, info);
}
inline void geqrf(Int m, Int n, float* a, Int lda, float* tau, float* work, Int lwork, Int* info) {
  LAPACK_sgeqrf(&m, &n, a, &lda, tau, work, &lwork, info);
}

inline void orgqr(Int m, Int n, Int k, double* a, Int lda, const double* tau, double* work,
                  Int lwork, Int* info) {
  LAPACK_dorgqr(&m, &n, &k, a, &lda, tau, work, &lwork, info);
}
inline void orgqr(Int m, Int n, Int k, float* a, Int lda, const float* tau, float* work, Int lwork,
                  Int* info) {
  LAPACK_sorgqr(&m, &n, &k, a, &lda, tau, work, &lwork, info);
}

inline void ormqr(char side, char trans, Int m, Int n, Int k, const double* a, Int lda,
                  const double* tau, double* c, Int ldc, double* work, Int lwork, Int* info) {
  LAPACK_dormqr(&side, &trans, &m, &n, &k, a, &lda, tau, c, &ldc, work, &lwork, info);
}
inline void ormqr(char side, char trans, Int m, Int n, Int k, const float* a, Int lda,
                  const float* tau, float* c, Int ldc, float* work, Int lwork, Int* info) {
  LAPACK_sormqr(&side, &trans, &m, &n, &k, a, &lda, tau, c, &ldc, work, &lwork, info);
}

inline void potrf(char uplo, Int n, double* a, Int lda, Int* info) {
  LAPACK_dpotrf(&uplo, &n, a, &lda, info);
}
inline void potrf(char uplo, Int n, float* a, Int lda, Int* info) {
  LAPACK_spotrf(&uplo, &n, a, &lda, info);
}

inline void getrf(Int m, Int n, double* a, Int lda, Int* ipiv, Int* info) {
  LAPACK_dgetrf(&m, &n, a, &lda, ipiv, info);
}
inline void getrf(Int m, Int n, float* a, Int lda, Int* ipiv, Int* info) {
  LAPACK_sgetrf(&m, &n, a, &lda, ipiv, info);
}

inline void gecon(char norm, Int n, const double* a, Int lda, double anorm, double* rcond,
                  double* work, Int* iwork, Int* info) {
  LAPACK_dgecon(&norm, &n, a, &lda, &anorm, rcond, work, iwork, info);
}
inline void gecon(char norm, Int n, const float* a, Int lda, float anorm, float* rcond, float* work,
                  Int* iwork, Int* info) {
  LAPACK_sgecon(&norm, &n, a, &lda, &anorm, rcond, work, iwork, info);
}

inline void trcon(char norm, char uplo, char diag, Int n, const double* a, Int lda, double* rcond,
                  double* work, Int* iwork, Int* info) {
  LAPACK_dtrcon(&norm, &uplo, &diag, &n, a, &lda, rcond, work, iwork, info);
}
inline void trcon(char norm, char uplo, char diag, Int n, const float* a, Int lda, float* rcond,
                  float* work, Int* iwork, Int* info) {
  LAPACK_strcon(&norm, &uplo, &diag, &n, a, &lda, rcond, work, iwork, info);
}

inline double lange(char norm, Int m, Int n, const double* a, Int lda, double* work) {
  return LAPACK_dlange(&norm, &m, &n, a, &lda, work);
}
inline double lange(char norm, Int m, Int n, const float* a, Int lda, float* work) {
  return static_cast<double>(LAPACK_slange(&norm, &m, &n, a, &lda, work));
}

inline void syevd(char jobz, char uplo, Int n, double* a, Int lda, double* w, double* work,
                  Int lwork, Int* iwork, Int liwork, Int* info) {
  LAPACK_dsyevd(&jobz, &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, info);
}
inline void syevd(char jobz, char uplo, Int n, float* a, Int lda, float* w, float* work, Int lwork,
                  Int* iwork, Int liwork, Int* info) {
  LAPACK_ssyevd(&jobz, &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, info);
}

// ---- CBLAS (column-major) --------------------------------------------------------------------

inline void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, Int m, Int n, Int k, double alpha,
                 const double* a, Int lda, const double* b, Int ldb, double beta, double* c,
                 Int ldc) {
  cblas_dgemm(CblasColMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
inline void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, Int m, Int n, Int k, double alpha,
                 const float* a, Int lda, const float* b, Int ldb, double beta, float* c, Int ldc) {
  cblas_sgemm(CblasColMajor, ta, tb, m, n, k, static_cast<float>(alpha), a, lda, b, ldb,
              static_cast<float>(beta), c, ldc);
}

/// C (upper triangle) = alpha * A^T A + beta * C for an k x n matrix A.
inline void syrk_t(Int n, Int k, double alpha, const double* a, Int lda, double beta, double* c,
                   Int ldc) {
  cblas_dsyrk(CblasColMajor, CblasUpper, CblasTrans, n, k, alpha, a, lda, beta, c, ldc);
}
inline void syrk_t(Int n, Int k, double alpha, const float* a, Int lda, double beta, float* c,
                   Int ldc) {
  cblas_ssyrk(CblasColMajor, CblasUpper, CblasTrans, n, k, static_cast<float>(alpha), a, lda,
              static_cast<float>(beta), c, ldc);
}

/// B = B * op(A) ^ -1 for an upper triangular n x n A (B is m x n).
inline void trsm_right_upper(CBLAS_TRANSPOSE ta, Int m, Int n, const double* a, Int lda, double* b,
                             Int ldb) {
  cblas_dtrsm(CblasColMajor, CblasRight, CblasUpper, ta, CblasNonUnit, m, n, 1.0, a, lda, b, ldb);
}
inline void trsm_right_upper(CBLAS_TRANSPOSE ta, Int m, Int n, const float* a, Int lda, float* b,
                             Int ldb) {
  cblas_strsm(CblasColMajor, CblasRight, CblasUpper, ta, CblasNonUnit, m, n, 1.0f, a, lda, b, ldb);
}

/// B = B * A for an upper triangular n x n A (B is m x n).
inline void trmm_right_upper(Int m, Int n, const double* a, Int lda, double* b, Int ldb) {
  cblas_dtrmm(CblasColMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, m, n, 1.0, a, lda,
              b, ldb);
}
inline void trmm_right_upper(Int m, Int n, const float* a, Int lda, float* b, Int ldb) {
  cblas_strmm(CblasColMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, m, n, 1.0f, a, lda,
              b, ldb);
}

}  // namespace gcompute::kernels::cpu::detail
