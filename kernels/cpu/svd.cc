// SPDX-License-Identifier: Apache-2.0
// cpu::svd: input checks, the batch, and the LAPACK drivers ?gesdd (kAuto) and ?gejsv
// (kJacobi). kPolar is in svd_polar.cc.
#include "gcompute/kernels/cpu/svd.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "detail/buffer.hpp"
#include "detail/dense.hpp"
#include "detail/lapack.hpp"
#include "detail/lapack_gate.hpp"
#include "detail/svd_tall.hpp"

namespace gcompute::kernels::cpu {
namespace {

using detail::Int;

constexpr const char* kOp = "svd";

// ?gesdd on the row-major matrix read as its column-major transpose A^T (n x m): LAPACK's left
// factor of A^T is our Vt and its right factor our U, both already in row-major order, so
// nothing is transposed.
template <typename T>
absl::StatusOr<SvdInfo> svd_gesdd(const T* a, T* s, T* u, T* vt, const SvdShape& shape) {
  const Int m = static_cast<Int>(shape.n), n = static_cast<Int>(shape.m);  // of A^T
  const Int p = std::min(m, n);
  detail::Buffer<T> at(a, a + static_cast<std::int64_t>(m) * n);
  const char jobz = !shape.compute_uv ? 'N' : shape.full_matrices ? 'A' : 'S';
  T dummy[1];
  T* lu = shape.compute_uv ? vt : dummy;
  T* lvt = shape.compute_uv ? u : dummy;
  const Int ldu = shape.compute_uv ? m : 1;
  const Int ldvt = shape.compute_uv ? static_cast<Int>(svd_u_cols(shape)) : 1;
  std::vector<Int> iwork(static_cast<std::size_t>(8) * p);
  absl::StatusOr<Int> info =
      detail::call_with_workspace<T>(kOp, "gesdd", [&](T* work, Int lwork, Int* inf) {
        detail::gesdd(jobz, m, n, at.data(), m, s, lu, ldu, lvt, ldvt, work, lwork, iwork.data(),
                      inf);
      });
  if (!info.ok()) return info.status();
  return SvdInfo{0, *info == 0};
}

// LAPACK's documented minimum workspace of ?gejsv (it has no workspace query), plus room for
// blocked QR and ORMQR (block size up to 128).
std::int64_t gejsv_lwork(std::int64_t m, std::int64_t n, bool vectors) {
  const std::int64_t base = vectors ? std::max(2 * m + n, 6 * n + 2 * n * n)
                                    : std::max<std::int64_t>({2 * m + n, 4 * n + 1, 7});
  return base + 3 * n + (m + n + 1) * 128;
}

}  // namespace

namespace detail {

template <typename T>
absl::StatusOr<SvdInfo> gejsv_tall(const TallSvdArgs<T>& x) {
  const bool vectors = x.ub != nullptr;
  const std::int64_t lwork = gejsv_lwork(x.m, x.n, vectors);
  if (!fits_int(lwork)) {
    return absl::ResourceExhaustedError(
        absl::StrCat(kOp, ": LAPACK ", routine<T>("gejsv"),
                     " needs more workspace than 32-bit LAPACK can index"));
  }
  detail::Buffer<T> work(static_cast<std::size_t>(lwork));
  std::vector<Int> iwork(static_cast<std::size_t>(x.m) + 3 * static_cast<std::size_t>(x.n) + 3);
  T dummy[1];
  // JOBA 'F': full (row and column) pivoting, for relative accuracy when A = D1 * C * D2.
  // JOBR 'R': the recommended range (only values near sigma_1 * underflow/overflow may be
  // set to zero).
  // JOBT 'N': never work on the transpose instead. With 'T' (transpose when an entropy test
  // predicts faster convergence) two-sided graded matrices lost up to 1e6 eps of relative
  // accuracy in test_cpu_svd_graded.
  const char jobu = !vectors ? 'N' : x.ucols == x.m ? 'F' : 'U';
  const char jobv = vectors ? 'V' : 'N';
  Int info = 0;
  gejsv('F', jobu, jobv, 'R', 'N', 'N', x.m, x.n, x.b, x.m, x.s, vectors ? x.ub : dummy,
        vectors ? x.m : 1, vectors ? x.vb : dummy, vectors ? x.n : 1, work.data(),
        static_cast<Int>(lwork), iwork.data(), &info);
  if (absl::Status st = check_info<T>(kOp, "gejsv", info); !st.ok()) return st;
  // The values are SVA * WORK(1) / WORK(2) (a factored form kept where they would overflow).
  const double scale = static_cast<double>(work[0]) / static_cast<double>(work[1]);
  if (scale != 1.0) {
    for (Int i = 0; i < x.n; ++i) x.s[i] = saturate<T>(static_cast<double>(x.s[i]) * scale);
  }
  // ?gejsv returns them sorted; keep the contract even if a path did not.
  if (!std::is_sorted(x.s, x.s + x.n, [](T l, T r) { return l > r; })) {
    std::vector<Int> order(static_cast<std::size_t>(x.n));
    std::iota(order.begin(), order.end(), Int{0});
    std::stable_sort(order.begin(), order.end(), [&](Int i, Int j) { return x.s[i] > x.s[j]; });
    auto permute_columns = [&](T* mat, Int rows, Int ld) {
      detail::Buffer<T> copy(mat, mat + static_cast<std::int64_t>(ld) * x.n);
      for (Int k = 0; k < x.n; ++k) {
        std::copy_n(copy.data() + static_cast<std::int64_t>(order[k]) * ld, rows,
                    mat + static_cast<std::int64_t>(k) * ld);
      }
    };
    detail::Buffer<T> sorted(static_cast<std::size_t>(x.n));
    for (Int k = 0; k < x.n; ++k) sorted[k] = x.s[order[k]];
    std::copy(sorted.begin(), sorted.end(), x.s);
    if (vectors) {
      permute_columns(x.ub, x.m, x.m);
      permute_columns(x.vb, x.n, x.n);
    }
  }
  return SvdInfo{0, info == 0};
}

template absl::StatusOr<SvdInfo> gejsv_tall<float>(const TallSvdArgs<float>&);
template absl::StatusOr<SvdInfo> gejsv_tall<double>(const TallSvdArgs<double>&);

}  // namespace detail

namespace {

template <typename T>
absl::StatusOr<SvdInfo> svd_one(const T* a, T* s, T* u, T* vt, const SvdShape& shape,
                                StopToken stop) {
  switch (shape.method) {
    case SvdMethod::kAuto:
      return svd_gesdd(a, s, u, vt, shape);
    case SvdMethod::kJacobi:
      return detail::svd_via_tall(a, s, u, vt, shape, [](const detail::TallSvdArgs<T>& x) {
        return detail::gejsv_tall<T>(x);
      });
    case SvdMethod::kPolar: {
      const int max_iterations = shape.max_sweeps > 0 ? shape.max_sweeps : kSvdDefaultMaxSweeps;
      return detail::svd_via_tall(a, s, u, vt, shape, [&](const detail::TallSvdArgs<T>& x) {
        return detail::polar_tall<T>(x, max_iterations, stop);
      });
    }
  }
  return absl::InternalError("svd: unknown method");
}

/// svd_one through detail::run_cancellable, on copies of the input and outputs that the call
/// owns (the LAPACK drivers cannot be interrupted; QDWH polls `stop` itself).
template <typename T>
absl::StatusOr<SvdInfo> svd_one_cancellable(const T* a, T* s, T* u, T* vt, const SvdShape& shape,
                                            StopToken stop) {
  if (shape.method == SvdMethod::kPolar) return svd_one(a, s, u, vt, shape, stop);
  const std::int64_t m = shape.m, n = shape.n, p = std::min(m, n);
  struct Owned {
    detail::Buffer<T> a, s, u, vt;
    SvdInfo info;
  };
  auto owned = std::make_shared<Owned>();
  owned->a.assign(a, a + m * n);
  owned->s.resize(static_cast<std::size_t>(p));
  if (u != nullptr) {
    owned->u.resize(static_cast<std::size_t>(m * svd_u_cols(shape)));
    owned->vt.resize(static_cast<std::size_t>(svd_vt_rows(shape) * n));
  }
  absl::Status st = detail::run_cancellable(kOp, stop, [owned, shape, vectors = u != nullptr] {
    absl::StatusOr<SvdInfo> r =
        svd_one(owned->a.data(), owned->s.data(), vectors ? owned->u.data() : nullptr,
                vectors ? owned->vt.data() : nullptr, shape, StopToken());
    if (!r.ok()) return r.status();
    owned->info = *r;
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  std::copy(owned->s.begin(), owned->s.end(), s);
  if (u != nullptr) {
    std::copy(owned->u.begin(), owned->u.end(), u);
    std::copy(owned->vt.begin(), owned->vt.end(), vt);
  }
  return owned->info;
}

template <typename T>
absl::StatusOr<SvdInfo> svd_typed(const T* a, T* s, T* u, T* vt, const SvdShape& shape,
                                  StopToken stop) {
  const std::int64_t m = shape.m, n = shape.n, p = std::min(m, n);
  const std::int64_t uc = svd_u_cols(shape), vr = svd_vt_rows(shape);
  const std::int64_t a_stride = m * n, u_stride = m * uc, vt_stride = vr * n;

  // Non-finite input has no SVD (LAPACK would reject it as a bad argument).
  for (std::int64_t b = 0; b < shape.batch; ++b) {
    const std::int64_t i = detail::first_non_finite(a + b * a_stride, a_stride);
    if (i >= 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "svd: matrix ", b, " has a non-finite element at (", i / n, ", ", i % n, ")"));
    }
  }
  if (p == 0) {  // no values; full U and Vt are identities
    if (shape.compute_uv) {
      for (std::int64_t b = 0; b < shape.batch; ++b) {
        detail::set_identity(u + b * u_stride, m, uc, m);  // U is m x m or m x 0
        detail::set_identity(vt + b * vt_stride, n, vr, n);
      }
    }
    return SvdInfo{0, true};
  }

  std::vector<SvdInfo> infos(static_cast<std::size_t>(shape.batch));
  const bool small = std::max(m, n) <= detail::kSmallMatrixDim;
  // Small matrices take milliseconds: they are cancelled between items.
  const auto one = small ? svd_one<T> : svd_one_cancellable<T>;
  absl::Status st = detail::run_batch(kOp, shape.batch, small, stop, [&](std::int64_t b) {
    absl::StatusOr<SvdInfo> r =
        one(a + b * a_stride, s + b * p, shape.compute_uv ? u + b * u_stride : nullptr,
            shape.compute_uv ? vt + b * vt_stride : nullptr, shape, stop);
    if (!r.ok()) return r.status();
    infos[b] = *r;
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  SvdInfo total{0, true};
  for (const SvdInfo& i : infos) {
    total.sweeps = std::max(total.sweeps, i.sweeps);
    total.converged = total.converged && i.converged;
  }
  return total;
}

}  // namespace

absl::StatusOr<SvdInfo> svd(const void* a, void* s, void* u, void* vt, const SvdShape& shape,
                            StopToken stop) {
  if (absl::Status st = validate(shape); !st.ok()) return st;
  if (shape.batch == 0) return SvdInfo{0, true};
  // LAPACK indexes with 32-bit integers; QDWH stacks 2n rows.
  const std::int64_t limit = std::numeric_limits<Int>::max() / 2;
  if (shape.m > limit || shape.n > limit) {
    return absl::InvalidArgumentError(absl::StrCat("svd: ", shape.m, "x", shape.n,
                                                   " has a side longer than LAPACK's 32-bit "
                                                   "indexing allows (",
                                                   limit, ")"));
  }
  if (shape.m * shape.n > 0 && a == nullptr) {
    return absl::InvalidArgumentError("svd: null input buffer");
  }
  if (std::min(shape.m, shape.n) > 0 && s == nullptr) {
    return absl::InvalidArgumentError("svd: null S buffer");
  }
  if (shape.compute_uv && ((shape.m > 0 && svd_u_cols(shape) > 0 && u == nullptr) ||
                           (shape.n > 0 && svd_vt_rows(shape) > 0 && vt == nullptr))) {
    return absl::InvalidArgumentError("svd: compute_uv needs U and Vt buffers");
  }
  if (shape.dtype == DType::kF32) {
    return svd_typed(static_cast<const float*>(a), static_cast<float*>(s), static_cast<float*>(u),
                     static_cast<float*>(vt), shape, stop);
  }
  return svd_typed(static_cast<const double*>(a), static_cast<double*>(s), static_cast<double*>(u),
                   static_cast<double*>(vt), shape, stop);
}

}  // namespace gcompute::kernels::cpu
