// SPDX-License-Identifier: Apache-2.0
// Every tuning knob of the CUDA kernels in one struct, read from the environment once by the
// server at start-up and passed to the kernels explicitly. Kernels never read the environment.
// docs/dev/knobs.md lists the variables with their defaults and effects.
#pragma once

#include "gcompute/kernels/apsp_types.hpp"
#include "gcompute/kernels/svd_types.hpp"

namespace gcompute::kernels::cuda {

struct Tuning {
  SvdTuning svd;
  ApspTuning apsp;
};

/// Tuning from GCOMPUTE_SVD_BLOCK, GCOMPUTE_SVD_GRAM_PRODUCTS, GCOMPUTE_SVD_INNER_SWEEPS,
/// GCOMPUTE_SVD_INNER_SOLVER, GCOMPUTE_SVD_INNER_DOUBLE, GCOMPUTE_SVD_SORT,
/// GCOMPUTE_SVD_SETTLE_CHECK, GCOMPUTE_SVD_PROFILE and GCOMPUTE_APSP_DEPTH. Numbers are read as
/// atoi reads them; a variable that is unset or out of its range leaves that knob at its default;
/// a block width that is not a multiple of 8 is rounded down to one; GCOMPUTE_APSP_DEPTH counts
/// only as exactly "1" or "2". The result always passes validate().
Tuning tuning_from_environment();

}  // namespace gcompute::kernels::cuda
