// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "absl/status/statusor.h"
#include "gcompute/kernels/eigh_types.hpp"
#include "gcompute/kernels/stop_token.hpp"

namespace gcompute::kernels::cpu {

/// Eigendecomposition of a batch of symmetric row-major matrices on the host through LAPACK
/// (OpenBLAS) ?syevd: Householder tridiagonalisation, then divide and conquer for the vectors
/// (?sterf for values only). ?syevr (MRRR) was slower with vectors on the development machine
/// and runs the same ?sterf without. Outputs as EighShape describes.
///
/// Errors: INVALID_ARGUMENT for a bad shape, a null buffer the shape needs, or an asymmetric
/// matrix (check_symmetric's message); FAILED_PRECONDITION naming the matrix and element of a
/// NaN or infinite input; RESOURCE_EXHAUSTED when LAPACK's workspace does not fit; INTERNAL
/// naming the routine and argument when LAPACK rejects an argument. LAPACK's "no
/// convergence" (info > 0) is not an error: see EighInfo.
///
/// Threads and cancellation as cpu::svd: LAPACK calls of the process take turns; `stop` is
/// polled while waiting and between the matrices of a batch, and one ?syevd call cannot be
/// interrupted (f64 on the two-core development machine: about 0.3 s at n = 1000, 2 s at 2000).
absl::StatusOr<EighInfo> eigh(const void* a, void* w, void* v, const EighShape& shape,
                              StopToken stop = {});

}  // namespace gcompute::kernels::cpu
