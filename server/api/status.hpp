// SPDX-License-Identifier: Apache-2.0
// The one place where absl::Status becomes grpc::Status.
#pragma once

#include <grpcpp/support/status.h>

#include <string>

#include "absl/status/status.h"

namespace gcompute::server {

grpc::Status to_grpc(const absl::Status& status);
/// "OK", "INVALID_ARGUMENT", ... as used in the gcompute_requests_total{code} label.
std::string code_name(absl::StatusCode code);

}  // namespace gcompute::server
