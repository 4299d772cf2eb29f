// SPDX-License-Identifier: Apache-2.0
// cuda::apsp: blocked Floyd-Warshall (device code in detail/apsp_kernels.cuh).
#include <algorithm>
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "detail/apsp_kernels.cuh"
#include "gcompute/kernels/cuda/apsp.hpp"
#include "gcompute/kernels/cuda/check.hpp"

namespace gcompute::kernels::cuda {
namespace {

using detail::ApspFlags;
using detail::kTile;

constexpr std::size_t kFlagsBytes = 256;  // keeps the matrices after it 256-byte aligned

std::int64_t padded(std::int64_t n) {
  return (n + kTile - 1) / kTile * kTile;
}

/// Whether the matrices live in the workspace (n not a multiple of the tile) or in dist/next.
bool needs_padding(std::int64_t n) {
  return n % kTile != 0;
}

int grid_for(long long count, int threads) {
  return static_cast<int>(std::clamp<long long>((count + threads - 1) / threads, 1, 132 * 16));
}

/// Destroys the events the stop-token pipeline uses, on every return path.
struct EventPair {
  cudaEvent_t ev[2] = {nullptr, nullptr};
  ~EventPair() {
    for (cudaEvent_t e : ev) {
      if (e != nullptr) static_cast<void>(cudaEventDestroy(e));
    }
  }
};

/// Shared memory of one minplus_kernel instantiation; raises its limit once per process.
template <class Ops, int kTy, int kRm, bool kNext>
absl::Status prepare_minplus(int& smem_bytes) {
  smem_bytes = detail::StageLayout<typename Ops::T, kNext>::kBytes;
  static const cudaError_t err =
      cudaFuncSetAttribute(detail::minplus_kernel<Ops, kTy, kRm, kNext>,
                           cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
  GC_CUDA_TRY(err);
  return absl::OkStatus();
}

template <class Ops, bool kNext>
absl::Status run_rounds(const Context& ctx, typename Ops::T* d, int* nxt, int* hop,
                        std::int64_t npad, ApspFlags* flags, const StopToken& stop) {
  constexpr int kTy = kNext ? 32 : 16;
  constexpr int kRm = kNext ? 4 : 8;
  int smem = 0;
  if (absl::Status s = prepare_minplus<Ops, kTy, kRm, kNext>(smem); !s.ok()) return s;
  const int nb = static_cast<int>(npad / kTile);
  const int ld = static_cast<int>(npad);

  // Cancellation: the host enqueues rounds ahead of the GPU, so it waits on an event recorded
  // `per_check` rounds earlier before polling the token. That keeps at most 2 * per_check rounds
  // (about 10 ms of work) queued, with no bubble between rounds.
  const double round_relax = static_cast<double>(npad) * static_cast<double>(npad) * kTile;
  const int per_check =
      static_cast<int>(std::clamp(5e-3 * 1.2e13 / (kNext ? 3.0 : 1.0) / round_relax, 1.0, 64.0));
  EventPair events;
  for (cudaEvent_t& e : events.ev)
    GC_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  bool pending[2] = {false, false};

  for (int kb = 0; kb < nb; ++kb) {
    detail::phase1_kernel<Ops, kNext><<<1, 1024, 0, ctx.stream>>>(d, nxt, hop, ld, kb, flags);
    GC_CUDA_CHECK_LAUNCH("apsp phase1");
    if (nb > 1) {
      detail::minplus_kernel<Ops, kTy, kRm, kNext>
          <<<2 * (nb - 1), 16 * kTy, smem, ctx.stream>>>(d, nxt, hop, ld, kb, nb, 2, flags);
      GC_CUDA_CHECK_LAUNCH("apsp phase2");
      detail::minplus_kernel<Ops, kTy, kRm, kNext>
          <<<dim3(nb - 1, nb - 1), 16 * kTy, smem, ctx.stream>>>(d, nxt, hop, ld, kb, nb, 3, flags);
      GC_CUDA_CHECK_LAUNCH("apsp phase3");
    }
    if ((kb + 1) % per_check == 0 && kb + 1 < nb) {
      const int slot = ((kb + 1) / per_check) & 1;
      if (pending[slot]) GC_CUDA_TRY(cudaEventSynchronize(events.ev[slot]));
      if (stop.stop_requested()) {
        GC_CUDA_TRY(cudaStreamSynchronize(ctx.stream));  // nothing may still use the buffers
        return absl::CancelledError(
            absl::StrCat("apsp cancelled after round ", kb + 1, " of ", nb));
      }
      GC_CUDA_TRY(cudaEventRecord(events.ev[slot], ctx.stream));
      pending[slot] = true;
    }
  }
  return absl::OkStatus();
}

template <class Ops>
absl::Status run_typed(const Context& ctx, const typename Ops::T* w, typename Ops::T* dist,
                       int* next, std::int64_t n, bool next_hop, unsigned char* ws,
                       ApspFlags* flags, typename Ops::T input_inf, typename Ops::T unreachable,
                       typename Ops::T out_inf, const StopToken& stop) {
  using T = typename Ops::T;
  const std::int64_t npad = padded(n);
  T* d = dist;
  int* nx = next_hop ? next : nullptr;
  unsigned char* free_ws = ws + kFlagsBytes;
  const std::size_t plane = static_cast<std::size_t>(npad * npad) * 4;
  if (needs_padding(n)) {
    d = reinterpret_cast<T*>(free_ws);
    free_ws += plane;
    if (next_hop) {
      nx = reinterpret_cast<int*>(free_ws);
      free_ws += plane;
    }
  }
  int* hop = next_hop ? reinterpret_cast<int*>(free_ws) : nullptr;
  detail::init_kernel<Ops>
      <<<grid_for(npad * npad, 256), 256, 0, ctx.stream>>>(w, d, nx, hop, n, npad, input_inf);
  GC_CUDA_CHECK_LAUNCH("apsp init");
  absl::Status st = next_hop ? run_rounds<Ops, true>(ctx, d, nx, hop, npad, flags, stop)
                             : run_rounds<Ops, false>(ctx, d, nx, nullptr, npad, flags, stop);
  if (!st.ok()) return st;
  // f32 in place needs no pass: +inf is both encodings and padding does not exist.
  const bool identity = !needs_padding(n) && unreachable == out_inf;
  if (!identity) {
    detail::finish_kernel<T><<<grid_for(n * n, 256), 256, 0, ctx.stream>>>(
        d, nx, dist, next_hop ? next : nullptr, n, npad, unreachable, out_inf);
    GC_CUDA_CHECK_LAUNCH("apsp finish");
  }
  return absl::OkStatus();
}

}  // namespace

std::size_t apsp_workspace_bytes(const ApspShape& shape) {
  if (!validate(shape).ok() || shape.n == 0) return 0;
  // Padded distances (and next-hops) when n is not a multiple of the tile; with next_hop always
  // the hop-count plane used to break ties between equally short paths.
  const auto np = static_cast<std::size_t>(padded(shape.n));
  std::size_t planes = needs_padding(shape.n) ? (shape.next_hop ? 2 : 1) : 0;
  if (shape.next_hop) ++planes;
  return kFlagsBytes + planes * np * np * 4;
}

absl::StatusOr<ApspInfo> apsp(const Context& ctx, const void* weights, void* dist,
                              std::int32_t* next, const ApspShape& shape, void* workspace,
                              std::size_t workspace_bytes, StopToken stop) {
  if (absl::Status s = validate(shape); !s.ok()) return s;
  ApspInfo info;
  const std::int64_t n = shape.n;
  if (n == 0) return info;
  if (n > (std::int64_t{1} << 24) - kTile) {  // keeps 128 rows of the matrix under 2^31 elements
    return absl::InvalidArgumentError(absl::StrCat("apsp: n=", n, " is too large"));
  }
  const std::size_t need = apsp_workspace_bytes(shape);
  if (workspace_bytes < need || workspace == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("apsp: workspace of ", workspace_bytes, " bytes, needs ", need));
  }
  if (weights == nullptr || dist == nullptr || (shape.next_hop && next == nullptr)) {
    return absl::InvalidArgumentError("apsp: null weights, dist or (with next_hop) next");
  }
  if (stop.stop_requested()) return absl::CancelledError("apsp cancelled before it started");

  auto* ws = static_cast<unsigned char*>(workspace);
  auto* flags = reinterpret_cast<ApspFlags*>(ws);
  ApspFlags init{};
  init.cycle_vertex = std::numeric_limits<int>::max();
  GC_CUDA_TRY(cudaMemcpyAsync(flags, &init, sizeof(init), cudaMemcpyHostToDevice, ctx.stream));

  // Scan the weights: validation, and for i32 the range that picks the arithmetic.
  const long long count = n * n;
  if (shape.dtype == DType::kF32) {
    detail::scan_f32_kernel<<<grid_for(count, 256), 256, 0, ctx.stream>>>(
        static_cast<const float*>(weights), count, flags);
  } else {
    detail::scan_i32_kernel<<<grid_for(count, 256), 256, 0, ctx.stream>>>(
        static_cast<const int*>(weights), count, flags);
  }
  GC_CUDA_CHECK_LAUNCH("apsp scan");
  ApspFlags scanned{};
  GC_CUDA_TRY(
      cudaMemcpyAsync(&scanned, flags, sizeof(scanned), cudaMemcpyDeviceToHost, ctx.stream));
  GC_CUDA_TRY(cudaStreamSynchronize(ctx.stream));
  if (scanned.bad_weight) {
    return absl::InvalidArgumentError(
        shape.dtype == DType::kF32
            ? "apsp: f32 weights must be finite or +inf (found NaN or -inf)"
            : absl::StrCat("apsp: i32 weights must be kI32NoEdge or within +-", kI32MaxAbsWeight));
  }

  const absl::Status st = [&]() -> absl::Status {
    if (shape.dtype == DType::kF32) {
      const float inf = std::numeric_limits<float>::infinity();
      return run_typed<detail::F32Ops>(ctx, static_cast<const float*>(weights),
                                       static_cast<float*>(dist), next, n, shape.next_hop, ws,
                                       flags, inf, inf, inf, stop);
    } else {
      // Fast DPX path when every finite distance (<= (n-1) * max_pos) stays below every value that
      // went through the sentinel (>= S - (n-1) * max_neg), and nothing leaves [-2^30, S].
      const std::int64_t s_inf = detail::I32FastOps::kInf;
      const std::int64_t hi = (n - 1) * static_cast<std::int64_t>(scanned.max_pos);
      const std::int64_t lo_drop = (n - 1) * static_cast<std::int64_t>(scanned.max_neg);
      if (hi + lo_drop < s_inf) {
        return run_typed<detail::I32FastOps>(
            ctx, static_cast<const int*>(weights), static_cast<int*>(dist), next, n, shape.next_hop,
            ws, flags, kI32NoEdge, static_cast<int>(s_inf - lo_drop), kI32NoEdge, stop);
      }
      return run_typed<detail::I32SatOps>(ctx, static_cast<const int*>(weights),
                                          static_cast<int*>(dist), next, n, shape.next_hop, ws,
                                          flags, kI32NoEdge, kI32NoEdge, kI32NoEdge, stop);
    }
  }();
  if (!st.ok()) return st;

  ApspFlags done{};
  GC_CUDA_TRY(cudaMemcpyAsync(&done, flags, sizeof(done), cudaMemcpyDeviceToHost, ctx.stream));
  GC_CUDA_TRY(cudaStreamSynchronize(ctx.stream));
  if (done.negative) {
    info.negative_cycle = true;
    info.cycle_vertex = done.cycle_vertex;
  }
  return info;
}

}  // namespace gcompute::kernels::cuda
