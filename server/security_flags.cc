// SPDX-License-Identifier: Apache-2.0
#include "security_flags.hpp"

#include "absl/flags/flag.h"

ABSL_FLAG(std::string, tls_cert, "", "PEM certificate chain: serve gRPC over TLS (with --tls-key)");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls-cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA bundle: require client certificates signed by it (mutual TLS)");
ABSL_FLAG(uint32_t, tls_refresh_seconds, 60,
          "How often the TLS files are checked for changes (rotation without restart)");
ABSL_FLAG(bool, insecure, false,
          "Allow plaintext gRPC on an address that is not loopback (logged as a warning)");
ABSL_FLAG(std::string, auth_tokens, "",
          "Tokens file: 'TENANT SHA256-HEX [KEY=VALUE...]' per line; every call then needs "
          "'authorization: Bearer TOKEN'");
ABSL_FLAG(uint64_t, auth_tokens_refresh_ms, 1000,
          "How often the tokens file is checked for changes (milliseconds)");
ABSL_FLAG(bool, tenant_from_cert, false,
          "With mutual TLS: the tenant comes from the client certificate (--tenant-cert-field)");
ABSL_FLAG(std::string, tenant_cert_field, "cn",
          "With --tenant-from-cert: the certificate field naming the tenant: cn (common name), or "
          "a subject alternative name: dns, uri, email");
ABSL_FLAG(std::string, tenant_cert_prefix, "",
          "With --tenant-from-cert: only field values starting with this count, and the tenant is "
          "the rest (e.g. spiffe://example.org/tenant/)");
ABSL_FLAG(bool, reflection, true, "Serve gRPC server reflection");
ABSL_FLAG(uint64_t, tenant_stored_bytes, ~uint64_t{0},
          "Default per-tenant quota: bytes of stored matrices (tokens file may override)");
ABSL_FLAG(uint64_t, tenant_graphs, ~uint64_t{0},
          "Default per-tenant quota: stored graphs (tokens file may override)");
ABSL_FLAG(uint64_t, tenant_running, ~uint64_t{0},
          "Default per-tenant quota: requests on the engine at once (tokens file may override)");
ABSL_FLAG(uint64_t, tenant_queued, ~uint64_t{0},
          "Default per-tenant quota: requests waiting for the tenant's running slots");

namespace gcompute::server {

SecurityOptions security_options_from_flags() {
  SecurityOptions o;
  o.tls_cert = absl::GetFlag(FLAGS_tls_cert);
  o.tls_key = absl::GetFlag(FLAGS_tls_key);
  o.tls_client_ca = absl::GetFlag(FLAGS_tls_client_ca);
  o.tls_refresh_seconds = absl::GetFlag(FLAGS_tls_refresh_seconds);
  o.insecure = absl::GetFlag(FLAGS_insecure);
  o.auth_tokens = absl::GetFlag(FLAGS_auth_tokens);
  o.auth_tokens_refresh_ms = absl::GetFlag(FLAGS_auth_tokens_refresh_ms);
  o.tenant_from_cert = absl::GetFlag(FLAGS_tenant_from_cert);
  o.tenant_cert_field = absl::GetFlag(FLAGS_tenant_cert_field);
  o.tenant_cert_prefix = absl::GetFlag(FLAGS_tenant_cert_prefix);
  o.reflection = absl::GetFlag(FLAGS_reflection);
  o.default_quotas.stored_bytes = absl::GetFlag(FLAGS_tenant_stored_bytes);
  o.default_quotas.graphs = absl::GetFlag(FLAGS_tenant_graphs);
  o.default_quotas.running = absl::GetFlag(FLAGS_tenant_running);
  o.default_quotas.queued = absl::GetFlag(FLAGS_tenant_queued);
  return o;
}

}  // namespace gcompute::server
