// SPDX-License-Identifier: Apache-2.0
// One unary Compute call on one replica, under a deadline.
#pragma once

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gcompute/client/grpc_status.hpp"
#include "gcompute/v1/service.grpc.pb.h"
#include "replicas.hpp"

namespace gcompute::client {

/// A blocking unary method of the Compute stub, e.g. &Compute::Stub::Transpose.
template <typename Request, typename Response>
using UnaryMethod = grpc::Status (::gcompute::v1::Compute::Stub::*)(grpc::ClientContext*,
                                                                    const Request&, Response*);

/// The response, or the server's status unchanged.
template <typename Request, typename Response>
absl::StatusOr<Response> unary_rpc(Replica& replica, UnaryMethod<Request, Response> method,
                                   const Request& request, absl::Time deadline) {
  grpc::ClientContext context;
  replica.prepare(context, deadline);
  Response response;
  const grpc::Status status = (replica.stub.get()->*method)(&context, request, &response);
  if (!status.ok()) return from_grpc_status(status);
  return response;
}

}  // namespace gcompute::client
