// SPDX-License-Identifier: Apache-2.0
// Runs the matrices of a batch through LAPACK, one batch per process at a time while OpenBLAS
// is multi-threaded.
//
// OpenBLAS (0.3.21, pthreads) has one thread pool per process and no per-call thread count.
// Two requests that call a multi-threaded OpenBLAS at once each want every core: the second
// caller spins until the pool is free, and the spinning competes with the work. So the LAPACK
// kernels take turns here (with OPENBLAS_NUM_THREADS=1 they need not, and run concurrently).
// A batch of large matrices runs its items one after another, each on all of OpenBLAS's
// threads; a batch of small matrices, too small for OpenBLAS to thread well, runs with OpenBLAS
// single-threaded and the items spread over as many host threads (the pool size is restored
// afterwards).
#pragma once

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "gcompute/kernels/stop_token.hpp"

namespace gcompute::kernels::cpu::detail {

/// Matrices with at most this many rows and columns count as small (see above).
constexpr std::int64_t kSmallMatrixDim = 128;

/// Calls item(b) for every b in [0, batch), holding the process-wide LAPACK turn when OpenBLAS
/// has more than one thread. `op` names the operation in messages. Returns the first error of an
/// item (no further items start), CANCELLED when `stop` fires while waiting for the turn or between
/// items, and RESOURCE_EXHAUSTED when an item throws std::bad_alloc. `small` selects the
/// spread-over-threads mode.
absl::Status run_batch(const char* op, std::int64_t batch, bool small, StopToken stop,
                       const std::function<absl::Status(std::int64_t)>& item);

/// Calls `call` on a thread of its own and waits for it, polling `stop` every 5 ms. One LAPACK
/// call cannot be interrupted, so on a stop the caller gets CANCELLED at once and the call runs
/// to its end in the background: `call` must own everything it reads and writes. Such calls
/// are bounded (at most one per core; further callers wait, cancellably), and while one runs a
/// multi-threaded OpenBLAS is not handed to another batch. Where no thread can be started, the
/// call runs on the caller's thread.
absl::Status run_cancellable(const char* op, StopToken stop, std::function<absl::Status()> call);

}  // namespace gcompute::kernels::cpu::detail
