// SPDX-License-Identifier: Apache-2.0
// Shared memory with a server on this host: the client's operands and the server's results go
// through a POSIX shared-memory object both processes map, not through the socket. An arena is
// one such object, registered with one replica; the pool keeps a few per replica between calls
// and remembers which replicas cannot share memory with this process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "replicas.hpp"

namespace gcompute::client {

/// A shared-memory object this client created, mapped here and registered with one replica.
/// Its name is unlinked at once: the memory lives while the two mappings do, and a crash leaves
/// nothing behind in /dev/shm.
class SharedArena {
 public:
  /// RESOURCE_EXHAUSTED when the host cannot provide the memory; the server's status when it
  /// refuses the registration.
  static absl::StatusOr<std::unique_ptr<SharedArena>> create(Replica& replica, std::uint64_t bytes,
                                                             absl::Time deadline);
  /// Unregisters (best effort) and unmaps.
  ~SharedArena();
  SharedArena(const SharedArena&) = delete;
  SharedArena& operator=(const SharedArena&) = delete;

  std::byte* data() const { return data_; }
  std::uint64_t size() const { return size_; }
  const std::string& region_id() const { return region_id_; }

 private:
  SharedArena(Replica& replica, std::byte* data, std::uint64_t size)
      : replica_(replica), data_(data), size_(size) {}
  Replica& replica_;
  std::byte* data_;
  std::uint64_t size_;
  std::string region_id_;
};

/// The arenas of every replica. Thread-safe.
class SharedMemoryPool {
 public:
  explicit SharedMemoryPool(std::size_t replicas);

  /// An arena of at least `bytes` on replica `index`, or null where shared memory is not to be
  /// used: the server runs on another host (its boot id differs), does not serve it, or refused
  /// a registration before (remembered for the pool's life).
  std::unique_ptr<SharedArena> acquire(Replica& replica, std::size_t index, std::uint64_t bytes,
                                       absl::Time deadline);
  /// Keeps `arena` for a later call (a few per replica; others are released).
  void release(std::size_t index, std::unique_ptr<SharedArena> arena);

 private:
  struct PerReplica {
    std::mutex mu;
    std::optional<bool> usable;  ///< unknown until the first acquire
    std::vector<std::unique_ptr<SharedArena>> idle;
  };
  std::vector<std::unique_ptr<PerReplica>> replicas_;
};

/// This host's boot id (/proc/sys/kernel/random/boot_id); empty when unreadable.
const std::string& local_boot_id();

}  // namespace gcompute::client
