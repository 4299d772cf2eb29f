// SPDX-License-Identifier: Apache-2.0
// How the server authenticates transports and callers, and the per-tenant defaults: one block
// of ServerOptions, filled from flags by main.cc (docs/security.md has the flags).
#pragma once

#include <cstdint>
#include <string>

#include "ops/tenant_quotas.hpp"

namespace gcompute::server {

struct SecurityOptions {
  /// PEM files of the server's certificate chain and key; both or neither. With them gRPC is
  /// served over TLS, and the files are reloaded when they change.
  std::string tls_cert;
  std::string tls_key;
  /// PEM CA bundle: with it every client must present a certificate signed by one of these.
  std::string tls_client_ca;
  /// How often the certificate files are checked for changes.
  unsigned tls_refresh_seconds = 60;
  /// Serve plaintext on an address that is not loopback (logged as a warning).
  bool insecure = false;
  /// `TENANT SHA256-HEX [KEY=VALUE...]` lines; empty: no token authentication.
  std::string auth_tokens;
  /// How often the tokens file is checked for changes (milliseconds).
  std::uint64_t auth_tokens_refresh_ms = 1000;
  /// With mutual TLS: the tenant comes from the client certificate, from the field
  /// `tenant_cert_field` names ("cn", or the subject alternative names "dns", "uri", "email"),
  /// after `tenant_cert_prefix` (which the value must start with) is removed.
  bool tenant_from_cert = false;
  std::string tenant_cert_field = "cn";
  std::string tenant_cert_prefix;
  /// gRPC server reflection (lists the services and their schema to anyone connected).
  bool reflection = true;
  /// Quotas of tenants the tokens file does not override.
  ops::TenantQuotas default_quotas;

  bool tls() const { return !tls_cert.empty() || !tls_key.empty(); }
};

}  // namespace gcompute::server
