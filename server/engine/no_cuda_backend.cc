// SPDX-License-Identifier: Apache-2.0
// make_cuda_backend for builds without the CUDA toolkit.
#include "engine/backend_factory.hpp"

namespace gcompute::server {

absl::StatusOr<std::unique_ptr<Backend>> make_cuda_backend(const BackendOptions&) {
  return absl::UnavailableError("this gcompute was built without CUDA support");
}

}  // namespace gcompute::server
