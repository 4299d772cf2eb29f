// SPDX-License-Identifier: Apache-2.0
#include "channel_security.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace gcompute::client {
namespace {

absl::StatusOr<std::string> read_file(const char* option, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat(option, " ", path, ": cannot open: ", std::strerror(errno)));
  }
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

absl::StatusOr<ChannelSecurity> channel_security(const ClientOptions& options) {
  ChannelSecurity out;
  if (options.tls_cert.empty() != options.tls_key.empty()) {
    return absl::InvalidArgumentError("tls_cert and tls_key go together: give both or neither");
  }
  out.tls = !options.tls_ca.empty() || !options.tls_cert.empty();
  if (out.tls) {
    grpc::SslCredentialsOptions ssl;
    if (!options.tls_ca.empty()) {
      auto ca = read_file("tls_ca", options.tls_ca);
      if (!ca.ok()) return ca.status();
      ssl.pem_root_certs = *std::move(ca);
    }
    if (!options.tls_cert.empty()) {
      auto cert = read_file("tls_cert", options.tls_cert);
      if (!cert.ok()) return cert.status();
      auto key = read_file("tls_key", options.tls_key);
      if (!key.ok()) return key.status();
      ssl.pem_cert_chain = *std::move(cert);
      ssl.pem_private_key = *std::move(key);
    }
    out.credentials = grpc::SslCredentials(ssl);
  } else {
    out.credentials = grpc::InsecureChannelCredentials();
  }
  const std::string token(absl::StripAsciiWhitespace(options.token));
  if (!token.empty()) out.authorization = absl::StrCat("Bearer ", token);
  return out;
}

}  // namespace gcompute::client
