// SPDX-License-Identifier: Apache-2.0
#include "engine/backend.hpp"

#include "gcompute/kernels/cpu/scan.hpp"
#include "gcompute/kernels/status_macros.hpp"

namespace gcompute::server {

absl::StatusOr<kernels::ScanResult> Backend::first_violation(const Matrix& m,
                                                             kernels::ValueCheck check) {
  Matrix host = m;  // a handle: the caller's matrix (perhaps a stored one) is left as it was
  GC_RETURN_IF_ERROR(ensure_on_host(host));
  return kernels::cpu::first_violation(host.data->data(), host.desc.elements(), host.desc.dtype,
                                       check);
}

}  // namespace gcompute::server
