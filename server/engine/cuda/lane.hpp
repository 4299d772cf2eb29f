// SPDX-License-Identifier: Apache-2.0
// A lane: what one request needs to run on a GPU, created once at start-up and reused, like a
// raft::resources handle: the kernels' resources (a non-blocking stream, the library handles
// bound to it, a higher-priority stream for kernels that split off a critical path, the events
// kernels borrow) and two events for double-buffered staging copies.
// "A stream per request" means a lane per request, never a stream created per request.
#pragma once

#include <array>
#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "gcompute/kernels/cuda/context.hpp"
#include "gcompute/kernels/cuda/event.hpp"
#include "gcompute/kernels/cuda/resources.hpp"
#include "gcompute/kernels/cuda/stream.hpp"

namespace gcompute::server::cuda {

/// The two events a pipelined host <-> device copy alternates between (transfers.hpp).
using StagingEvents = std::array<kernels::cuda::Event, 2>;

/// Two fresh staging events on the current device.
absl::StatusOr<StagingEvents> make_staging_events();

class Lane {
 public:
  /// Lane `index` of `device` (made current). The first failure is returned and whatever was
  /// created is released.
  static absl::StatusOr<std::unique_ptr<Lane>> create(int device, int index);
  /// Makes the lane's device current, so that its handles and streams are released there.
  ~Lane();
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;

  int device() const { return resources_.device(); }
  int index() const { return index_; }
  kernels::cuda::StreamView stream() const { return resources_.stream(); }
  const StagingEvents& staging_events() const { return staging_; }
  kernels::cuda::Context context() const { return resources_.context(); }

 private:
  Lane(int index, kernels::cuda::Resources resources, StagingEvents staging)
      : index_(index), resources_(std::move(resources)), staging_(std::move(staging)) {}
  int index_;
  kernels::cuda::Resources resources_;
  StagingEvents staging_;
};

}  // namespace gcompute::server::cuda
