// SPDX-License-Identifier: Apache-2.0
// Next hops from exact distances on the host: the rule of kApspNextHopCandidates
// (apsp_types.hpp), the same as cuda::apsp's, so that both backends return the same next hops.
#pragma once

#include <cstdint>

namespace gcompute::kernels::cpu::detail {

/// Whether the rule applies to W (n x n, validated): every sum exact and every weight between
/// distinct vertices > 0, no negative self-loop. T is float or std::int32_t.
template <typename T>
bool next_hops_from_distances_allowed(const T* w, std::int64_t n);

/// N from W and the final distances D (both n x n, D exact). false when a row has more than
/// kApspNextHopCandidates candidates or a reachable pair none (then N is incomplete and the
/// caller runs the fused next-hop Floyd-Warshall). `threads` = 0: every hardware thread.
template <typename T>
bool next_hops_from_distances(const T* w, const T* d, std::int32_t* nx, std::int64_t n,
                              int threads);

}  // namespace gcompute::kernels::cpu::detail
