// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "absl/status/statusor.h"
#include "gcompute/kernels/stop_token.hpp"
#include "gcompute/kernels/svd_types.hpp"

namespace gcompute::kernels::cpu {

/// SVD of a batch of row-major matrices on the host through LAPACK (OpenBLAS), by the method
/// shape.method names: kAuto ?gesdd, kJacobi ?gejsv, kPolar QDWH + ?syevd (see SvdMethod).
/// Outputs as SvdShape describes; U and Vt are neither read nor written without compute_uv.
///
/// Errors: INVALID_ARGUMENT for a bad shape or a null buffer that the shape needs;
/// FAILED_PRECONDITION naming the matrix and element of a NaN or infinite input;
/// RESOURCE_EXHAUSTED when LAPACK's workspace does not fit in memory or its 32-bit indexing;
/// INTERNAL naming the routine and argument when LAPACK rejects an argument (info < 0).
/// LAPACK's "no convergence" (info > 0) is not an error: see SvdInfo.
///
/// Threads: OpenBLAS keeps one thread pool per process, and 0.3.21 has no per-call thread
/// count. While that pool has more than one thread, the LAPACK kernels of this library take
/// turns (detail/lapack_gate.hpp): one batch at a time, a large matrix on all of OpenBLAS's
/// threads, a batch of small matrices spread over host threads with OpenBLAS single-threaded;
/// concurrent requests queue here rather than oversubscribe the cores. With
/// OPENBLAS_NUM_THREADS=1 they run concurrently instead, one core each: the better setting
/// where other processes keep the cores busy (docs/performance.md, CPU backend).
///
/// Cancellation: `stop` is polled while waiting for that turn, between the matrices of a batch
/// and between QDWH iterations (kPolar). One LAPACK call cannot be interrupted: a cancelled
/// kAuto or kJacobi SVD of one large matrix returns CANCELLED only after its ?gesdd or ?gejsv
/// call has finished (for a 1000 x 1000 f64 matrix on the two-core development machine: about
/// 0.5 s and 3 s; at 2000 x 2000: 5 s and 22 s).
absl::StatusOr<SvdInfo> svd(const void* a, void* s, void* u, void* vt, const SvdShape& shape,
                            StopToken stop = {});

}  // namespace gcompute::kernels::cpu
