// SPDX-License-Identifier: Apache-2.0
#include "store/matrices/matrix_store.hpp"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/quote.hpp"
#include "common/random_id.hpp"

namespace gcompute::server {
namespace {

absl::Status not_found(const char* field, const std::string& id) {
  return absl::NotFoundError(
      absl::StrCat(field, " = ", quote_id(id), ": no such stored matrix (deleted or expired)"));
}

}  // namespace

MatrixStore::Reservation& MatrixStore::Reservation::operator=(Reservation&& o) noexcept {
  if (this != &o) {
    if (store_ != nullptr) store_->release(owner_, bytes_);
    store_ = o.store_;
    owner_ = std::move(o.owner_);
    bytes_ = o.bytes_;
    o.store_ = nullptr;
  }
  return *this;
}

MatrixStore::Reservation::~Reservation() {
  if (store_ != nullptr) store_->release(owner_, bytes_);
}

void MatrixStore::charge_locked(const std::string& owner, std::int64_t bytes) {
  used_ += static_cast<std::uint64_t>(bytes);
  std::uint64_t& mine = by_owner_[owner];
  mine += static_cast<std::uint64_t>(bytes);
  if (mine == 0) by_owner_.erase(owner);
}

void MatrixStore::release(const std::string& owner, std::uint64_t bytes) {
  std::lock_guard lock(mu_);
  charge_locked(owner, -static_cast<std::int64_t>(bytes));
}

Matrix MatrixStore::take_locked(std::map<std::string, Entry>::iterator it) {
  charge_locked(it->second.owner, -static_cast<std::int64_t>(it->second.matrix.desc.bytes()));
  by_expiry_.erase({it->second.expires_at, it->first});
  Matrix taken = std::move(it->second.matrix);
  entries_.erase(it);
  return taken;
}

void MatrixStore::evict_expired_locked(absl::Time now, std::vector<Matrix>& dropped) {
  while (!by_expiry_.empty() && by_expiry_.begin()->first <= now) {
    dropped.push_back(take_locked(entries_.find(by_expiry_.begin()->second)));
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

absl::StatusOr<MatrixStore::Reservation> MatrixStore::reserve(const std::string& owner,
                                                              std::uint64_t bytes) {
  std::vector<Matrix> dropped;  // declared first: freed after the lock is released
  std::lock_guard lock(mu_);
  evict_expired_locked(absl::Now(), dropped);
  if (options_.owner_quota_bytes) {
    const std::uint64_t quota = options_.owner_quota_bytes(owner);
    auto it = by_owner_.find(owner);
    const std::uint64_t mine = it == by_owner_.end() ? 0 : it->second;
    if (bytes > quota || mine > quota - bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("tenant ", quote_id(owner), " stored-matrix quota exceeded: ", bytes,
                       " bytes requested, ", mine, " of ", quota,
                       " in use (stored_bytes); delete matrices or wait for their TTL"));
    }
  }
  if (bytes > options_.quota_bytes - used_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "stored-matrix quota exceeded: ", bytes, " bytes requested, ", used_, " of ",
        options_.quota_bytes,
        " in use (--stored-matrix-quota-bytes); delete matrices or wait for their TTL"));
  }
  charge_locked(owner, static_cast<std::int64_t>(bytes));
  return Reservation(this, owner, bytes);
}

absl::StatusOr<absl::Duration> MatrixStore::ttl_from_seconds(std::int64_t seconds,
                                                             const char* field) const {
  if (seconds < 0) {
    return absl::InvalidArgumentError(absl::StrCat(field, " must be >= 0, got ", seconds));
  }
  if (seconds == 0) return options_.default_ttl;
  if (seconds > absl::ToInt64Seconds(options_.max_ttl)) {
    return absl::InvalidArgumentError(absl::StrCat(field, " = ", seconds,
                                                   " exceeds the maximum of ",
                                                   absl::ToInt64Seconds(options_.max_ttl), " s"));
  }
  return absl::Seconds(seconds);
}

absl::StatusOr<StoredMatrixInfo> MatrixStore::put(Matrix m, absl::Duration ttl,
                                                  Reservation reservation) {
  if (ttl <= absl::ZeroDuration()) ttl = options_.default_ttl;
  StoredMatrixInfo info{random_id("m-"), m.desc, absl::Now() + ttl};
  std::lock_guard lock(mu_);
  // The reservation's bytes become the entry's; it must no longer release them.
  reservation.store_ = nullptr;
  entries_.emplace(info.id, Entry{std::move(reservation.owner_), std::move(m), info.expires_at});
  by_expiry_.emplace(info.expires_at, info.id);
  return info;
}

const MatrixStore::Entry* MatrixStore::find_locked(const std::string& owner,
                                                   const std::string& id) const {
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.owner != owner || it->second.expires_at <= absl::Now()) {
    return nullptr;
  }
  return &it->second;
}

absl::StatusOr<Matrix> MatrixStore::get(const std::string& owner, const std::string& id,
                                        const char* field) const {
  std::lock_guard lock(mu_);
  const Entry* e = find_locked(owner, id);
  if (e == nullptr) return not_found(field, id);
  return e->matrix;
}

absl::StatusOr<Matrix> MatrixStore::read(const std::string& owner, const std::string& id,
                                         bool release, const char* field) {
  if (!release) return get(owner, id, field);
  std::lock_guard lock(mu_);
  if (find_locked(owner, id) == nullptr) return not_found(field, id);
  return take_locked(entries_.find(id));  // the caller frees it, outside the lock
}

absl::StatusOr<StoredMatrixInfo> MatrixStore::info(const std::string& owner, const std::string& id,
                                                   const char* field) const {
  std::lock_guard lock(mu_);
  const Entry* e = find_locked(owner, id);
  if (e == nullptr) return not_found(field, id);
  return StoredMatrixInfo{id, e->matrix.desc, e->expires_at};
}

absl::Status MatrixStore::remove(const std::string& owner, const std::string& id) {
  Matrix dropped;  // freed after the lock is released
  std::lock_guard lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.owner != owner) return not_found("ref.id", id);
  dropped = take_locked(it);
  return absl::OkStatus();
}

std::uint64_t MatrixStore::used_bytes() const {
  std::lock_guard lock(mu_);
  return used_;
}

std::uint64_t MatrixStore::used_bytes(const std::string& owner) const {
  std::lock_guard lock(mu_);
  auto it = by_owner_.find(owner);
  return it == by_owner_.end() ? 0 : it->second;
}

std::map<std::string, std::uint64_t> MatrixStore::used_bytes_by_owner() const {
  std::lock_guard lock(mu_);
  return by_owner_;
}

}  // namespace gcompute::server
