// SPDX-License-Identifier: Apache-2.0
// Requests whose message does not parse. gRPC's callback handlers answer them UNIMPLEMENTED
// with an empty message before any handler of ours runs; this interceptor turns that answer
// into INVALID_ARGUMENT naming the request type, and counts it.
#pragma once

#include <grpcpp/support/server_interceptor.h>

#include <memory>
#include <string>

#include "absl/status/status.h"

#include "metrics/metrics.hpp"

namespace gcompute::server {

/// What a request that does not parse as `request_type` is answered (raw methods, which parse
/// their requests themselves, answer the same).
absl::Status unparsable_request_status(const std::string& request_type);

/// For the server builder's interceptor creators; `metrics` outlives the server.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
make_unparsable_request_interceptor(Metrics& metrics);

}  // namespace gcompute::server
