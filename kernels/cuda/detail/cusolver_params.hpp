// SPDX-License-Identifier: Apache-2.0
// An owned cusolverDnParams_t for the 64-bit (Xgeqrf, Xpotrf, Xsyevd) cuSOLVER API.
#pragma once

#include <cusolverDn.h>

#include "absl/status/statusor.h"
#include "gcompute/kernels/cuda/check.hpp"
#include "gcompute/kernels/cuda/unique_handle.hpp"

namespace gcompute::kernels::cuda::detail {

using CusolverParams = UniqueHandle<cusolverDnParams_t, cusolverDnDestroyParams>;

/// Default parameters (cuSOLVER picks the algorithms).
inline absl::StatusOr<CusolverParams> create_cusolver_params() {
  cusolverDnParams_t params = nullptr;
  GC_CUSOLVER_TRY(cusolverDnCreateParams(&params));
  return CusolverParams(params);
}

}  // namespace gcompute::kernels::cuda::detail
