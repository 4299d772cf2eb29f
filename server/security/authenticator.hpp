// SPDX-License-Identifier: Apache-2.0
// Authenticates every call before a handler runs: a bearer token from the tokens file, or the
// common name of a verified client certificate (--tenant-from-cert). The tenant goes into the
// call's AuthContext (kTenantProperty), where api/caller.cc finds it.
#pragma once

#include <grpcpp/security/auth_metadata_processor.h>

#include "absl/synchronization/mutex.h"
#include "security/tokens.hpp"

namespace gcompute::server {

class Authenticator final : public grpc::AuthMetadataProcessor {
 public:
  /// `tokens`: check bearer tokens (outlives this); null with `tenant_from_cert`: take the
  /// tenant from the client certificate's common name.
  Authenticator(TokenRegistry* tokens, bool tenant_from_cert)
      : tokens_(tokens), tenant_from_cert_(tenant_from_cert) {}

  /// Cheap (a digest and, at most every refresh interval, a stat): runs on gRPC's own thread.
  bool IsBlocking() const override { return false; }

  /// UNAUTHENTICATED, with one message for missing, malformed, unknown and revoked tokens;
  /// health checks pass without a credential.
  grpc::Status Process(const InputMetadata& auth_metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed_auth_metadata,
                       OutputMetadata* response_metadata) override;

 private:
  TokenRegistry* const tokens_;
  const bool tenant_from_cert_;
  /// gRPC shares one AuthContext among the calls of a connection; binding the tenant to it is
  /// one check-and-set for all connections.
  absl::Mutex bind_mu_;
};

}  // namespace gcompute::server
