// SPDX-License-Identifier: Apache-2.0
// cuda::eigh: symmetric eigendecomposition on the GPU.
//
// n <= kEighJacobiMaxN: parallel cyclic Jacobi in registers, every matrix of a launch held by
// its own group of lanes, all sweeps in one kernel (detail/eigh_kernels.cuh: one-sided Jacobi
// on the matrix scaled and shifted to be positive definite), launched in chunks of the batch
// with a cancellation check between them. f32 computes in float, f64 in double; the rotations
// run until one sweep rotates nothing, at most kMaxSweeps.
//
// Larger n: cusolverDnXsyevd (divide and conquer) on one matrix at a time. A row-major matrix
// whose lower triangle is read is the column-major matrix whose upper triangle is, so each
// matrix is copied into the workspace (syevd overwrites its input with the vectors) and solved
// with CUBLAS_FILL_MODE_UPPER; the eigenvalues are put in ascending order (syevd can leave equal
// neighbours an ulp out of order) and the column-major vectors transposed into row-major V in
// that order.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "detail/cusolver_params.hpp"
#include "detail/eigh_kernels.cuh"
#include "detail/launch_helpers.hpp"
#include "detail/stop_pacer.hpp"
#include "detail/workspace_carver.hpp"
#include "gcompute/kernels/cuda/check.hpp"
#include "gcompute/kernels/cuda/eigh.hpp"

namespace gcompute::kernels::cuda {
namespace {

// Random matrices take 6 to 10 sweeps at n <= 32, counting the last one, which rotates nothing
// (host emulation of the kernel); convergence is quadratic, so a matrix still rotating after 30
// is reported (converged = false).
constexpr int kMaxSweeps = 30;
constexpr std::int64_t kMaxChunk = 1 << 16;  // most matrices per Jacobi launch

using detail::cuda_type;
using detail::CusolverParams;

bool uses_jacobi(const EighShape& s) {
  return s.n <= kEighJacobiMaxN;
}

/// The syevd driver's workspace: per-matrix info words, the working copy of one matrix (syevd
/// overwrites its input with the vectors), its eigenvalues and their order, then cuSOLVER's
/// device workspace.
template <typename T>
struct SyevdBuffers {
  int* info = nullptr;
  T* copy = nullptr;
  T* values = nullptr;  ///< syevd's eigenvalues, before ascending_order_kernel
  int* perm = nullptr;  ///< their ascending order
  void* work = nullptr;
  std::size_t work_bytes = 0;
  std::size_t host_bytes = 0;  ///< cuSOLVER's host workspace (usually none)
};

/// The syevd buffers, carved by c (whose null base only counts bytes). `a` and `w` may be null:
/// cuSOLVER's size query reads neither.
template <typename T>
absl::StatusOr<SyevdBuffers<T>> carve_syevd(const Context& ctx, cusolverDnParams_t params,
                                            const EighShape& s, const T* a, const T* w,
                                            detail::WorkspaceCarver& c) {
  if (ctx.cusolver == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "eigh: n=", s.n, " is above ", kEighJacobiMaxN, " and needs ctx.cusolver (syevd)"));
  }
  constexpr cudaDataType_t type = cuda_type<T>();
  SyevdBuffers<T> b;
  GC_CUSOLVER_TRY(cusolverDnXsyevd_bufferSize(
      ctx.cusolver, params,
      s.compute_vectors ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR,
      CUBLAS_FILL_MODE_UPPER, s.n, type, a, s.n, type, w, type, &b.work_bytes, &b.host_bytes));
  b.info = c.take<int>(s.batch);
  b.copy = c.take<T>(s.n * s.n);
  b.values = c.take<T>(s.n);
  b.perm = c.take<int>(s.n);
  b.work = c.take<char>(static_cast<std::int64_t>(std::max<std::size_t>(b.work_bytes, 1)));
  return b;
}

template <typename T>
absl::StatusOr<std::size_t> syevd_workspace_bytes(const Context& ctx, const EighShape& s) {
  GC_ASSIGN_OR_RETURN(const CusolverParams params, detail::create_cusolver_params());
  detail::WorkspaceCarver c(nullptr);
  GC_RETURN_IF_ERROR(carve_syevd<T>(ctx, params.value(), s, nullptr, nullptr, c).status());
  return c.bytes();
}

absl::Status cancelled_after(std::int64_t done, std::int64_t batch) {
  return absl::CancelledError(
      absl::StrCat("eigh: cancelled after ", done, " of ", batch, " matrices"));
}

/// Matrices per Jacobi launch: 2^29 / n^3 (16384 at n = 32), at least 1024 to fill the GPU and
/// at most kMaxChunk, so that the cancellation checks between launches come every few ms (an
/// estimate from the work per matrix, not yet measured on a GPU).
std::int64_t jacobi_chunk(std::int64_t n) {
  const std::int64_t per_matrix = std::max<std::int64_t>(1, n * n * n);
  return std::clamp<std::int64_t>((std::int64_t{1} << 29) / per_matrix, 1024, kMaxChunk);
}

template <typename T>
absl::StatusOr<EighInfo> run_jacobi(const Context& ctx, const T* a, T* w, T* v, const EighShape& s,
                                    int* converged, StopToken stop) {
  const cudaStream_t st = ctx.stream;
  const int n = static_cast<int>(s.n);
  // Nonzero: converged; a matrix that is not clears it.
  GC_CUDA_TRY(cudaMemsetAsync(converged, 1, sizeof(int), st));
  const std::int64_t chunk = jacobi_chunk(s.n);
  detail::StopPacer pacer(st, ctx.events[3], 1, stop);
  for (std::int64_t c0 = 0; c0 < s.batch; c0 += chunk) {
    const std::int64_t cn = std::min(chunk, s.batch - c0);
    const T* ac = a + c0 * s.n * s.n;
    T* wc = w + c0 * s.n;
    T* vc = s.compute_vectors ? v + c0 * s.n * s.n : nullptr;
    // A group of P lanes per matrix, 32 / P matrices a warp (detail/eigh_kernels.cuh).
    const int lanes = n <= 8 ? 8 : (n <= 16 ? 16 : 32);
    const std::int64_t per_block = detail::kEighWarpThreads / lanes;
    const unsigned grid = static_cast<unsigned>((cn + per_block - 1) / per_block);
    if (lanes == 8) {
      detail::warp_eigh_kernel<T, 8><<<grid, detail::kEighWarpThreads, 0, st>>>(
          ac, wc, vc, n, cn, s.compute_vectors, kMaxSweeps, converged);
    } else if (lanes == 16) {
      detail::warp_eigh_kernel<T, 16><<<grid, detail::kEighWarpThreads, 0, st>>>(
          ac, wc, vc, n, cn, s.compute_vectors, kMaxSweeps, converged);
    } else {
      detail::warp_eigh_kernel<T, 32><<<grid, detail::kEighWarpThreads, 0, st>>>(
          ac, wc, vc, n, cn, s.compute_vectors, kMaxSweeps, converged);
    }
    GC_CUDA_CHECK_LAUNCH("warp_eigh_kernel");
    if (c0 + cn < s.batch) {
      const absl::StatusOr<bool> stopping = pacer.stop_after_step();
      if (!stopping.ok()) return stopping.status();
      if (*stopping) return cancelled_after(c0 + cn, s.batch);
    }
  }
  int flag = 0;
  GC_CUDA_TRY(cudaMemcpyAsync(&flag, converged, sizeof(int), cudaMemcpyDeviceToHost, st));
  GC_CUDA_TRY(cudaStreamSynchronize(st));
  return EighInfo{flag != 0};
}

template <typename T>
absl::StatusOr<EighInfo> run_syevd(const Context& ctx, const T* a, T* w, T* v, const EighShape& s,
                                   void* workspace, std::size_t workspace_bytes, StopToken stop) {
  const cudaStream_t st = ctx.stream;
  GC_ASSIGN_OR_RETURN(const CusolverParams params, detail::create_cusolver_params());
  // The query of eigh_workspace_bytes again, now with the operands.
  detail::WorkspaceCarver c(workspace);
  GC_ASSIGN_OR_RETURN(const SyevdBuffers<T> l, carve_syevd<T>(ctx, params.value(), s, a, w, c));
  if (c.bytes() > workspace_bytes) {
    return absl::InternalError(absl::StrCat("eigh: syevd asks for ", c.bytes(),
                                            " bytes of workspace, more than the ", workspace_bytes,
                                            " it asked for before"));
  }
  // cuSOLVER's host workspace (usually none) must outlive the work queued with it: on every
  // return the stream has drained first (`drain` is destroyed before `host_work`).
  std::vector<char> host_work(l.host_bytes);
  struct DrainOnExit {
    cudaStream_t stream;
    bool armed;
    ~DrainOnExit() {
      if (armed) GC_CUDA_TRY_NO_THROW(cudaStreamSynchronize(stream));
    }
  } drain{st, !host_work.empty()};
  constexpr cudaDataType_t type = cuda_type<T>();
  const std::int64_t n = s.n, nn = s.n * s.n;
  const cusolverEigMode_t jobz =
      s.compute_vectors ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
  detail::StopPacer pacer(st, ctx.events[3], 1, stop);
  for (std::int64_t b = 0; b < s.batch; ++b) {
    GC_CUDA_TRY(cudaMemcpyAsync(l.copy, a + b * nn, static_cast<std::size_t>(nn) * sizeof(T),
                                cudaMemcpyDeviceToDevice, st));
    GC_CUSOLVER_TRY(cusolverDnXsyevd(ctx.cusolver, params.value(), jobz, CUBLAS_FILL_MODE_UPPER, n,
                                     type, l.copy, n, type, l.values, type, l.work, l.work_bytes,
                                     host_work.empty() ? nullptr : host_work.data(), l.host_bytes,
                                     l.info + b));
    detail::ascending_order_kernel<T>
        <<<1, detail::kOrderThreads, 0, st>>>(l.values, static_cast<int>(n), l.perm, w + b * n);
    GC_CUDA_CHECK_LAUNCH("ascending_order_kernel");
    if (s.compute_vectors) {
      // Column-major Z (vectors as columns) read as row-major is Z^T: V is its transpose, with
      // the columns in the eigenvalues' order.
      const unsigned tiles =
          static_cast<unsigned>((n + detail::kGatherTile - 1) / detail::kGatherTile);
      detail::gather_transpose_kernel<T>
          <<<dim3(tiles, tiles), dim3(detail::kGatherTile, detail::kGatherRows), 0, st>>>(
              l.copy, l.perm, static_cast<int>(n), v + b * nn);
      GC_CUDA_CHECK_LAUNCH("gather_transpose_kernel");
    }
    if (b + 1 < s.batch) {
      const absl::StatusOr<bool> stopping = pacer.stop_after_step();
      if (!stopping.ok()) return stopping.status();
      if (*stopping) return cancelled_after(b + 1, s.batch);
    }
  }
  std::vector<int> infos(static_cast<std::size_t>(s.batch));
  GC_CUDA_TRY(cudaMemcpyAsync(infos.data(), l.info, infos.size() * sizeof(int),
                              cudaMemcpyDeviceToHost, st));
  GC_CUDA_TRY(cudaStreamSynchronize(st));
  EighInfo out{true};
  for (std::size_t b = 0; b < infos.size(); ++b) {
    if (infos[b] < 0) {
      return absl::InternalError(
          absl::StrCat("eigh: cusolverDnXsyevd rejected parameter ", -infos[b], " for matrix ", b));
    }
    if (infos[b] > 0) out.converged = false;
  }
  return out;
}

template <typename T>
absl::StatusOr<EighInfo> run(const Context& ctx, const void* a, void* w, void* v,
                             const EighShape& s, void* workspace, std::size_t workspace_bytes,
                             StopToken stop) {
  const T* ta = static_cast<const T*>(a);
  T* tw = static_cast<T*>(w);
  T* tv = static_cast<T*>(v);
  if (uses_jacobi(s)) {
    return run_jacobi<T>(ctx, ta, tw, tv, s, static_cast<int*>(workspace), stop);
  }
  return run_syevd<T>(ctx, ta, tw, tv, s, workspace, workspace_bytes, stop);
}

}  // namespace

absl::StatusOr<std::size_t> eigh_workspace_bytes(const Context& ctx, const EighShape& shape) {
  GC_RETURN_IF_ERROR(validate(shape));
  if (shape.batch == 0 || shape.n == 0) return std::size_t{0};
  if (uses_jacobi(shape)) return sizeof(int);  // the converged flag
  return shape.dtype == DType::kF32 ? syevd_workspace_bytes<float>(ctx, shape)
                                    : syevd_workspace_bytes<double>(ctx, shape);
}

absl::StatusOr<EighInfo> eigh(const Context& ctx, const void* a, void* w, void* v,
                              const EighShape& shape, void* workspace, std::size_t workspace_bytes,
                              StopToken stop) {
  GC_RETURN_IF_ERROR(validate(shape));
  if (shape.batch == 0 || shape.n == 0) return EighInfo{true};
  if (a == nullptr || w == nullptr) {
    return absl::InvalidArgumentError("eigh: null input or eigenvalue buffer");
  }
  if (shape.compute_vectors && v == nullptr) {
    return absl::InvalidArgumentError("eigh: compute_vectors needs a V buffer");
  }
  GC_ASSIGN_OR_RETURN(const std::size_t need, eigh_workspace_bytes(ctx, shape));
  if (workspace_bytes < need || workspace == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("eigh: workspace of ", workspace_bytes,
                                                   " bytes is smaller than the ", need, " needed"));
  }
  if (stop.stop_requested()) return absl::CancelledError("eigh: cancelled before the first matrix");
  if (shape.dtype == DType::kF32) {
    return run<float>(ctx, a, w, v, shape, workspace, workspace_bytes, stop);
  }
  return run<double>(ctx, a, w, v, shape, workspace, workspace_bytes, stop);
}

}  // namespace gcompute::kernels::cuda
