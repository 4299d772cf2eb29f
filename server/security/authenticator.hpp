// SPDX-License-Identifier: Apache-2.0
// Authenticates every call before a handler runs: a bearer token from the tokens file, or a
// field of a verified client certificate (--tenant-from-cert: the common name or a subject
// alternative name). The tenant goes into the call's AuthContext (kTenantProperty), where
// api/caller.cc finds it.
#pragma once

#include <grpcpp/security/auth_metadata_processor.h>

#include <optional>
#include <string>

#include "absl/synchronization/mutex.h"
#include "security/tokens.hpp"

namespace gcompute::server {

/// Which certificate field names the tenant under --tenant-from-cert, and the prefix its value
/// must start with (removed to give the tenant).
struct CertTenantRule {
  std::string field = "cn";  ///< cn, dns, uri, email
  std::string prefix;
};

/// The AuthContext property gRPC fills with `field` ("cn" -> x509_common_name, "dns" ->
/// peer_dns, ...); null for a field it does not know.
const char* cert_tenant_property(const std::string& field);

class Authenticator final : public grpc::AuthMetadataProcessor {
 public:
  /// `tokens`: check bearer tokens (outlives this); null with `cert_rule`: take the tenant from
  /// the client certificate as the rule says.
  Authenticator(TokenRegistry* tokens, std::optional<CertTenantRule> cert_rule)
      : tokens_(tokens), cert_rule_(std::move(cert_rule)) {}

  /// Cheap (a digest and, at most every refresh interval, a stat): runs on gRPC's own thread.
  bool IsBlocking() const override { return false; }

  /// UNAUTHENTICATED, with one message for missing, malformed, unknown and revoked tokens;
  /// health checks pass without a credential.
  grpc::Status Process(const InputMetadata& auth_metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed_auth_metadata,
                       OutputMetadata* response_metadata) override;

 private:
  /// The tenant the client certificate names, or why it names none (the UNAUTHENTICATED
  /// message).
  grpc::Status tenant_from_certificate(const grpc::AuthContext& context, std::string* tenant) const;

  TokenRegistry* const tokens_;
  const std::optional<CertTenantRule> cert_rule_;
  /// gRPC shares one AuthContext among the calls of a connection; binding the tenant to it is
  /// one check-and-set for all connections.
  absl::Mutex bind_mu_;
};

}  // namespace gcompute::server
