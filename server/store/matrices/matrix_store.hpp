// SPDX-License-Identifier: Apache-2.0
// Server-resident matrices: results kept for chaining calls and chunked uploads, each with a
// TTL, all together under a byte quota.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
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
    std::uint64_t quota_bytes = 4ull << 30;
    absl::Duration default_ttl = absl::Minutes(10);
    absl::Duration max_ttl = absl::Hours(24);
  };
  explicit MatrixStore(Options options) : options_(options) {}

  /// Reserves quota for a matrix about to be filled (an upload). The reservation is released
  /// when the returned handle is destroyed unless it was committed with put().
  class Reservation {
   public:
    Reservation() = default;
    Reservation(MatrixStore* store, std::uint64_t bytes) : store_(store), bytes_(bytes) {}
    Reservation(Reservation&& o) noexcept : store_(o.store_), bytes_(o.bytes_) {
      o.store_ = nullptr;
    }
    Reservation& operator=(Reservation&& o) noexcept;
    ~Reservation();
    std::uint64_t bytes() const { return bytes_; }

   private:
    friend class MatrixStore;
    MatrixStore* store_ = nullptr;
    std::uint64_t bytes_ = 0;
  };
  /// RESOURCE_EXHAUSTED when `bytes` would exceed the quota (expired entries are evicted first).
  absl::StatusOr<Reservation> reserve(std::uint64_t bytes);

  /// Stores `m` under a new id, consuming `reservation` (which must cover m's bytes).
  /// ttl <= 0 selects the default; INVALID_ARGUMENT above the maximum TTL.
  absl::StatusOr<StoredMatrixInfo> put(Matrix m, absl::Duration ttl, Reservation reservation);
  /// Reserves and stores in one step.
  absl::StatusOr<StoredMatrixInfo> put(Matrix m, absl::Duration ttl);

  /// NOT_FOUND (naming `field` and the id) when absent or expired.
  absl::StatusOr<Matrix> get(const std::string& id, const char* field) const;
  absl::StatusOr<StoredMatrixInfo> info(const std::string& id, const char* field) const;
  absl::Status remove(const std::string& id);

  /// Checks a requested TTL (seconds, 0 = default) and turns it into a duration.
  absl::StatusOr<absl::Duration> ttl_from_seconds(std::int64_t seconds, const char* field) const;

  /// Drops every expired entry now and returns how many went. Their memory (host or GPU) is
  /// freed outside the store's lock, or later by a job still holding the matrix.
  std::size_t evict_expired();

  std::uint64_t used_bytes() const;
  std::uint64_t quota_bytes() const { return options_.quota_bytes; }
  absl::Duration default_ttl() const { return options_.default_ttl; }

 private:
  struct Entry {
    Matrix matrix;
    absl::Time expires_at;
  };
  /// Moves expired entries into `dropped`, which the caller destroys after unlocking.
  void evict_expired_locked(absl::Time now, std::vector<Matrix>& dropped);
  void release(std::uint64_t bytes);

  Options options_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;
  std::uint64_t used_ = 0;  ///< stored + reserved bytes
};

}  // namespace gcompute::server
