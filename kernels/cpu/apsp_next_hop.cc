// SPDX-License-Identifier: Apache-2.0
#include "detail/apsp_next_hop.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "gcompute/kernels/apsp_types.hpp"

namespace gcompute::kernels::cpu::detail {
namespace {

template <typename T>
constexpr T kNoEdge = kI32NoEdge;
template <>
constexpr float kNoEdge<float> = std::numeric_limits<float>::infinity();

/// Row i of N, or false (see next_hops_from_distances). `candidates` is the caller's scratch.
template <typename T>
bool row_next_hops(const T* w, const T* d, std::int32_t* nx, std::int64_t n, std::int64_t i,
                   std::vector<std::pair<T, std::int32_t>>& candidates) {
  const T* wi = w + i * n;
  const T* di = d + i * n;
  std::int32_t* ni = nx + i * n;
  // A first hop k != j has D[k][j] > 0, so W[i][k] < D[i][j] <= the row's largest distance.
  T bound = T(0);
  for (std::int64_t j = 0; j < n; ++j) {
    if (di[j] != kNoEdge<T>) bound = std::max(bound, di[j]);
  }
  candidates.clear();
  for (std::int64_t k = 0; k < n; ++k) {
    if (k != i && wi[k] != kNoEdge<T> && wi[k] < bound) {
      if (static_cast<std::int64_t>(candidates.size()) == kApspNextHopCandidates) return false;
      candidates.emplace_back(wi[k], static_cast<std::int32_t>(k));
    }
  }
  std::sort(candidates.begin(), candidates.end());
  for (std::int64_t j = 0; j < n; ++j) {
    const T target = di[j];
    if (j == i) {
      ni[j] = static_cast<std::int32_t>(i);
    } else if (target == kNoEdge<T>) {
      ni[j] = -1;
    } else if (wi[j] != kNoEdge<T> && wi[j] == target) {
      ni[j] = static_cast<std::int32_t>(j);
    } else {
      std::int32_t hop = -1;
      for (const auto& [weight, k] : candidates) {
        if (!(weight < target)) break;
        const T via = d[k * n + j];
        if (via != kNoEdge<T> && weight + via == target) {
          hop = k;
          break;
        }
      }
      if (hop < 0) return false;
      ni[j] = hop;
    }
  }
  return true;
}

}  // namespace

template <typename T>
bool next_hops_from_distances_allowed(const T* w, std::int64_t n) {
  std::int64_t max_w = 0;
  for (std::int64_t e = 0; e < n * n; ++e) {
    const T v = w[e];
    if (v == kNoEdge<T>) continue;
    const bool diagonal = e % (n + 1) == 0;
    if (diagonal ? v < T(0) : !(v > T(0))) return false;
    if constexpr (std::is_same_v<T, float>) {
      if (v != std::nearbyint(v) || !(v < 16777216.0f)) return false;
    }
    max_w = std::max(max_w, static_cast<std::int64_t>(v));
  }
  const std::int64_t limit = std::is_same_v<T, float> ? std::int64_t{1} << 24 : (1 << 30) - 1;
  return (n - 1) * max_w < limit;
}

template <typename T>
bool next_hops_from_distances(const T* w, const T* d, std::int32_t* nx, std::int64_t n,
                              int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int team = static_cast<int>(std::min<std::int64_t>({threads, 256, n}));
  std::atomic<std::int64_t> next_row{0};
  std::atomic<bool> ok{true};
  auto worker = [&] {
    std::vector<std::pair<T, std::int32_t>> candidates;
    for (std::int64_t i = next_row++; i < n && ok.load(std::memory_order_relaxed); i = next_row++) {
      if (!row_next_hops(w, d, nx, n, i, candidates)) ok = false;
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < team; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  return ok;
}

template bool next_hops_from_distances_allowed(const float*, std::int64_t);
template bool next_hops_from_distances_allowed(const std::int32_t*, std::int64_t);
template bool next_hops_from_distances(const float*, const float*, std::int32_t*, std::int64_t,
                                       int);
template bool next_hops_from_distances(const std::int32_t*, const std::int32_t*, std::int32_t*,
                                       std::int64_t, int);

}  // namespace gcompute::kernels::cpu::detail
