// SPDX-License-Identifier: Apache-2.0
#include "engine/cuda/lane.hpp"

#include <utility>

#include "gcompute/kernels/cuda/check.hpp"

namespace gcompute::server::cuda {

absl::StatusOr<StagingEvents> make_staging_events() {
  StagingEvents events;
  for (kernels::cuda::Event& e : events) {
    absl::StatusOr<kernels::cuda::Event> event =
        kernels::cuda::Event::create(kernels::cuda::EventTiming::kDisabled);
    if (!event.ok()) return event.status();
    e = *std::move(event);
  }
  return events;
}

absl::StatusOr<std::unique_ptr<Lane>> Lane::create(int device, int index) {
  absl::StatusOr<kernels::cuda::Resources> resources = kernels::cuda::Resources::create(device);
  if (!resources.ok()) return resources.status();
  absl::StatusOr<StagingEvents> staging = make_staging_events();
  if (!staging.ok()) return staging.status();
  return std::unique_ptr<Lane>(new Lane(index, *std::move(resources), *std::move(staging)));
}

Lane::~Lane() {
  GC_CUDA_TRY_NO_THROW(cudaSetDevice(device()));
}

}  // namespace gcompute::server::cuda
