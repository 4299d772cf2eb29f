// SPDX-License-Identifier: Apache-2.0
#include "store/matrices/matrix_store.hpp"

#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace gcompute::server {
namespace {

std::string new_matrix_id() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return absl::StrFormat("m-%016x%016x", rng(), rng());
}

}  // namespace

MatrixStore::Reservation& MatrixStore::Reservation::operator=(Reservation&& o) noexcept {
  if (this != &o) {
    if (store_ != nullptr) store_->release(bytes_);
    store_ = o.store_;
    bytes_ = o.bytes_;
    o.store_ = nullptr;
  }
  return *this;
}

MatrixStore::Reservation::~Reservation() {
  if (store_ != nullptr) store_->release(bytes_);
}

void MatrixStore::release(std::uint64_t bytes) {
  std::lock_guard lock(mu_);
  used_ -= bytes;
}

void MatrixStore::evict_expired_locked(absl::Time now, std::vector<Matrix>& dropped) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.expires_at <= now) {
      used_ -= it->second.matrix.desc.bytes();
      dropped.push_back(std::move(it->second.matrix));
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
}

std::size_t MatrixStore::evict_expired() {
  std::vector<Matrix> dropped;
  {
    std::lock_guard lock(mu_);
    evict_expired_locked(absl::Now(), dropped);
  }
  return dropped.size();  // freed here, outside the lock
}

absl::StatusOr<MatrixStore::Reservation> MatrixStore::reserve(std::uint64_t bytes) {
  std::vector<Matrix> dropped;  // declared first: freed after the lock is released
  std::lock_guard lock(mu_);
  evict_expired_locked(absl::Now(), dropped);
  if (bytes > options_.quota_bytes - used_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "stored-matrix quota exceeded: ", bytes, " bytes requested, ", used_, " of ",
        options_.quota_bytes,
        " in use (--stored-matrix-quota-bytes); delete matrices or wait for their TTL"));
  }
  used_ += bytes;
  return Reservation(this, bytes);
}

absl::StatusOr<absl::Duration> MatrixStore::ttl_from_seconds(std::int64_t seconds,
                                                             const char* field) const {
  if (seconds < 0) {
    return absl::InvalidArgumentError(absl::StrCat(field, " must be >= 0, got ", seconds));
  }
  if (seconds == 0) return options_.default_ttl;
  const absl::Duration ttl = absl::Seconds(seconds);
  if (ttl > options_.max_ttl) {
    return absl::InvalidArgumentError(absl::StrCat(field, " = ", seconds,
                                                   " exceeds the maximum of ",
                                                   absl::ToInt64Seconds(options_.max_ttl), " s"));
  }
  return ttl;
}

absl::StatusOr<StoredMatrixInfo> MatrixStore::put(Matrix m, absl::Duration ttl,
                                                  Reservation reservation) {
  if (ttl <= absl::ZeroDuration()) ttl = options_.default_ttl;
  StoredMatrixInfo info{new_matrix_id(), m.desc, absl::Now() + ttl};
  std::lock_guard lock(mu_);
  // The reservation's bytes become the entry's; it must no longer release them.
  reservation.store_ = nullptr;
  entries_.emplace(info.id, Entry{std::move(m), info.expires_at});
  return info;
}

absl::StatusOr<StoredMatrixInfo> MatrixStore::put(Matrix m, absl::Duration ttl) {
  auto reservation = reserve(m.desc.bytes());
  if (!reservation.ok()) return reservation.status();
  return put(std::move(m), ttl, *std::move(reservation));
}

absl::StatusOr<Matrix> MatrixStore::get(const std::string& id, const char* field) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.expires_at <= absl::Now()) {
    return absl::NotFoundError(
        absl::StrCat(field, " = \"", id, "\": no such stored matrix (deleted or expired)"));
  }
  return it->second.matrix;
}

absl::StatusOr<StoredMatrixInfo> MatrixStore::info(const std::string& id, const char* field) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.expires_at <= absl::Now()) {
    return absl::NotFoundError(
        absl::StrCat(field, " = \"", id, "\": no such stored matrix (deleted or expired)"));
  }
  return StoredMatrixInfo{id, it->second.matrix.desc, it->second.expires_at};
}

absl::Status MatrixStore::remove(const std::string& id) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) {
    return absl::NotFoundError(absl::StrCat("ref.id = \"", id, "\": no such stored matrix"));
  }
  used_ -= it->second.matrix.desc.bytes();
  entries_.erase(it);
  return absl::OkStatus();
}

std::uint64_t MatrixStore::used_bytes() const {
  std::lock_guard lock(mu_);
  return used_;
}

}  // namespace gcompute::server
