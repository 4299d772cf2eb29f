// SPDX-License-Identifier: Apache-2.0
#include "shared_memory.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gcompute/v1/service.grpc.pb.h"
#include "unary_rpc.hpp"

namespace gcompute::client {
namespace {

namespace pb = ::gcompute::v1;

/// Arenas grow in steps of this many bytes (huge-page sized), so that sizes that differ a
/// little reuse one arena.
constexpr std::uint64_t kArenaStep = 2u << 20;
/// Idle arenas kept per replica.
constexpr std::size_t kIdlePerReplica = 2;
/// How long unregistering an arena may take when it is released.
constexpr absl::Duration kUnregisterTimeout = absl::Seconds(5);

std::string fresh_name() {
  std::uint64_t bits = 0;
  if (getrandom(&bits, sizeof bits, 0) != sizeof bits) bits ^= static_cast<std::uint64_t>(getpid());
  return absl::StrCat("/gcompute-", getpid(), "-", absl::Hex(bits, absl::kZeroPad16));
}

}  // namespace

const std::string& local_boot_id() {
  static const std::string id = [] {
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::string line;
    std::getline(in, line);
    return line;
  }();
  return id;
}

absl::StatusOr<std::unique_ptr<SharedArena>> SharedArena::create(Replica& replica,
                                                                 std::uint64_t bytes,
                                                                 absl::Time deadline) {
  const std::string name = fresh_name();
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("shm_open(", name, ") for shared memory: ", std::strerror(errno)));
  }
  // The server maps only objects no other user can write (the umask may have loosened 0600).
  void* mapping = MAP_FAILED;
  if (fchmod(fd, 0600) == 0 && ftruncate(fd, static_cast<off_t>(bytes)) == 0) {
    mapping = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  const int err = errno;
  close(fd);
  if (mapping == MAP_FAILED) {
    shm_unlink(name.c_str());
    return absl::ResourceExhaustedError(
        absl::StrCat("creating ", bytes, " bytes of shared memory: ", std::strerror(err)));
  }
  std::unique_ptr<SharedArena> arena(
      new SharedArena(replica, static_cast<std::byte*>(mapping), bytes));
  pb::RegisterSharedMemoryRequest request;
  request.set_name(name);
  absl::StatusOr<pb::RegisterSharedMemoryResponse> registered =
      unary_rpc(replica, &pb::Compute::Stub::RegisterSharedMemory, request, deadline);
  shm_unlink(name.c_str());  // both sides have it mapped (or the server never will)
  if (!registered.ok()) return registered.status();
  arena->region_id_ = registered->region().region_id();
  return arena;
}

SharedArena::~SharedArena() {
  if (!region_id_.empty()) {
    pb::UnregisterSharedMemoryRequest request;
    request.set_region_id(region_id_);
    (void)unary_rpc(replica_, &pb::Compute::Stub::UnregisterSharedMemory, request,
                    absl::Now() + kUnregisterTimeout);
  }
  munmap(data_, size_);
}

SharedMemoryPool::SharedMemoryPool(std::size_t replicas) {
  for (std::size_t i = 0; i < replicas; ++i) replicas_.push_back(std::make_unique<PerReplica>());
}

std::unique_ptr<SharedArena> SharedMemoryPool::acquire(Replica& replica, std::size_t index,
                                                       std::uint64_t bytes, absl::Time deadline) {
  PerReplica& r = *replicas_.at(index);
  std::unique_ptr<SharedArena> smaller;  // released outside the lock
  {
    std::lock_guard lock(r.mu);
    if (!r.usable.has_value()) {
      absl::StatusOr<pb::GetServerInfoResponse> info = unary_rpc(
          replica, &pb::Compute::Stub::GetServerInfo, pb::GetServerInfoRequest(), deadline);
      if (!info.ok()) return nullptr;  // asked again next time
      r.usable = info->shared_memory() && !local_boot_id().empty() &&
                 info->host_boot_id() == local_boot_id();
    }
    if (!*r.usable) return nullptr;
    for (auto it = r.idle.begin(); it != r.idle.end(); ++it) {
      if ((*it)->size() >= bytes) {
        std::unique_ptr<SharedArena> arena = std::move(*it);
        r.idle.erase(it);
        return arena;
      }
    }
    if (!r.idle.empty()) {
      smaller = std::move(r.idle.back());
      r.idle.pop_back();
    }
  }
  std::uint64_t size = (bytes + kArenaStep - 1) / kArenaStep * kArenaStep;
  if (smaller) size = std::max(size, 2 * smaller->size());
  smaller.reset();
  absl::StatusOr<std::unique_ptr<SharedArena>> arena = SharedArena::create(replica, size, deadline);
  if (arena.ok()) return *std::move(arena);
  const absl::StatusCode code = arena.status().code();
  if (code == absl::StatusCode::kNotFound || code == absl::StatusCode::kPermissionDenied ||
      code == absl::StatusCode::kFailedPrecondition || code == absl::StatusCode::kUnimplemented) {
    // Another /dev/shm (a container), another user, or shared memory turned off there.
    std::lock_guard lock(r.mu);
    r.usable = false;
  }
  return nullptr;
}

void SharedMemoryPool::release(std::size_t index, std::unique_ptr<SharedArena> arena) {
  if (arena == nullptr) return;
  PerReplica& r = *replicas_.at(index);
  {
    std::lock_guard lock(r.mu);
    if (r.idle.size() < kIdlePerReplica) {
      r.idle.push_back(std::move(arena));
      return;
    }
  }
  arena.reset();  // unregistered outside the lock
}

}  // namespace gcompute::client
