// SPDX-License-Identifier: Apache-2.0
// Server-resident matrices: results kept for chaining calls and chunked uploads, each owned by
// the tenant that stored it, each with a TTL, under a byte quota for all tenants together and
// one per tenant. Ids carry 128 random bits; a matrix of another tenant is NOT_FOUND, exactly
// like one that does not exist.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/matrix.hpp"

namespace gcompute::server {

struct StoredMatrixInfo {
  std::string id;
  MatrixDesc desc;
  absl::Time expires_at;
};

class MatrixStore {
 public:
  struct Options {
    std::uint64_t quota_bytes = 4ull << 30;  ///< all tenants together
    /// The quota of one tenant; empty: each may use the whole quota_bytes.
    std::function<std::uint64_t(const std::string& owner)> owner_quota_bytes;
    absl::Duration default_ttl = absl::Minutes(10);
    absl::Duration max_ttl = absl::Hours(24);
  };
  explicit MatrixStore(Options options) : options_(std::move(options)) {}

  /// Quota reserved for a matrix about to be filled (an upload, a result). Released when the
  /// handle is destroyed unless it was committed with put().
  class Reservation {
   public:
    Reservation() = default;
    Reservation(Reservation&& o) noexcept
        : store_(o.store_), owner_(std::move(o.owner_)), bytes_(o.bytes_) {
      o.store_ = nullptr;
    }
    Reservation& operator=(Reservation&& o) noexcept;
    ~Reservation();
    std::uint64_t bytes() const { return bytes_; }

   private:
    friend class MatrixStore;
    Reservation(MatrixStore* store, std::string owner, std::uint64_t bytes)
        : store_(store), owner_(std::move(owner)), bytes_(bytes) {}
    MatrixStore* store_ = nullptr;
    std::string owner_;
    std::uint64_t bytes_ = 0;
  };
  /// RESOURCE_EXHAUSTED naming the quota when `bytes` would exceed the owner's or the
  /// server's (expired entries are evicted first).
  absl::StatusOr<Reservation> reserve(const std::string& owner, std::uint64_t bytes);

  /// Stores `m` under a new id for the reservation's owner, consuming the reservation (which
  /// must cover m's bytes). ttl <= 0 selects the default.
  absl::StatusOr<StoredMatrixInfo> put(Matrix m, absl::Duration ttl, Reservation reservation);

  /// NOT_FOUND (naming `field` and the id) when absent, expired or another owner's.
  absl::StatusOr<Matrix> get(const std::string& owner, const std::string& id,
                             const char* field) const;
  /// get() of a ref as the request asked: with `release`, the entry also leaves the store
  /// (and its quota) in the same step; the caller's copy keeps the data alive.
  absl::StatusOr<Matrix> read(const std::string& owner, const std::string& id, bool release,
                              const char* field);
  absl::StatusOr<StoredMatrixInfo> info(const std::string& owner, const std::string& id,
                                        const char* field) const;
  absl::Status remove(const std::string& owner, const std::string& id);

  /// Checks a requested TTL (seconds, 0 = default) and turns it into a duration.
  absl::StatusOr<absl::Duration> ttl_from_seconds(std::int64_t seconds, const char* field) const;

  /// Drops every expired entry now and returns how many went. Their memory (host or GPU) is
  /// freed outside the store's lock, or later by a job still holding the matrix.
  std::size_t evict_expired();

  /// Stored and reserved bytes: of everyone, or of one owner.
  std::uint64_t used_bytes() const;
  std::uint64_t used_bytes(const std::string& owner) const;
  /// Stored and reserved bytes per owner that holds any.
  std::map<std::string, std::uint64_t> used_bytes_by_owner() const;
  std::uint64_t quota_bytes() const { return options_.quota_bytes; }
  absl::Duration default_ttl() const { return options_.default_ttl; }

 private:
  struct Entry {
    std::string owner;
    Matrix matrix;
    absl::Time expires_at;
  };
  /// The owner's live entry, or null.
  const Entry* find_locked(const std::string& owner, const std::string& id) const;
  /// Removes the entry and its bytes from the quota; the caller destroys the matrix after
  /// unlocking.
  Matrix take_locked(std::map<std::string, Entry>::iterator it);
  /// Moves expired entries into `dropped`, which the caller destroys after unlocking.
  void evict_expired_locked(absl::Time now, std::vector<Matrix>& dropped);
  void charge_locked(const std::string& owner, std::int64_t bytes);
  void release(const std::string& owner, std::uint64_t bytes);

  Options options_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;
  /// (expiry, id) of every entry, soonest first: eviction visits only what has expired.
  std::set<std::pair<absl::Time, std::string>> by_expiry_;
  std::uint64_t used_ = 0;                         ///< stored + reserved bytes
  std::map<std::string, std::uint64_t> by_owner_;  ///< the same per owner (no zero entries)
};

}  // namespace gcompute::server
