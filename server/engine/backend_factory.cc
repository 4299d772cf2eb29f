// SPDX-License-Identifier: Apache-2.0
#include "engine/backend_factory.hpp"

#include "absl/strings/str_cat.h"
#include "engine/cpu_backend.hpp"

namespace gcompute::server {

absl::StatusOr<BackendChoice> make_backend(const BackendOptions& options) {
  if (options.device == "cpu") {
    return BackendChoice{std::make_unique<CpuBackend>(options.cpu_workers), ""};
  }
  if (options.device != "cuda" && options.device != "auto") {
    return absl::InvalidArgumentError(
        absl::StrCat("--device must be auto, cpu or cuda, got \"", options.device, "\""));
  }
  auto cuda = make_cuda_backend(options);
  if (cuda.ok()) return BackendChoice{*std::move(cuda), ""};
  if (options.device == "cuda") {
    return absl::FailedPreconditionError(
        absl::StrCat("--device=cuda but no usable GPU: ", cuda.status().message()));
  }
  return BackendChoice{
      std::make_unique<CpuBackend>(options.cpu_workers),
      absl::StrCat("no usable GPU (", cuda.status().message(), "); using the CPU backend")};
}

}  // namespace gcompute::server
