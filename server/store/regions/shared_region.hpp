// SPDX-License-Identifier: Apache-2.0
// Clients' shared-memory regions mapped into the server (RegisterSharedMemory): a same-host
// client names its own memory as operands and as the destination of results, so the bytes
// never cross the wire. Proto-free and CUDA-free: a backend that page-locks memory for its
// device copies does so through RegionRegistry::Options::pin.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/device_memory.hpp"

namespace gcompute::server {

/// One mapped region: bytes [offset, offset + size) of a POSIX shared-memory object. Held by
/// shared_ptr: a call that resolved it keeps it mapped after it is unregistered.
class SharedRegion {
 public:
  struct Description {
    std::string id;
    std::string owner;  ///< the tenant that registered it; nobody else can name it
    std::string name;   ///< the object's shm_open name
    std::uint64_t offset = 0;
    std::uint64_t size = 0;
    bool pinned = false;   ///< page-locked for direct device copies
    int cuda_device = -1;  ///< >= 0: GPU memory of that device (a CUDA IPC region)
  };

  SharedRegion(Description description, int fd, void* mapping, std::uint64_t mapping_bytes,
               std::byte* start, std::function<void()> release);
  ~SharedRegion();
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  const Description& description() const { return description_; }
  const std::string& id() const { return description_.id; }
  /// When a call last named the region (steady clock, nanoseconds); RegionRegistry::expire_idle.
  std::int64_t last_used_ns() const { return last_used_ns_.load(std::memory_order_relaxed); }
  bool pinned() const { return description_.pinned; }
  /// The GPU whose memory the region is, or -1 for host memory.
  int cuda_device() const { return description_.cuda_device; }

  /// Bytes [offset, offset + bytes) of the region. INVALID_ARGUMENT naming `field` and the
  /// bounds when they do not lie inside it; FAILED_PRECONDITION when the object was shrunk
  /// below the region since it was registered (touching it would fault).
  absl::StatusOr<std::byte*> span(std::uint64_t offset, std::uint64_t bytes,
                                  const std::string& field) const;

  /// Whether bytes [offset, offset + bytes) of this region and [other_offset, other_offset +
  /// other_bytes) of `other` may be the same memory: overlapping bytes of one object (two regions
  /// can map the same object). GPU regions of one device always may.
  bool may_overlap(std::uint64_t offset, std::uint64_t bytes, const SharedRegion& other,
                   std::uint64_t other_offset, std::uint64_t other_bytes) const;

 private:
  Description description_;
  int fd_;
  void* mapping_;
  std::uint64_t mapping_bytes_;
  std::byte* start_;
  std::function<void()> release_;
  mutable std::atomic<std::int64_t> last_used_ns_;
};

/// The regions of every tenant, by id.
class RegionRegistry {
 public:
  struct Options {
    /// Regions one tenant may hold at once (RESOURCE_EXHAUSTED beyond).
    std::size_t max_regions_per_owner = 64;
    /// expire_idle() drops regions no call has named for this long (a client that died without
    /// unregistering would otherwise keep its memory mapped, and pinned, until a restart).
    std::int64_t idle_ns = 600'000'000'000;
    /// Page-locks [ptr, ptr + bytes) for device copies and returns how to undo it, or an empty
    /// function when it did not (the region then works through staged copies). Optional.
    std::function<std::function<void()>(void* ptr, std::uint64_t bytes)> pin;
    /// Opens a CUDA IPC handle on a device; empty: no GPU (FAILED_PRECONDITION).
    std::function<absl::StatusOr<OpenedDeviceMemory>(const std::string& handle, int device)>
        open_device;
  };

  explicit RegionRegistry(Options options) : options_(std::move(options)) {}

  /// Maps bytes [offset, offset + byte_size) of the object `name` (byte_size 0: to its end)
  /// for `owner`. INVALID_ARGUMENT for a bad name or bounds, NOT_FOUND when no such object
  /// exists, PERMISSION_DENIED when it belongs to another user or others may write it.
  absl::StatusOr<std::shared_ptr<const SharedRegion>> add(const std::string& owner,
                                                          const std::string& name,
                                                          std::uint64_t offset,
                                                          std::uint64_t byte_size);
  /// Opens bytes [offset, offset + byte_size) of the GPU allocation a CUDA IPC `handle` names
  /// on `device` (byte_size 0: to its end) for `owner`.
  absl::StatusOr<std::shared_ptr<const SharedRegion>> add_device(const std::string& owner,
                                                                 const std::string& handle,
                                                                 int device, std::uint64_t offset,
                                                                 std::uint64_t byte_size);
  /// NOT_FOUND for an unknown id or another owner's.
  absl::Status remove(const std::string& owner, const std::string& id);
  /// `owner`'s region `id`; NOT_FOUND naming `field` otherwise.
  absl::StatusOr<std::shared_ptr<const SharedRegion>> find(const std::string& owner,
                                                           const std::string& id,
                                                           const std::string& field) const;
  std::size_t size() const;
  /// Forgets every region, as a restart does (calls using one finish first).
  void clear();
  /// Forgets the regions idle for longer than Options::idle_ns; returns how many.
  std::size_t expire_idle();

 private:
  /// RESOURCE_EXHAUSTED when `owner` holds the most regions allowed (call with mu_ held).
  absl::Status check_room_locked(const std::string& owner) const;
  absl::Status check_room(const std::string& owner) const;
  /// Adds `region` unless its owner filled its room meanwhile (the region is then released).
  absl::StatusOr<std::shared_ptr<const SharedRegion>> keep(
      std::shared_ptr<const SharedRegion> region);

  Options options_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const SharedRegion>> regions_;
};

}  // namespace gcompute::server
