// SPDX-License-Identifier: Apache-2.0
// The tokens file (--auth-tokens): which bearer tokens exist, whose tenant each is, and the
// tenants' quota overrides. Tokens are stored only as SHA-256 digests; the file is re-read
// when it changes, so revoking a token is an edit of the file.
#pragma once

#include <sys/stat.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "ops/tenant_quotas.hpp"

namespace gcompute::server {

/// One parsed tokens file.
struct TokenTable {
  std::map<std::string, std::string> tenant_of_digest;  ///< lower-case hex SHA-256 -> tenant
  std::map<std::string, ops::TenantQuotas> quotas;      ///< every tenant named, defaults applied

  /// Parses `text`: one `TENANT SHA256-HEX [KEY=VALUE...]` per line, `#` starts a comment.
  /// Keys: stored_bytes, graphs, running, queued. INVALID_ARGUMENT names the line and field.
  static absl::StatusOr<TokenTable> parse(std::string_view text, const ops::TenantQuotas& defaults);
};

/// Lower-case hex SHA-256 of `data`.
std::string sha256_hex(std::string_view data);

/// True for a tenant name the server accepts: 1-64 characters of [A-Za-z0-9._-].
bool valid_tenant_name(std::string_view name);

/// The tokens file, re-read when its size, inode or modification time changes (checked at
/// most every `refresh`). A file that fails to parse keeps the previous table in force and
/// is reported on stderr.
class TokenRegistry {
 public:
  /// Reads `path` once; INVALID_ARGUMENT or NOT_FOUND when it is unusable at start.
  static absl::StatusOr<std::unique_ptr<TokenRegistry>> open(std::string path,
                                                             ops::TenantQuotas defaults,
                                                             std::chrono::milliseconds refresh);

  /// The tenant of bearer token `token`, nullopt for an unknown or revoked one.
  std::optional<std::string> tenant_of(std::string_view token);
  /// The quotas of `tenant` (the defaults for a tenant the file does not name).
  ops::TenantQuotas quotas(const std::string& tenant);

 private:
  TokenRegistry(std::string path, ops::TenantQuotas defaults, std::chrono::milliseconds refresh);
  /// Re-reads the file if it changed and `refresh_` has passed since the last check.
  void maybe_reload();
  /// Reads and parses the file; keeps `stat_` for change detection.
  absl::StatusOr<TokenTable> read(struct stat& st) const;

  const std::string path_;
  const ops::TenantQuotas defaults_;
  const std::chrono::milliseconds refresh_;
  absl::Mutex mu_;
  std::shared_ptr<const TokenTable> table_ ABSL_GUARDED_BY(mu_);
  struct stat stat_ ABSL_GUARDED_BY(mu_) {};
  std::chrono::steady_clock::time_point checked_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gcompute::server
