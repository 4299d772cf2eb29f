// SPDX-License-Identifier: Apache-2.0
#include "security/credentials.hpp"

#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "security/authenticator.hpp"

namespace gcompute::server {
namespace {

/// OK when `path` can be read and holds a PEM block; the file watcher would only log.
absl::Status check_pem(const std::string& flag, const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " ", path, ": cannot open: ", std::strerror(errno)));
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " ", path, ": not a PEM file"));
  }
  return absl::OkStatus();
}

}  // namespace

bool is_loopback_address(const std::string& listen) {
  if (absl::StartsWith(listen, "unix:") || absl::StartsWith(listen, "unix-abstract:")) return true;
  std::string host;
  if (absl::StartsWith(listen, "[")) {
    const std::size_t close = listen.find(']');
    if (close == std::string::npos) return false;
    host = listen.substr(1, close - 1);
  } else {
    host = listen.substr(0, listen.rfind(':'));
  }
  return host == "localhost" || host == "::1" || absl::StartsWith(host, "127.");
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> make_server_credentials(
    const SecurityOptions& options, const std::string& listen,
    std::shared_ptr<grpc::AuthMetadataProcessor> authenticator, std::string* warning) {
  if (options.tls_cert.empty() != options.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together: give both or neither");
  }
  if (!options.tls_client_ca.empty() && !options.tls()) {
    return absl::InvalidArgumentError("--tls-client-ca needs --tls-cert and --tls-key");
  }
  if (options.tenant_from_cert && options.tls_client_ca.empty()) {
    return absl::InvalidArgumentError(
        "--tenant-from-cert needs mutual TLS (--tls-client-ca with --tls-cert and --tls-key)");
  }
  if (options.tenant_from_cert && !options.auth_tokens.empty()) {
    return absl::InvalidArgumentError(
        "--tenant-from-cert and --auth-tokens both name the tenant: choose one");
  }
  if (!cert_tenant_property(options.tenant_cert_field)) {
    return absl::InvalidArgumentError(absl::StrCat("--tenant-cert-field is \"",
                                                   options.tenant_cert_field,
                                                   "\"; expected cn, dns, uri or email"));
  }
  if (!options.tenant_from_cert &&
      (options.tenant_cert_field != "cn" || !options.tenant_cert_prefix.empty())) {
    return absl::InvalidArgumentError(
        "--tenant-cert-field and --tenant-cert-prefix need --tenant-from-cert");
  }
  if (options.tls_refresh_seconds < 1) {
    return absl::InvalidArgumentError("--tls-refresh-seconds must be >= 1");
  }

  std::shared_ptr<grpc::ServerCredentials> creds;
  if (options.tls()) {
    for (const auto& [flag, path] :
         {std::pair{"--tls-cert", options.tls_cert}, std::pair{"--tls-key", options.tls_key},
          std::pair{"--tls-client-ca", options.tls_client_ca}}) {
      if (!path.empty()) {
        if (auto st = check_pem(flag, path); !st.ok()) return st;
      }
    }
    auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
        options.tls_key, options.tls_cert, options.tls_client_ca, options.tls_refresh_seconds);
    grpc::experimental::TlsServerCredentialsOptions tls(provider);
    tls.watch_identity_key_cert_pairs();
    if (options.tls_client_ca.empty()) {
      tls.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
    } else {
      tls.watch_root_certs();
      tls.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    }
    creds = grpc::experimental::TlsServerCredentials(tls);
  } else {
    const bool loopback = is_loopback_address(listen);
    if (!loopback && !options.insecure) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--listen ", listen,
          " is not a loopback address: serve TLS (--tls-cert, --tls-key) or pass --insecure to "
          "serve plaintext there"));
    }
    if (!loopback) {
      if (authenticator != nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--auth-tokens over plaintext on ", listen,
            " would send the tokens in clear across the network: serve TLS (--tls-cert, "
            "--tls-key)"));
      }
      *warning = absl::StrCat("serving PLAINTEXT on ", listen,
                              " (--insecure): anyone who reaches it can use and read everything");
      return grpc::InsecureServerCredentials();
    }
    if (authenticator == nullptr) return grpc::InsecureServerCredentials();
    // Plaintext credentials that still run the authenticator (insecure ones cannot), and that
    // accept loopback peers only.
    creds = grpc::experimental::LocalServerCredentials(
        absl::StartsWith(listen, "unix") ? UDS : LOCAL_TCP);
  }
  if (authenticator != nullptr) creds->SetAuthMetadataProcessor(std::move(authenticator));
  return creds;
}

}  // namespace gcompute::server
