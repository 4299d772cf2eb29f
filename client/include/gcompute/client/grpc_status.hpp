// SPDX-License-Identifier: Apache-2.0
// The one mapping from gRPC status to absl::Status used by the client.
#pragma once

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace gcompute::client {

/// Same code (gRPC and Abseil share the canonical codes) and the server's message unchanged.
absl::Status from_grpc_status(const grpc::Status& status);

}  // namespace gcompute::client
