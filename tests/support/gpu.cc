// SPDX-License-Identifier: Apache-2.0
#include "support/gpu.hpp"

#ifdef GCOMPUTE_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace gcompute::testing {

std::string gpu_unavailable_reason() {
#ifdef GCOMPUTE_HAVE_CUDA
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) return std::string("cudaGetDeviceCount: ") + cudaGetErrorName(err);
  if (count == 0) return "no CUDA devices";
  return {};
#else
  return "built without CUDA";
#endif
}

}  // namespace gcompute::testing
