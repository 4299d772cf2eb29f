// SPDX-License-Identifier: Apache-2.0
// Requests whose message does not parse. gRPC's callback handlers answer them UNIMPLEMENTED
// with an empty message before any handler of ours runs; this interceptor turns that answer
// into INVALID_ARGUMENT naming the request type, and counts it.
#pragma once

#include <grpcpp/support/server_interceptor.h>

#include <memory>

#include "metrics/metrics.hpp"

namespace gcompute::server {

/// For the server builder's interceptor creators; `metrics` outlives the server.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
make_unparsable_request_interceptor(Metrics& metrics);

}  // namespace gcompute::server
