// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "absl/status/statusor.h"
#include "gcompute/kernels/stop_token.hpp"
#include "gcompute/kernels/svd_types.hpp"

namespace gcompute::kernels::cpu {

/// One-sided Jacobi SVD on the host (the reference the GPU version must agree with).
/// Returns CANCELLED if `stop` fires between sweeps. Not converging within max_sweeps is not
/// an error: the result is returned with info.converged = false.
absl::StatusOr<SvdInfo> svd_jacobi(const void* a, void* s, void* u, void* vt, const SvdShape& shape,
                                   StopToken stop = {});

}  // namespace gcompute::kernels::cpu
