// SPDX-License-Identifier: Apache-2.0
// The gRPC server credentials SecurityOptions ask for: TLS or mutual TLS from files that are
// reloaded when they change, or plaintext (loopback only unless --insecure), each with the
// authenticator attached when calls must authenticate.
#pragma once

#include <grpcpp/security/auth_metadata_processor.h>
#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "security/security_options.hpp"

namespace gcompute::server {

/// True when `listen` (HOST:PORT, [V6]:PORT or unix:PATH) only accepts local connections.
bool is_loopback_address(const std::string& listen);

/// Checks the combination of flags and that the files exist, and builds the credentials.
/// INVALID_ARGUMENT names the flag at fault. `warning` receives what main() should log.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> make_server_credentials(
    const SecurityOptions& options, const std::string& listen,
    std::shared_ptr<grpc::AuthMetadataProcessor> authenticator, std::string* warning);

}  // namespace gcompute::server
