// SPDX-License-Identifier: Apache-2.0
#include "gcompute/kernels/cuda/tuning.hpp"

#include <cstdlib>
#include <string_view>

namespace gcompute::kernels::cuda {
namespace {

/// The integer in `name` if it is set and within [lo, hi], else `fallback`.
int env_int(const char* name, int fallback, int lo, int hi) {
  const char* v = std::getenv(name);
  if (v == nullptr) return fallback;
  const int x = std::atoi(v);
  return x >= lo && x <= hi ? x : fallback;
}

}  // namespace

Tuning tuning_from_environment() {
  Tuning t;
  const int block = env_int("GCOMPUTE_SVD_BLOCK", 0, 8, 64);
  t.svd.block = block - block % 8;
  t.svd.gram_products = env_int("GCOMPUTE_SVD_GRAM_PRODUCTS", 0, 1, 65536);
  t.svd.inner_sweeps = env_int("GCOMPUTE_SVD_INNER_SWEEPS", t.svd.inner_sweeps, 1, 30);
  t.svd.inner_solver =
      static_cast<SvdTuning::InnerSolver>(env_int("GCOMPUTE_SVD_INNER_SOLVER", 0, 0, 2));
  t.svd.inner_double = env_int("GCOMPUTE_SVD_INNER_DOUBLE", 0, 0, 1) != 0;
  t.svd.sort_columns = env_int("GCOMPUTE_SVD_SORT", 1, 0, 1) != 0;
  t.svd.settle_check = env_int("GCOMPUTE_SVD_SETTLE_CHECK", 1, 0, 1) != 0;
  t.svd.profile = env_int("GCOMPUTE_SVD_PROFILE", 0, 0, 1) != 0;
  const char* depth = std::getenv("GCOMPUTE_APSP_DEPTH");
  const std::string_view forced(depth != nullptr ? depth : "");
  if (forced == "1") t.apsp.depth = 1;
  if (forced == "2") t.apsp.depth = 2;
  return t;
}

}  // namespace gcompute::kernels::cuda
