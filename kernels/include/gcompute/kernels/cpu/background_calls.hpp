// SPDX-License-Identifier: Apache-2.0
// LAPACK calls cannot be interrupted: a cancelled SVD or Eigh of a large matrix answers at once
// and its LAPACK call runs to its end on a thread of its own (kernels/cpu/lapack_gate.cc).
#pragma once

namespace gcompute::kernels::cpu {

/// How many cancelled LAPACK calls are still running. A normal exit() waits for them (OpenBLAS
/// tears down its buffers at exit); a process that must not wait ends with std::_Exit.
int lapack_calls_in_background();

}  // namespace gcompute::kernels::cpu
