// SPDX-License-Identifier: Apache-2.0
// How the client's channels authenticate the server and themselves: TLS credentials from the
// PEM files ClientOptions name, and the bearer token every call carries.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "gcompute/client/client.hpp"

namespace gcompute::client {

struct ChannelSecurity {
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  std::string authorization;  ///< "Bearer TOKEN", or empty: calls carry no token
  bool tls = false;
};

/// Reads the files `options` names; INVALID_ARGUMENT names the option and file.
absl::StatusOr<ChannelSecurity> channel_security(const ClientOptions& options);

}  // namespace gcompute::client
