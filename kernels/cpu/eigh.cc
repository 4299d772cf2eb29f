// SPDX-License-Identifier: Apache-2.0
// cpu::eigh through LAPACK ?syevd.
#include "gcompute/kernels/cpu/eigh.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "detail/buffer.hpp"
#include "detail/dense.hpp"
#include "detail/lapack.hpp"
#include "detail/lapack_gate.hpp"

namespace gcompute::kernels::cpu {
namespace {

using detail::Int;

constexpr const char* kOp = "eigh";

// One matrix. The row-major lower triangle is the column-major upper one (uplo 'U'). Returns
// whether LAPACK converged.
template <typename T>
absl::StatusOr<bool> eigh_one(const T* a, T* w, T* v, Int n, bool vectors) {
  detail::Buffer<T> z(a, a + static_cast<std::int64_t>(n) * n);
  const Int liwork = vectors ? 3 + 5 * n : 1;
  std::vector<Int> iwork(static_cast<std::size_t>(liwork));
  absl::StatusOr<Int> info =
      detail::call_with_workspace<T>(kOp, "syevd", [&](T* work, Int lwork, Int* inf) {
        detail::syevd(vectors ? 'V' : 'N', 'U', n, z.data(), n, w, work, lwork, iwork.data(),
                      liwork, inf);
      });
  // Column-major eigenvectors (columns) to row-major V with the same columns.
  if (info.ok() && vectors) detail::transpose(z.data(), v, n, n);
  if (!info.ok()) return info.status();
  return *info == 0;
}

/// eigh_one through detail::run_cancellable, on copies that the call owns (?syevd cannot be
/// interrupted).
template <typename T>
absl::StatusOr<bool> eigh_one_cancellable(const T* a, T* w, T* v, Int n, bool vectors,
                                          StopToken stop) {
  struct Owned {
    detail::Buffer<T> a, w, v;
    bool converged = false;
  };
  const std::int64_t nn = static_cast<std::int64_t>(n) * n;
  auto owned = std::make_shared<Owned>();
  owned->a.assign(a, a + nn);
  owned->w.resize(static_cast<std::size_t>(n));
  if (vectors) owned->v.resize(static_cast<std::size_t>(nn));
  absl::Status st = detail::run_cancellable(kOp, stop, [owned, n, vectors] {
    absl::StatusOr<bool> r =
        eigh_one(owned->a.data(), owned->w.data(), vectors ? owned->v.data() : nullptr, n, vectors);
    if (!r.ok()) return r.status();
    owned->converged = *r;
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  std::copy(owned->w.begin(), owned->w.end(), w);
  if (vectors) std::copy(owned->v.begin(), owned->v.end(), v);
  return owned->converged;
}

template <typename T>
absl::StatusOr<EighInfo> eigh_typed(const T* a, T* w, T* v, const EighShape& shape,
                                    StopToken stop) {
  const std::int64_t n = shape.n, stride = n * n;
  for (std::int64_t b = 0; b < shape.batch; ++b) {
    const std::int64_t i = detail::first_non_finite(a + b * stride, stride);
    if (i >= 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "eigh: matrix ", b, " has a non-finite element at (", i / n, ", ", i % n, ")"));
    }
  }
  if (absl::Status st = check_symmetric(a, shape); !st.ok()) return st;
  if (n == 0) return EighInfo{true};

  std::vector<char> converged(static_cast<std::size_t>(shape.batch), 1);
  const bool small = n <= detail::kSmallMatrixDim;
  absl::Status st = detail::run_batch(kOp, shape.batch, small, stop, [&](std::int64_t b) {
    const Int nn = static_cast<Int>(n);
    T* vb = shape.compute_vectors ? v + b * stride : nullptr;
    // Small matrices take milliseconds: they are cancelled between items.
    absl::StatusOr<bool> r =
        small
            ? eigh_one(a + b * stride, w + b * n, vb, nn, shape.compute_vectors)
            : eigh_one_cancellable(a + b * stride, w + b * n, vb, nn, shape.compute_vectors, stop);
    if (!r.ok()) return r.status();
    converged[b] = *r ? 1 : 0;
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return EighInfo{std::all_of(converged.begin(), converged.end(), [](char c) { return c != 0; })};
}

}  // namespace

absl::StatusOr<EighInfo> eigh(const void* a, void* w, void* v, const EighShape& shape,
                              StopToken stop) {
  if (absl::Status st = validate(shape); !st.ok()) return st;
  if (shape.batch == 0) return EighInfo{true};
  // syevd's integer workspace is 3 + 5n.
  const std::int64_t limit = (std::numeric_limits<Int>::max() - 3) / 10;
  if (shape.n > limit) {
    return absl::InvalidArgumentError(absl::StrCat(
        "eigh: n=", shape.n, " is larger than LAPACK's 32-bit indexing allows (", limit, ")"));
  }
  if (shape.n > 0 && (a == nullptr || w == nullptr)) {
    return absl::InvalidArgumentError("eigh: null input or eigenvalue buffer");
  }
  if (shape.n > 0 && shape.compute_vectors && v == nullptr) {
    return absl::InvalidArgumentError("eigh: compute_vectors needs a V buffer");
  }
  if (shape.dtype == DType::kF32) {
    return eigh_typed(static_cast<const float*>(a), static_cast<float*>(w), static_cast<float*>(v),
                      shape, stop);
  }
  return eigh_typed(static_cast<const double*>(a), static_cast<double*>(w), static_cast<double*>(v),
                    shape, stop);
}

}  // namespace gcompute::kernels::cpu
