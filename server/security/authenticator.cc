// SPDX-License-Identifier: Apache-2.0
#include "security/authenticator.hpp"

#include <grpc/grpc_security_constants.h>

#include <functional>
#include <set>

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

const char* cert_tenant_property(const std::string& field) {
  if (field == "cn") return GRPC_X509_CN_PROPERTY_NAME;
  if (field == "dns") return GRPC_PEER_DNS_PROPERTY_NAME;
  if (field == "uri") return GRPC_PEER_URI_PROPERTY_NAME;
  if (field == "email") return GRPC_PEER_EMAIL_PROPERTY_NAME;
  return nullptr;
}

grpc::Status Authenticator::tenant_from_certificate(const grpc::AuthContext& context,
                                                    std::string* tenant) const {
  const std::string what = cert_rule_->field == "cn"
                               ? "common name"
                               : "subject alternative name (" + cert_rule_->field + ")";
  const std::string with_prefix =
      cert_rule_->prefix.empty() ? "" : " starting with \"" + cert_rule_->prefix + "\"";
  std::set<std::string, std::less<>> named;
  for (const grpc::string_ref& value :
       context.FindPropertyValues(cert_tenant_property(cert_rule_->field))) {
    std::string_view v = view(value);
    if (!v.starts_with(cert_rule_->prefix)) continue;
    v.remove_prefix(cert_rule_->prefix.size());
    if (!valid_tenant_name(v)) {
      return {grpc::StatusCode::UNAUTHENTICATED,
              "the client certificate's " + what + with_prefix +
                  " must name a tenant: 1-64 characters of [A-Za-z0-9._-] after the prefix"};
    }
    named.emplace(v);
  }
  if (named.size() != 1) {
    return {grpc::StatusCode::UNAUTHENTICATED,
            "the client certificate must carry exactly one " + what + with_prefix +
                " naming a tenant; it names " + std::to_string(named.size())};
  }
  *tenant = *named.begin();
  return grpc::Status::OK;
}

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
  } else if (cert_rule_) {
    if (grpc::Status st = tenant_from_certificate(*context, &tenant); !st.ok()) return st;
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
