// SPDX-License-Identifier: Apache-2.0
// Matrices moved between client and one replica: chunked UploadMatrix / DownloadMatrix
// streams, deletion, and taking a MatrixResult (inline, or stored: downloaded and deleted).
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gcompute/client/client.hpp"
#include "gcompute/v1/service.pb.h"
#include "replicas.hpp"

namespace gcompute::client {

// Deleting temporary server matrices must not fail just because the call's own deadline
// has passed; the server's TTL is the backstop if this one runs out too.
inline constexpr absl::Duration kCleanupTimeout = absl::Seconds(30);

class SharedArena;

/// The replica, deadline, chunk size and progress callback that one call's transfers share,
/// and the shared-memory arena results may lie in.
struct TransferTarget {
  Replica& replica;
  absl::Time deadline;
  uint64_t chunk_bytes;
  const ProgressCallback& progress;
  const SharedArena* arena = nullptr;
};

/// Uploads `m` in chunks of target.chunk_bytes; INVALID_ARGUMENT if its data does not match
/// its shape (nothing is sent then).
absl::StatusOr<StoredMatrix> upload_in_chunks(const TransferTarget& target, const HostMatrix& m,
                                              int64_t ttl_seconds);
/// Downloads stored matrix `ref`, checking that the chunks add up to the header's shape.
absl::StatusOr<HostMatrix> download_in_chunks(const TransferTarget& target, const MatrixRef& ref);
/// The same into `out`, whose buffer is reused when it has the matrix's size already.
absl::Status download_in_chunks(const TransferTarget& target, const MatrixRef& ref,
                                HostMatrix& out);
absl::Status delete_stored_matrix(Replica& replica, const MatrixRef& ref, absl::Time deadline);

/// The host matrix of result field `what`: inline, stored (downloaded, then deleted), or in
/// target.arena (copied out).
absl::StatusOr<HostMatrix> take_result_matrix(const TransferTarget& target,
                                              ::gcompute::v1::MatrixResult* result,
                                              const char* what);

}  // namespace gcompute::client
