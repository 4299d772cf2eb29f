// SPDX-License-Identifier: Apache-2.0
// cuda::apsp: blocked Floyd-Warshall (device code in detail/apsp_kernels.cuh).
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "detail/apsp_kernels.cuh"
#include "detail/apsp_next_hop_kernels.cuh"
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

std::size_t align256(std::size_t bytes) {
  return (bytes + 255) / 256 * 256;
}

/// Candidate first hops kept per row by the next-hop pass: `tuned` (0: the most) but no more
/// than a row can have.
std::int64_t candidate_capacity(std::int64_t n, int tuned) {
  const std::int64_t most = tuned != 0 ? tuned : detail::kMaxCandidates;
  return std::max<std::int64_t>(1, std::min(most, n));
}

/// The pass's scratch: sorted candidate keys per row, then their counts.
std::size_t candidate_keys_bytes(std::int64_t n) {
  return align256(static_cast<std::size_t>(n * candidate_capacity(n, 0)) * 8);
}
std::size_t candidate_bytes(std::int64_t n) {
  return candidate_keys_bytes(n) + align256(static_cast<std::size_t>(n) * 4);
}

/// How cuda::apsp makes next hops: from the distances (then `capacity` and `end_bit` size the
/// pass) or, when `from_distances` is false, by the fused kernel.
struct NextHopPlan {
  bool from_distances = false;
  int capacity = 0;
  int end_bit = 0;
};

int grid_for(long long count, int threads) {
  return static_cast<int>(std::clamp<long long>((count + threads - 1) / threads, 1, 132 * 16));
}

/// `to` waits for what `from` has enqueued so far; nothing to do on one stream.
absl::Status hand_over(cudaStream_t from, cudaStream_t to, cudaEvent_t ev) {
  if (from == to) return absl::OkStatus();
  GC_CUDA_TRY(cudaEventRecord(ev, from));
  GC_CUDA_TRY(cudaStreamWaitEvent(to, ev, 0));
  return absl::OkStatus();
}

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

/// Pivot blocks a round takes. Distances: 2 from 48 blocks (n > 6144) on, where each C tile
/// loaded once per 256-deep product pays off (H200: +7% at n = 8192, +2% at 16384), 1 below,
/// where more, smaller rounds overlap better (-10% at 4096 with 2); 48 is the midpoint of the
/// measured 32 and 64. Next-hop: 1 (its kernel holds three planes; one block keeps its schedule
/// simple). ApspTuning::depth overrides it for distances.
template <bool kNext>
int round_depth(int nb, const ApspTuning& tuning) {
  if constexpr (kNext) {
    return 1;
  } else {
    if (tuning.depth != 0) return tuning.depth;
    return nb >= 48 ? 2 : 1;
  }
}

template <class Ops, bool kNext>
absl::Status run_rounds(const Context& ctx, typename Ops::T* d, int* nxt, int* hop,
                        std::int64_t npad, ApspFlags* flags, const StopToken& stop,
                        const ApspTuning& tuning) {
  using detail::MinplusPart;
  constexpr int kTy = kNext ? 32 : 16;
  constexpr int kRm = kNext ? 4 : 8;
  constexpr int kThreads = 16 * kTy;
  int smem = 0;
  if (absl::Status s = prepare_minplus<Ops, kTy, kRm, kNext>(smem); !s.ok()) return s;
  const int nb = static_cast<int>(npad / kTile);
  const int ld = static_cast<int>(npad);
  const int max_depth = round_depth<kNext>(nb, tuning);

  // The critical path (closing the next round's band) runs on the higher-priority stream, the
  // bulk of each round on the lane's stream; one stream does both in order when the caller has
  // no second one.
  const cudaStream_t bulk = ctx.stream;
  const cudaStream_t crit = ctx.priority_stream.is_default() ? bulk : ctx.priority_stream.value();
  // The caller's events: 0 inputs ready, 1 band closed, 2 bulk done, 3-4 stop-token pipeline.
  const std::array<cudaEvent_t, kContextEvents>& ev = ctx.events;
  // On an early return the lane's stream must still cover everything enqueued on `crit`, since
  // the caller frees the buffers once that stream is idle.
  struct Join {
    cudaStream_t from, to;
    cudaEvent_t ev;
    bool done = false;
    ~Join() {
      if (!done && from != to) {
        GC_CUDA_TRY_NO_THROW(cudaEventRecord(ev, from));
        GC_CUDA_TRY_NO_THROW(cudaStreamWaitEvent(to, ev, 0));
      }
    }
  } joined{crit, bulk, ev[1]};
  auto minplus = [&](cudaStream_t s, MinplusPart part, int kb, int depth, int band,
                     long long blocks_x, long long blocks_y) {
    if (blocks_x <= 0 || blocks_y <= 0) return;
    detail::minplus_kernel<Ops, kTy, kRm, kNext>
        <<<dim3(static_cast<unsigned>(blocks_x), static_cast<unsigned>(blocks_y)), kThreads, smem,
           s>>>(d, nxt, hop, ld, kb, depth, band, nb, part, flags);
  };
  auto pivot_and_panels = [&](int kb) -> absl::Status {
    detail::phase1_kernel<Ops, kNext><<<1, 1024, 0, crit>>>(d, nxt, hop, ld, kb, flags);
    GC_CUDA_CHECK_LAUNCH("apsp phase1");
    minplus(crit, MinplusPart::kPanels, kb, 1, 0, 2 * (nb - 1), 1);
    GC_CUDA_CHECK_LAUNCH("apsp phase2");
    return absl::OkStatus();
  };
  // Closes the band of pivot blocks [kb, kb + depth): afterwards its rows and columns hold what
  // `depth` plain rounds would leave there (the other tiles have not seen these rounds yet).
  auto close_band = [&](int kb, int depth) -> absl::Status {
    if (absl::Status s = pivot_and_panels(kb); !s.ok()) return s;
    if (depth == 2) {
      minplus(crit, MinplusPart::kNextBand, kb, 1, 1, 2 * nb - 3, 1);  // round p on row/col q
      GC_CUDA_CHECK_LAUNCH("apsp band (round p on row and column q)");
      if (absl::Status s = pivot_and_panels(kb + 1); !s.ok()) return s;
      minplus(crit, MinplusPart::kPrevBand, kb + 1, 1, 0, 2 * nb - 3, 1);  // round q on p
      GC_CUDA_CHECK_LAUNCH("apsp band (round q on row and column p)");
    }
    return absl::OkStatus();
  };

  // Cancellation: the host enqueues rounds ahead of the GPU, so it waits on an event recorded
  // `per_check` rounds earlier before polling the token. That keeps at most 2 * per_check rounds
  // (about 4 ms of work) queued, with no bubble between rounds: a cancel stops the GPU within
  // about 6 ms of work (measured through the job API on an H100: docs/jobs.md).
  const double round_relax = static_cast<double>(npad) * static_cast<double>(npad) * kTile *
                             static_cast<double>(max_depth);
  const int per_check =
      static_cast<int>(std::clamp(2e-3 * 1.2e13 / (kNext ? 3.0 : 1.0) / round_relax, 1.0, 64.0));
  bool pending[2] = {false, false};
  int mark_pivots[2] = {0, 0};  // pivot blocks complete once that mark has fired

  if (absl::Status s = hand_over(bulk, crit, ev[0]); !s.ok()) return s;
  int depth = std::min(max_depth, nb);
  if (absl::Status s = close_band(0, depth); !s.ok()) return s;
  int round = 0;
  for (int kb = 0; kb + depth < nb;) {
    // This round's band is closed: the bulk may start. The next round's band takes this round
    // first and is then closed on the critical stream while the bulk finishes; the next round's
    // bulk starts when both are done (every tile it writes was last written by this bulk).
    const int next = kb + depth;
    const int band = std::min(max_depth, nb - next);
    if (absl::Status s = hand_over(crit, bulk, ev[1]); !s.ok()) return s;
    const long long rest = nb - depth - band;
    minplus(bulk, MinplusPart::kRest, kb, depth, band, rest, rest);
    GC_CUDA_CHECK_LAUNCH("apsp phase3 (bulk)");
    minplus(crit, MinplusPart::kNextBand, kb, depth, band,
            static_cast<long long>(band) * (2 * nb - 2 * depth - band), 1);
    GC_CUDA_CHECK_LAUNCH("apsp phase3 (next round's band)");
    if (absl::Status s = close_band(next, band); !s.ok()) return s;
    if (absl::Status s = hand_over(bulk, crit, ev[2]); !s.ok()) return s;
    kb = next;
    depth = band;

    if (++round % per_check == 0) {
      const int slot = (round / per_check) & 1;
      const cudaEvent_t mark = ev[3 + slot];
      if (pending[slot]) {
        GC_CUDA_TRY(cudaEventSynchronize(mark));
        // Progress from an event the loop waits on anyway: no extra synchronisation.
        stop.report_steps(mark_pivots[slot], nb);
      }
      if (stop.stop_requested()) {
        // Nothing may still use the buffers when the caller gets them back.
        GC_CUDA_TRY(cudaStreamSynchronize(crit));
        GC_CUDA_TRY(cudaStreamSynchronize(bulk));
        return absl::CancelledError(
            absl::StrCat("apsp cancelled after pivot block ", next, " of ", nb));
      }
      GC_CUDA_TRY(cudaEventRecord(mark, crit));  // crit has joined every earlier launch
      pending[slot] = true;
      mark_pivots[slot] = kb;
    }
  }
  // The last round has no next band: all tiles off its band in one launch.
  if (absl::Status s = hand_over(crit, bulk, ev[1]); !s.ok()) return s;
  joined.done = true;
  const int last = nb - depth;
  minplus(bulk, MinplusPart::kRest, last, depth, 0, nb - depth, nb - depth);
  GC_CUDA_CHECK_LAUNCH("apsp phase3");
  return absl::OkStatus();
}

/// Next hops from the final distances (apsp_next_hop_kernels.cuh) into nx, using `scratch`
/// (candidate_bytes). false when a row had too many candidates or a pair none: the caller then
/// runs the fused kernel.
template <class Ops>
absl::StatusOr<bool> next_hops_from_distances(const Context& ctx, const typename Ops::T* w,
                                              const typename Ops::T* d, int* nx, std::int64_t n,
                                              std::int64_t npad, unsigned char* scratch,
                                              ApspFlags* flags, typename Ops::T input_inf,
                                              typename Ops::T unreachable,
                                              const NextHopPlan& plan) {
  auto* keys = reinterpret_cast<unsigned long long*>(scratch);
  auto* counts = reinterpret_cast<int*>(scratch + candidate_keys_bytes(n));
  detail::next_hop_candidates_kernel<Ops>
      <<<static_cast<unsigned>(n), detail::kCandidateThreads, 0, ctx.stream>>>(
          w, d, npad, n, input_inf, unreachable, plan.capacity, plan.end_bit, keys, counts, flags);
  GC_CUDA_CHECK_LAUNCH("apsp next-hop candidates");
  const dim3 grid(static_cast<unsigned>(n),
                  static_cast<unsigned>((n + detail::kPassThreads - 1) / detail::kPassThreads));
  detail::next_hop_pass_kernel<Ops><<<grid, detail::kPassThreads, 0, ctx.stream>>>(
      w, d, npad, n, input_inf, unreachable, keys, counts, plan.capacity, nx, flags);
  GC_CUDA_CHECK_LAUNCH("apsp next-hop pass");
  ApspFlags seen{};
  GC_CUDA_TRY(cudaMemcpyAsync(&seen, flags, sizeof(seen), cudaMemcpyDeviceToHost, ctx.stream));
  GC_CUDA_TRY(cudaStreamSynchronize(ctx.stream));
  return seen.pass_missed == 0;
}

template <class Ops>
absl::Status run_typed(const Context& ctx, const typename Ops::T* w, typename Ops::T* dist,
                       int* next, std::int64_t n, bool next_hop, unsigned char* ws,
                       ApspFlags* flags, typename Ops::T input_inf, typename Ops::T unreachable,
                       typename Ops::T out_inf, const StopToken& stop, const ApspTuning& tuning,
                       const NextHopPlan& plan, ApspInfo& info) {
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
  const int init_grid = grid_for(npad * npad, 256);
  bool fused = next_hop;
  // The pass is written for exact encodings with a plain sum (not the saturating i32 one).
  if constexpr (!std::is_same_v<Ops, detail::I32SatOps>) {
    if (next_hop && plan.from_distances) {
      detail::init_kernel<Ops>
          <<<init_grid, 256, 0, ctx.stream>>>(w, d, nullptr, nullptr, n, npad, input_inf);
      GC_CUDA_CHECK_LAUNCH("apsp init");
      if (absl::Status s =
              run_rounds<Ops, false>(ctx, d, nullptr, nullptr, npad, flags, stop, tuning);
          !s.ok()) {
        return s;
      }
      absl::StatusOr<bool> made = next_hops_from_distances<Ops>(
          ctx, w, d, nx, n, npad, free_ws, flags, input_inf, unreachable, plan);
      if (!made.ok()) return made.status();
      fused = !*made;
      info.next_hop_from_distances = *made;
    }
  }
  if (!next_hop || fused) {
    // The hop-count plane breaks ties between equally short paths (it reuses the pass's scratch).
    int* hop = next_hop ? reinterpret_cast<int*>(free_ws) : nullptr;
    detail::init_kernel<Ops><<<init_grid, 256, 0, ctx.stream>>>(w, d, nx, hop, n, npad, input_inf);
    GC_CUDA_CHECK_LAUNCH("apsp init");
    absl::Status st = next_hop
                          ? run_rounds<Ops, true>(ctx, d, nx, hop, npad, flags, stop, tuning)
                          : run_rounds<Ops, false>(ctx, d, nx, nullptr, npad, flags, stop, tuning);
    if (!st.ok()) return st;
  }
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
  // Padded distances (and next-hops) when n is not a multiple of the tile; with next_hop the
  // larger of the hop-count plane (the fused kernel's tie-break) and the next-hop pass's
  // candidates, which never run at the same time.
  const auto np = static_cast<std::size_t>(padded(shape.n));
  const std::size_t planes = needs_padding(shape.n) ? (shape.next_hop ? 2 : 1) : 0;
  const std::size_t next_scratch =
      shape.next_hop ? std::max(np * np * 4, candidate_bytes(shape.n)) : 0;
  return kFlagsBytes + planes * np * np * 4 + next_scratch;
}

absl::StatusOr<ApspInfo> apsp(const Context& ctx, const void* weights, void* dist,
                              std::int32_t* next, const ApspShape& shape, void* workspace,
                              std::size_t workspace_bytes, StopToken stop,
                              const ApspTuning& tuning) {
  if (absl::Status s = validate(shape); !s.ok()) return s;
  if (absl::Status s = validate(tuning); !s.ok()) return s;
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
  for (cudaEvent_t e : ctx.events) {
    if (e == nullptr) {
      return absl::FailedPreconditionError(
          "apsp: ctx.events must hold the caller's kContextEvents events (see Resources)");
    }
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
        static_cast<const float*>(weights), n, flags);
  } else {
    detail::scan_i32_kernel<<<grid_for(count, 256), 256, 0, ctx.stream>>>(
        static_cast<const int*>(weights), n, flags);
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

  // Next hops from the distances where the scan found every edge between distinct vertices > 0
  // and the arithmetic below is exact (and W survives the run: not in place).
  const std::int64_t max_path = (n - 1) * static_cast<std::int64_t>(scanned.max_pos);
  NextHopPlan plan;
  plan.from_distances = shape.next_hop && tuning.next_hop_from_distances &&
                        scanned.pass_unsafe == 0 && weights != dist;
  plan.capacity = static_cast<int>(candidate_capacity(n, tuning.next_hop_candidates));
  plan.end_bit = detail::kVertexBits + std::bit_width(static_cast<unsigned>(scanned.max_pos));

  const absl::Status st = [&]() -> absl::Status {
    if (shape.dtype == DType::kF32) {
      const float inf = std::numeric_limits<float>::infinity();
      plan.from_distances = plan.from_distances && max_path < (std::int64_t{1} << 24);
      return run_typed<detail::F32Ops>(ctx, static_cast<const float*>(weights),
                                       static_cast<float*>(dist), next, n, shape.next_hop, ws,
                                       flags, inf, inf, inf, stop, tuning, plan, info);
    } else {
      // Fast DPX path when every finite distance (<= (n-1) * max_pos) stays below every value that
      // went through the sentinel (>= S - (n-1) * max_neg), and nothing leaves [-2^30, S].
      const std::int64_t s_inf = detail::I32FastOps::kInf;
      const std::int64_t lo_drop = (n - 1) * static_cast<std::int64_t>(scanned.max_neg);
      if (max_path + lo_drop < s_inf) {
        return run_typed<detail::I32FastOps>(ctx, static_cast<const int*>(weights),
                                             static_cast<int*>(dist), next, n, shape.next_hop, ws,
                                             flags, kI32NoEdge, static_cast<int>(s_inf - lo_drop),
                                             kI32NoEdge, stop, tuning, plan, info);
      }
      plan.from_distances = false;  // the pass is written for the fast encoding only
      return run_typed<detail::I32SatOps>(
          ctx, static_cast<const int*>(weights), static_cast<int*>(dist), next, n, shape.next_hop,
          ws, flags, kI32NoEdge, kI32NoEdge, kI32NoEdge, stop, tuning, plan, info);
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
