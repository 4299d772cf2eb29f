// SPDX-License-Identifier: Apache-2.0
#include "security/authenticator.hpp"

#include "absl/strings/match.h"
#include "api/caller.hpp"

namespace gcompute::server {
namespace {

constexpr char kBadToken[] =
    "missing or invalid credentials: send the metadata \"authorization: Bearer TOKEN\" with a "
    "token the server knows";

std::string_view view(const grpc::string_ref& s) {
  return {s.data(), s.size()};
}

}  // namespace

grpc::Status Authenticator::Process(const InputMetadata& auth_metadata, grpc::AuthContext* context,
                                    OutputMetadata* consumed_auth_metadata,
                                    OutputMetadata* /*response_metadata*/) {
  // Health is for load balancers and probes, which hold no credentials.
  if (auto path = auth_metadata.find(":path");
      path != auth_metadata.end() && view(path->second).starts_with("/grpc.health.v1.Health/")) {
    return grpc::Status::OK;
  }
  std::string tenant;
  if (tokens_ != nullptr) {
    auto header = auth_metadata.find("authorization");
    if (header == auth_metadata.end()) return {grpc::StatusCode::UNAUTHENTICATED, kBadToken};
    std::string_view value = view(header->second);
    constexpr std::string_view kScheme = "Bearer ";
    if (value.size() <= kScheme.size() ||
        !absl::EqualsIgnoreCase(absl::string_view(value.data(), kScheme.size()),
                                absl::string_view(kScheme.data(), kScheme.size()))) {
      return {grpc::StatusCode::UNAUTHENTICATED, kBadToken};
    }
    std::optional<std::string> found = tokens_->tenant_of(value.substr(kScheme.size()));
    if (!found) return {grpc::StatusCode::UNAUTHENTICATED, kBadToken};
    tenant = *std::move(found);
    // Handlers never see the token.
    consumed_auth_metadata->emplace("authorization", std::string(value));
  } else if (tenant_from_cert_) {
    const std::vector<grpc::string_ref> cn = context->FindPropertyValues("x509_common_name");
    if (cn.empty() || !valid_tenant_name(view(cn.front()))) {
      return {grpc::StatusCode::UNAUTHENTICATED,
              "the client certificate's common name must be a tenant name: 1-64 characters of "
              "[A-Za-z0-9._-]"};
    }
    tenant.assign(cn.front().data(), cn.front().size());
  } else {
    return grpc::Status::OK;
  }
  absl::MutexLock lock(&bind_mu_);
  const std::vector<grpc::string_ref> bound = context->FindPropertyValues(kTenantProperty);
  if (bound.empty()) {
    context->AddProperty(kTenantProperty, tenant);
  } else if (view(bound.front()) != tenant) {
    // The same message as for a bad token, so that it confirms nothing about this one; a
    // client uses one connection per credential.
    return {grpc::StatusCode::UNAUTHENTICATED, kBadToken};
  }
  return grpc::Status::OK;
}

}  // namespace gcompute::server
