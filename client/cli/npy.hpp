// SPDX-License-Identifier: Apache-2.0
// NumPy .npy files (format versions 1.0, 2.0 and 3.0): little-endian f32, f64 and i32 arrays
// of 1, 2 or 3 dimensions in C order. Anything else is refused with a message naming the
// file and what it holds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gcompute/client/host_matrix.hpp"

namespace gcompute::cli {

/// An array as stored in a .npy file.
struct NpyArray {
  std::vector<int64_t> shape;                         ///< 1 to 3 dimensions
  client::DType dtype = client::DType::kUnspecified;  ///< kF32, kF64 or kI32
  std::string data;                                   ///< C order, little-endian
};

/// Parses the bytes of a .npy file; `name` labels error messages.
absl::StatusOr<NpyArray> parse_npy(const std::string& bytes, const std::string& name);
/// Serializes as format 1.0 (2.0 when the header needs more than 65535 bytes).
absl::StatusOr<std::string> serialize_npy(const NpyArray& array);

absl::StatusOr<NpyArray> read_npy(const std::string& path);
absl::Status write_npy(const std::string& path, const NpyArray& array);

/// 1-D arrays become one row (1 x n), 2-D a single matrix, 3-D a batch.
client::HostMatrix to_host_matrix(NpyArray array);
/// A single matrix becomes 2-D (or 1-D when `as_vector` and rows == 1), a batch 3-D.
NpyArray to_npy(client::HostMatrix matrix, bool as_vector = false);

/// Reads a whole file; the error names the path.
absl::StatusOr<std::string> read_file(const std::string& path);
/// Writes a whole file (replacing it); the error names the path.
absl::Status write_file(const std::string& path, const std::string& bytes);

}  // namespace gcompute::cli
