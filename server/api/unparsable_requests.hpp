// SPDX-License-Identifier: Apache-2.0
// Requests whose message does not parse. gRPC's callback handlers answer them UNIMPLEMENTED
// with an empty message before any handler of ours runs; this interceptor turns that answer
// into INVALID_ARGUMENT naming the request type, and counts it.
#pragma once

#include <google/protobuf/message.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/server_interceptor.h>

#include <memory>
#include <string>

#include "absl/status/status.h"

#include "metrics/metrics.hpp"

namespace gcompute::server {

/// A raw method's message (its reactor parses it) that is not a `message_type`: counted in
/// gcompute_unparsable_requests_total (the reactor counts the call as any other) and answered
/// as the interceptor answers a typed method's.
absl::Status refuse_unparsable(Metrics& metrics, const std::string& method,
                               const std::string& message_type);

/// Parses a raw method's `bytes` into `message`; refuse_unparsable when they are not one.
absl::Status parse_raw_message(Metrics& metrics, const std::string& method, grpc::ByteBuffer& bytes,
                               google::protobuf::Message& message);

/// For the server builder's interceptor creators; `metrics` outlives the server.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
make_unparsable_request_interceptor(Metrics& metrics);

}  // namespace gcompute::server
