// SPDX-License-Identifier: Apache-2.0
// Plain host-side values of the client library: matrices, graphs, server description.
// No gRPC or protobuf types, so that users of the client need not include generated code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace gcompute::client {

/// Element type; values equal gcompute.v1.DType.
enum class DType : int {
  kUnspecified = 0,
  kF32 = 1,
  kF64 = 2,
  kF16 = 3,
  kBF16 = 4,
  kI32 = 5,
};

/// Bytes per element (0 for kUnspecified).
std::size_t dtype_size(DType dtype);
/// "f32", "f64", "f16", "bf16", "i32" or "unspecified".
const char* dtype_name(DType dtype);

/// A dense matrix or a batch of equally shaped matrices, row-major, little-endian, batch
/// outermost: exactly the layout of gcompute.v1.Matrix.
struct HostMatrix {
  int64_t batch = 1;
  int64_t rows = 0;
  int64_t cols = 0;
  DType dtype = DType::kUnspecified;
  std::string data;  ///< batch * rows * cols * dtype_size(dtype) bytes

  /// Number of elements over all batches.
  int64_t elements() const { return batch * rows * cols; }
  /// The byte length `data` must have.
  std::size_t expected_bytes() const {
    return static_cast<std::size_t>(elements()) * dtype_size(dtype);
  }
};

/// Names a matrix stored on the server.
struct MatrixRef {
  std::string id;
};

/// A matrix kept on the server.
struct StoredMatrix {
  MatrixRef ref;
  int64_t batch = 1;
  int64_t rows = 0;
  int64_t cols = 0;
  DType dtype = DType::kUnspecified;
  int64_t expires_at_unix_ms = 0;
  uint64_t size_bytes = 0;
};

/// Where the server says the time of a call went.
struct ExecutionStats {
  double queue_seconds = 0;
  double h2d_seconds = 0;
  double compute_seconds = 0;
  double d2h_seconds = 0;
  double total_seconds = 0;
  std::string device;
};

/// A graph as an edge list (0-based vertices); parallel edges keep the smallest weight.
struct EdgeList {
  int64_t num_vertices = 0;
  std::vector<int64_t> src;
  std::vector<int64_t> dst;
  std::vector<double> weight;
  DType dtype = DType::kF32;  ///< kF32 or kI32
};

/// A directed hyperedge from every tail to every head.
struct Hyperedge {
  uint64_t id = 0;  ///< assigned by the server; ignored when creating
  std::vector<uint64_t> tails;
  std::vector<uint64_t> heads;
  double weight = 0;
};

/// Summary of a stored graph.
struct GraphInfo {
  std::string graph_id;
  uint64_t version = 0;
  uint64_t num_vertices = 0;
  uint64_t num_edges = 0;
};

/// A consistent snapshot of a stored graph.
struct GraphSnapshot {
  GraphInfo info;
  std::vector<uint64_t> vertices;
  std::vector<Hyperedge> edges;
};

/// The edits of ApplyEdits (see gcompute.v1.Edit).
struct AddVertex {};
struct DeleteVertex {
  uint64_t vertex_id = 0;
};
struct AddEdge {
  std::vector<uint64_t> tails;
  std::vector<uint64_t> heads;
  double weight = 0;
};
struct DeleteEdge {
  uint64_t edge_id = 0;
};
struct SetWeight {
  uint64_t edge_id = 0;
  double weight = 0;
};
struct DecomposeVertex {
  uint64_t vertex_id = 0;
  std::vector<uint64_t> move_edge_ids;
  double joining_weight = 0;
};
using GraphEdit =
    std::variant<AddVertex, DeleteVertex, AddEdge, DeleteEdge, SetWeight, DecomposeVertex>;

/// What one edit created or removed.
struct EditResult {
  uint64_t vertex_id = 0;
  uint64_t edge_id = 0;
  std::vector<uint64_t> deleted_edge_ids;
};

struct ApplyEditsResult {
  uint64_t version = 0;
  std::vector<EditResult> results;
};

struct DeviceInfo {
  int32_t index = 0;
  std::string name;
  uint64_t memory_bytes = 0;
  std::string compute_capability;
};

struct ServerLimits {
  uint64_t max_message_bytes = 0;
  uint64_t max_matrix_elements = 0;
  uint32_t queue_depth = 0;
  uint64_t stored_matrix_quota_bytes = 0;
  int64_t default_ttl_seconds = 0;
  uint32_t workers = 0;
};

struct ServerInfo {
  std::string version;
  std::string backend;
  std::string backend_note;
  std::vector<DeviceInfo> devices;
  ServerLimits limits;
};

}  // namespace gcompute::client
