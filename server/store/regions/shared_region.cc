// SPDX-License-Identifier: Apache-2.0
#include "store/regions/shared_region.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/quote.hpp"
#include "common/random_id.hpp"

namespace gcompute::server {
namespace {

constexpr std::size_t kMaxNameCharacters = 250;
/// Only objects made for gcompute: the server runs as a user whose other shared memory (other
/// services' segments, semaphores) a caller must not reach through it.
constexpr char kNamePrefix[] = "/gcompute-";
constexpr std::size_t kNamePrefixLength = sizeof(kNamePrefix) - 1;
/// Where a region may start within its object or allocation: every operand whose offset is a
/// multiple of its element size is then aligned for any kernel.
constexpr std::uint64_t kRegionAlignment = 256;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

absl::Status check_name(const std::string& name) {
  bool ok = name.size() > kNamePrefixLength && name.size() <= kMaxNameCharacters + 1 &&
            name.compare(0, kNamePrefixLength, kNamePrefix) == 0;
  for (std::size_t i = 1; ok && i < name.size(); ++i) {
    const char c = name[i];
    ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "name = ", quote_id(name), " is not a name this server maps: \"", kNamePrefix,
      "\" then up to ", kMaxNameCharacters + 1 - kNamePrefixLength, " of [A-Za-z0-9._-]"));
}

absl::Status check_region_offset(std::uint64_t offset) {
  if (offset % kRegionAlignment == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("offset = ", offset, " is not a multiple of ", kRegionAlignment, " bytes"));
}

/// The object's size now (fstat), or -1 when it cannot be read.
std::int64_t object_bytes(int fd) {
  struct stat st {};
  return fstat(fd, &st) == 0 ? static_cast<std::int64_t>(st.st_size) : -1;
}

}  // namespace

SharedRegion::SharedRegion(Description description, int fd, void* mapping,
                           std::uint64_t mapping_bytes, std::byte* start,
                           std::function<void()> release)
    : description_(std::move(description)),
      fd_(fd),
      mapping_(mapping),
      mapping_bytes_(mapping_bytes),
      start_(start),
      release_(std::move(release)),
      last_used_ns_(now_ns()) {}

SharedRegion::~SharedRegion() {
  if (release_) release_();
  if (mapping_ != nullptr) munmap(mapping_, mapping_bytes_);
  if (fd_ >= 0) close(fd_);
}

absl::StatusOr<std::byte*> SharedRegion::span(std::uint64_t offset, std::uint64_t bytes,
                                              const std::string& field) const {
  const std::uint64_t size = description_.size;
  if (offset > size || bytes > size - offset) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": bytes [", offset, ", ", offset, " + ", bytes, ") do not lie inside region ",
        quote_id(description_.id), " of ", size, " bytes"));
  }
  last_used_ns_.store(now_ns(), std::memory_order_relaxed);
  if (fd_ < 0) return start_ + offset;  // device memory: the allocation cannot shrink
  // A client that shrinks its object under a registered region would make the server fault on
  // the lost pages; only its owner can (add() checks the mode), and each use checks again.
  const std::int64_t now = object_bytes(fd_);
  if (now < 0 || static_cast<std::uint64_t>(now) < description_.offset + size) {
    return absl::FailedPreconditionError(absl::StrCat(
        field, ": the shared-memory object ", quote_id(description_.name), " of region ",
        quote_id(description_.id), " now has ", now, " bytes, fewer than the ",
        description_.offset + size, " it had when registered; register it again"));
  }
  return start_ + offset;
}

bool SharedRegion::may_overlap(std::uint64_t offset, std::uint64_t bytes, const SharedRegion& other,
                               std::uint64_t other_offset, std::uint64_t other_bytes) const {
  if (bytes == 0 || other_bytes == 0) return false;
  if (cuda_device() != other.cuda_device()) return false;
  if (fd_ < 0 || other.fd_ < 0) return true;  // one device's memory: no object to tell them by
  struct stat mine {};
  struct stat theirs {};
  if (fstat(fd_, &mine) != 0 || fstat(other.fd_, &theirs) != 0) return true;
  if (mine.st_dev != theirs.st_dev || mine.st_ino != theirs.st_ino) return false;
  // Ranges within the one object.
  const std::uint64_t begin = description_.offset + offset;
  const std::uint64_t other_begin = other.description_.offset + other_offset;
  return begin < other_begin + other_bytes && other_begin < begin + bytes;
}

absl::StatusOr<std::shared_ptr<const SharedRegion>> RegionRegistry::add(const std::string& owner,
                                                                        const std::string& name,
                                                                        std::uint64_t offset,
                                                                        std::uint64_t byte_size) {
  if (auto st = check_name(name); !st.ok()) return st;
  if (auto st = check_region_offset(offset); !st.ok()) return st;
  if (auto st = check_room(owner); !st.ok()) return st;
  const int fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) {
      return absl::NotFoundError(absl::StrCat(
          "name = ", quote_id(name), ": no shared-memory object of that name on the server's ",
          "host (a client in another container or on another host cannot share memory)"));
    }
    if (err == EACCES) {
      return absl::PermissionDeniedError(
          absl::StrCat("name = ", quote_id(name), ": the server may not open it read-write"));
    }
    return absl::InternalError(
        absl::StrCat("shm_open(", quote_id(name), ") failed: ", std::strerror(err)));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    return absl::InternalError(absl::StrCat("fstat of ", quote_id(name), ": ", std::strerror(err)));
  }
  auto refuse = [fd](absl::Status status) {
    close(fd);
    return status;
  };
  if (st.st_uid != geteuid()) {
    return refuse(absl::PermissionDeniedError(
        absl::StrCat("name = ", quote_id(name), ": the object belongs to uid ", st.st_uid,
                     "; the server (uid ", geteuid(), ") maps only objects of its own user")));
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return refuse(absl::PermissionDeniedError(absl::StrCat(
        "name = ", quote_id(name), ": the object is writable by group or others (mode ",
        absl::StrFormat("%04o", st.st_mode & 07777), "); create it with mode 0600")));
  }
  const auto object = static_cast<std::uint64_t>(st.st_size);
  if (offset > object || (byte_size != 0 && byte_size > object - offset)) {
    return refuse(absl::InvalidArgumentError(
        absl::StrCat("offset = ", offset, ", byte_size = ", byte_size, ": the object ",
                     quote_id(name), " has ", object, " bytes")));
  }
  const std::uint64_t size = byte_size != 0 ? byte_size : object - offset;
  if (size == 0) {
    return refuse(absl::InvalidArgumentError(
        absl::StrCat("name = ", quote_id(name), ": the region would be empty (the object has ",
                     object, " bytes, offset = ", offset, ")")));
  }
  // mmap wants a page-aligned file offset: map from the page that holds `offset`.
  const auto page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  const std::uint64_t map_from = offset / page * page;
  const std::uint64_t mapping_bytes = size + (offset - map_from);
  void* mapping = mmap(nullptr, mapping_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                       static_cast<off_t>(map_from));
  if (mapping == MAP_FAILED) {
    const int err = errno;
    return refuse(absl::ResourceExhaustedError(
        absl::StrCat("mapping ", size, " bytes of ", quote_id(name), ": ", std::strerror(err))));
  }
  std::byte* start = static_cast<std::byte*>(mapping) + (offset - map_from);
  std::function<void()> unpin;
  if (options_.pin) unpin = options_.pin(start, size);
  SharedRegion::Description d{random_id("shm-"), owner, name, offset, size, bool(unpin)};
  return keep(
      std::make_shared<const SharedRegion>(d, fd, mapping, mapping_bytes, start, std::move(unpin)));
}

absl::StatusOr<std::shared_ptr<const SharedRegion>> RegionRegistry::add_device(
    const std::string& owner, const std::string& handle, int device, std::uint64_t offset,
    std::uint64_t byte_size) {
  if (!options_.open_device) {
    return absl::FailedPreconditionError(
        "cuda_ipc_handle: GPU memory can be shared only with a server on the CUDA backend");
  }
  if (auto st = check_region_offset(offset); !st.ok()) return st;
  if (auto st = check_room(owner); !st.ok()) return st;
  absl::StatusOr<OpenedDeviceMemory> opened = options_.open_device(handle, device);
  if (!opened.ok()) return opened.status();
  if (offset > opened->bytes || (byte_size != 0 && byte_size > opened->bytes - offset) ||
      (byte_size == 0 && offset == opened->bytes)) {
    if (opened->close) opened->close();
    return absl::InvalidArgumentError(absl::StrCat("offset = ", offset, ", byte_size = ", byte_size,
                                                   ": the device allocation has ", opened->bytes,
                                                   " bytes"));
  }
  const std::uint64_t size = byte_size != 0 ? byte_size : opened->bytes - offset;
  SharedRegion::Description d{random_id("shm-"), owner, "", offset, size, false, device};
  return keep(std::make_shared<const SharedRegion>(d, -1, nullptr, 0, opened->base + offset,
                                                   std::move(opened->close)));
}

absl::Status RegionRegistry::check_room(const std::string& owner) const {
  std::lock_guard lock(mu_);
  return check_room_locked(owner);
}

absl::Status RegionRegistry::check_room_locked(const std::string& owner) const {
  std::size_t held = 0;
  for (const auto& [id, region] : regions_) held += region->description().owner == owner;
  if (held < options_.max_regions_per_owner) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat("this caller already holds ", held,
                                                   " shared-memory regions, the most ",
                                                   "one tenant may hold; unregister one first"));
}

absl::StatusOr<std::shared_ptr<const SharedRegion>> RegionRegistry::keep(
    std::shared_ptr<const SharedRegion> region) {
  absl::Status room;
  {
    std::lock_guard lock(mu_);
    // Checked again: another registration of the same owner may have taken the last place.
    room = check_room_locked(region->description().owner);
    if (room.ok()) {
      regions_.emplace(region->id(), region);
      return region;
    }
  }
  return room;  // `region` is released here, outside the lock
}

absl::Status RegionRegistry::remove(const std::string& owner, const std::string& id) {
  std::shared_ptr<const SharedRegion> gone;  // unmapped outside the lock
  std::lock_guard lock(mu_);
  auto it = regions_.find(id);
  if (it == regions_.end() || it->second->description().owner != owner) {
    return absl::NotFoundError(
        absl::StrCat("region_id = ", quote_id(id), ": no such shared-memory region"));
  }
  gone = std::move(it->second);
  regions_.erase(it);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const SharedRegion>> RegionRegistry::find(
    const std::string& owner, const std::string& id, const std::string& field) const {
  std::lock_guard lock(mu_);
  auto it = regions_.find(id);
  if (it == regions_.end() || it->second->description().owner != owner) {
    return absl::NotFoundError(absl::StrCat(field, " = ", quote_id(id),
                                            ": no such shared-memory region (unregistered, or "
                                            "never registered by this caller)"));
  }
  return it->second;
}

void RegionRegistry::clear() {
  std::map<std::string, std::shared_ptr<const SharedRegion>> gone;  // unmapped outside the lock
  std::lock_guard lock(mu_);
  gone.swap(regions_);
}

std::size_t RegionRegistry::expire_idle() {
  std::vector<std::shared_ptr<const SharedRegion>> gone;  // released outside the lock
  const std::int64_t cutoff = now_ns() - options_.idle_ns;
  std::lock_guard lock(mu_);
  for (auto it = regions_.begin(); it != regions_.end();) {
    if (it->second->last_used_ns() < cutoff) {
      gone.push_back(std::move(it->second));
      it = regions_.erase(it);
    } else {
      ++it;
    }
  }
  return gone.size();
}

std::size_t RegionRegistry::size() const {
  std::lock_guard lock(mu_);
  return regions_.size();
}

}  // namespace gcompute::server
