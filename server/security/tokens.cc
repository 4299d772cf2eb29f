// SPDX-License-Identifier: Apache-2.0
#include "security/tokens.hpp"

#include <fcntl.h>
#include <openssl/sha.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/quote.hpp"

namespace gcompute::server {
namespace {

bool same_file_state(const struct stat& a, const struct stat& b) {
  return a.st_ino == b.st_ino && a.st_dev == b.st_dev && a.st_size == b.st_size &&
         a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec;
}

/// Sets the quota `key` of `q` from `value`; INVALID_ARGUMENT naming the line otherwise.
absl::Status set_quota(ops::TenantQuotas& q, absl::string_view key, absl::string_view value,
                       int line) {
  std::uint64_t n = 0;
  if (!absl::SimpleAtoi(value, &n)) {
    return absl::InvalidArgumentError(
        absl::StrCat("tokens file line ", line, ": quota ", quote_id(std::string(key)),
                     " needs a non-negative integer, got ", quote_id(std::string(value))));
  }
  if (key == "stored_bytes") {
    q.stored_bytes = n;
  } else if (key == "graphs") {
    q.graphs = n;
  } else if (key == "running") {
    q.running = n;
  } else if (key == "queued") {
    q.queued = n;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("tokens file line ", line, ": unknown quota ",
                                                   quote_id(std::string(key)),
                                                   " (stored_bytes, graphs, running or queued)"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(2 * SHA256_DIGEST_LENGTH, '0');
  for (int i = 0; i < SHA256_DIGEST_LENGTH; ++i) {
    out[2 * i] = kHex[digest[i] >> 4];
    out[2 * i + 1] = kHex[digest[i] & 15];
  }
  return out;
}

bool valid_tenant_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return false;
    }
  }
  return true;
}

absl::StatusOr<TokenTable> TokenTable::parse(std::string_view text,
                                             const ops::TenantQuotas& defaults) {
  TokenTable table;
  // Overrides as written, so that two lines of one tenant may not disagree.
  std::map<std::string, std::map<std::string, std::string>> overrides;
  int line_no = 0;
  // absl's own string_view here: Debian's Abseil does not alias std::string_view.
  for (absl::string_view line : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    ++line_no;
    if (const std::size_t hash = line.find('#'); hash != absl::string_view::npos) {
      line = line.substr(0, hash);
    }
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (fields.empty()) continue;
    if (fields.size() < 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tokens file line ", line_no, ": expected TENANT SHA256-HEX [KEY=VALUE...]"));
    }
    const std::string tenant(fields[0]);
    if (!valid_tenant_name(tenant)) {
      return absl::InvalidArgumentError(absl::StrCat("tokens file line ", line_no, ": tenant ",
                                                     quote_id(tenant),
                                                     " must be 1-64 characters of [A-Za-z0-9._-]"));
    }
    const std::string digest = absl::AsciiStrToLower(fields[1]);
    if (digest.size() != 64 || digest.find_first_not_of("0123456789abcdef") != std::string::npos) {
      // The value is not echoed: it might be a token pasted by mistake.
      return absl::InvalidArgumentError(
          absl::StrCat("tokens file line ", line_no,
                       ": the second field must be 64 hex digits (SHA-256 of the "
                       "token), got ",
                       fields[1].size(), " characters"));
    }
    auto [it, inserted] = table.tenant_of_digest.emplace(digest, tenant);
    if (!inserted && it->second != tenant) {
      return absl::InvalidArgumentError(
          absl::StrCat("tokens file line ", line_no, ": the same token is listed for tenants ",
                       quote_id(it->second), " and ", quote_id(tenant)));
    }
    ops::TenantQuotas& q = table.quotas.emplace(tenant, defaults).first->second;
    auto& mine = overrides[tenant];
    for (std::size_t i = 2; i < fields.size(); ++i) {
      const std::size_t eq = fields[i].find('=');
      if (eq == absl::string_view::npos) {
        return absl::InvalidArgumentError(absl::StrCat("tokens file line ", line_no,
                                                       ": expected KEY=VALUE, got ",
                                                       quote_id(std::string(fields[i]))));
      }
      const std::string key(fields[i].substr(0, eq));
      const std::string value(fields[i].substr(eq + 1));
      if (auto [prev, fresh] = mine.emplace(key, value); !fresh && prev->second != value) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tokens file line ", line_no, ": tenant ", quote_id(tenant), " quota ", quote_id(key),
            " is ", quote_id(value), " here but ", quote_id(prev->second), " on an earlier line"));
      }
      if (auto st = set_quota(q, key, value, line_no); !st.ok()) return st;
    }
  }
  return table;
}

TokenRegistry::TokenRegistry(std::string path, ops::TenantQuotas defaults,
                             std::chrono::milliseconds refresh)
    : path_(std::move(path)), defaults_(defaults), refresh_(refresh) {}

absl::StatusOr<std::unique_ptr<TokenRegistry>> TokenRegistry::open(
    std::string path, ops::TenantQuotas defaults, std::chrono::milliseconds refresh) {
  std::unique_ptr<TokenRegistry> r(new TokenRegistry(std::move(path), defaults, refresh));
  struct stat st {};
  absl::StatusOr<TokenTable> table = r->read(st);
  if (!table.ok()) return table.status();
  absl::MutexLock lock(&r->mu_);
  r->table_ = std::make_shared<const TokenTable>(*std::move(table));
  r->stat_ = st;
  r->checked_ = std::chrono::steady_clock::now();
  return r;
}

absl::StatusOr<TokenTable> TokenRegistry::read(struct stat& st) const {
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(
        absl::StrCat("--auth-tokens ", path_, ": cannot open: ", std::strerror(errno)));
  }
  std::string text;
  if (::fstat(fd, &st) == 0) {
    char buf[8192];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n <= 0) break;
      text.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  absl::StatusOr<TokenTable> table = TokenTable::parse(text, defaults_);
  if (!table.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--auth-tokens ", path_, ": ", table.status().message()));
  }
  return table;
}

void TokenRegistry::maybe_reload() {
  const auto now = std::chrono::steady_clock::now();
  {
    absl::MutexLock lock(&mu_);
    if (now - checked_ < refresh_) return;
    checked_ = now;
    struct stat st {};
    // A file that is briefly missing (replaced by rename) keeps the current table.
    if (::stat(path_.c_str(), &st) != 0 || same_file_state(st, stat_)) return;
  }
  struct stat st {};
  absl::StatusOr<TokenTable> table = read(st);
  if (!table.ok()) {
    std::cerr << "gcompute-server: keeping the previous tokens: " << table.status().message()
              << std::endl;
  }
  absl::MutexLock lock(&mu_);
  stat_ = st;  // a broken file is reported once, not on every check
  if (table.ok()) table_ = std::make_shared<const TokenTable>(*std::move(table));
}

std::optional<std::string> TokenRegistry::tenant_of(std::string_view token) {
  maybe_reload();
  const std::string digest = sha256_hex(token);
  absl::MutexLock lock(&mu_);
  auto it = table_->tenant_of_digest.find(digest);
  if (it == table_->tenant_of_digest.end()) return std::nullopt;
  return it->second;
}

ops::TenantQuotas TokenRegistry::quotas(const std::string& tenant) {
  absl::MutexLock lock(&mu_);
  auto it = table_->quotas.find(tenant);
  return it == table_->quotas.end() ? defaults_ : it->second;
}

}  // namespace gcompute::server
