// SPDX-License-Identifier: Apache-2.0
// Where DeviceGraphMirror (ops/graph_mirror.hpp) keeps its copies on the CUDA backend: one
// cuda::DeviceGraph per stored graph, on the backend's devices, round robin.
//
// Each device gets one stream of the mirror's own, created here at start-up, and a mutex: a
// DeviceGraph takes one caller at a time, and batches of different graphs on one device run
// one after another. Graph memory comes from the device's stream-ordered pool, the backend's
// (CudaBackend::memory_resource). The mirror does not borrow the backend's lanes
// (acquire_lane()): an edit would then wait behind long APSP/SVD jobs holding every lane, and a
// graph's copy is tied to one device while acquire_lane() picks the least loaded one.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "engine/cuda/cuda_backend.hpp"
#include "engine/graph_copies.hpp"

namespace gcompute::server::cuda {

/// Copies on the backend's devices; dense exports (MirrorTarget::dense_weights) are allocated
/// from the backend. The backend must outlive the factory, and the factory every copy it made
/// (so: the mirror).
absl::StatusOr<std::unique_ptr<MirrorTargetFactory>> make_cuda_mirror_targets(CudaBackend& backend);

}  // namespace gcompute::server::cuda
