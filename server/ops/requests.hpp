// SPDX-License-Identifier: Apache-2.0
// The operations as the engine sees them: requests decoded from the wire but not yet
// validated, and their results. api/ builds these from protos and encodes the results; ops/
// validates, plans and runs them. Nothing here knows protobuf or CUDA.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/matrix.hpp"
#include "gcompute/kernels/eigh_types.hpp"
#include "gcompute/kernels/matmul_types.hpp"
#include "gcompute/kernels/svd_types.hpp"
#include "store/matrices/matrix_store.hpp"

namespace gcompute::server::ops {

/// An inline matrix exactly as received: dimensions unchecked, bytes moved out of the request.
struct MatrixInput {
  std::int64_t batch = 0;  ///< as on the wire: 0 and 1 both mean one matrix
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  DType dtype = DType::kF32;
  std::string data;
};

/// The id of a stored matrix, as received.
struct RefInput {
  std::string id;
  bool release = false;  ///< delete it from the store as it is read
};

/// A matrix in one of the caller's shared-memory regions, as received (SharedMemoryRef).
struct SharedMemoryInput {
  std::string region_id;
  std::uint64_t offset = 0;
  std::int64_t batch = 0;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  DType dtype = DType::kF32;
};

/// An operand: unset, inline, stored or in shared memory.
using OperandInput = std::variant<std::monostate, MatrixInput, RefInput, SharedMemoryInput>;

/// Where results go (OutputOptions on the wire).
struct OutputOptions {
  enum class Placement { kAuto, kInline, kStored, kSharedMemory };
  Placement placement = Placement::kAuto;
  std::int64_t ttl_seconds = 0;  ///< of stored results; 0: the server's default
  /// kSharedMemory: the region and the offset of the first result (set iff that placement).
  std::optional<std::string> region_id;
  std::uint64_t region_offset = 0;
};

/// A result written into a shared-memory region: where it lies, and its shape.
struct SharedMemoryResult {
  std::string region_id;
  std::uint64_t offset = 0;
  MatrixDesc desc;
};

/// A result: host bytes to send inline, a matrix kept in the store, or one written into the
/// caller's shared memory.
using ResultMatrix = std::variant<Matrix, StoredMatrixInfo, SharedMemoryResult>;

struct TransposeRequest {
  OperandInput a;
  OutputOptions output;
};
struct TransposeResult {
  ResultMatrix at;
};

struct MatMulRequest {
  OperandInput a;
  OperandInput b;
  OperandInput c;  ///< read only when beta != 0
  bool transpose_a = false;
  bool transpose_b = false;
  kernels::Precision precision = kernels::Precision::kDefault;
  std::optional<double> alpha;  ///< default 1
  std::optional<double> beta;   ///< default 0
  OutputOptions output;
};
struct MatMulResult {
  ResultMatrix c;
};

struct SvdRequest {
  OperandInput a;
  bool batched = false;  ///< BatchedSvd: a batch of matrices; Svd: exactly one
  bool compute_uv = true;
  bool full_matrices = false;
  kernels::SvdMethod method = kernels::SvdMethod::kAuto;
  double tolerance = 0;
  int max_sweeps = 0;
  OutputOptions output;
};
struct EighRequest {
  OperandInput a;
  bool compute_vectors = true;
  double symmetry_tolerance = 0;
  OutputOptions output;
};
struct EighResult {
  ResultMatrix w;
  std::optional<ResultMatrix> v;
  bool converged = false;
};
struct SvdResult {
  ResultMatrix s;
  std::optional<ResultMatrix> u;
  std::optional<ResultMatrix> vt;
  int sweeps = 0;
  bool converged = false;
};

/// An edge list as received (EdgeList on the wire).
struct EdgeListInput {
  std::int64_t num_vertices = 0;
  std::vector<std::int64_t> src;
  std::vector<std::int64_t> dst;
  std::vector<double> weight;
  DType dtype = DType::kF32;
};

/// A stored graph of the graph store.
struct GraphIdInput {
  std::string graph_id;
};

/// The graph of an APSP or path request: unset, dense inline, dense stored, edges or a graph.
using GraphInput = std::variant<std::monostate, MatrixInput, RefInput, EdgeListInput, GraphIdInput>;

struct ApspRequest {
  GraphInput graph;
  bool next_hop = false;
  OutputOptions output;
  /// Prefix of field names in messages ("graph." when nested in ShortestPath).
  std::string field_prefix;
};
struct ApspResult {
  ResultMatrix distances;
  std::optional<ResultMatrix> next_hop;
};

/// Distance and next-hop matrices an earlier Apsp call stored.
struct StoredApspInput {
  std::string distances_id;
  std::string next_hop_id;
};

struct ShortestPathRequest {
  std::variant<std::monostate, ApspRequest, StoredApspInput> from;
  std::int64_t source = 0;
  std::int64_t target = 0;
};
struct ShortestPathResult {
  bool reachable = false;
  double length = 0;
  std::vector<std::int64_t> vertices;
};

/// Shortest paths from one vertex of an edge list or a stored graph (other GraphInput cases
/// are refused).
struct SsspRequest {
  GraphInput graph;
  std::int64_t source = 0;
  OutputOptions output;
};
struct SsspResult {
  ResultMatrix distances;                 ///< 1 x n f32
  ResultMatrix parents;                   ///< 1 x n i32 rows
  std::vector<std::uint64_t> vertex_ids;  ///< row i is vertex_ids[i]; empty: row i is vertex i
  std::int64_t reachable = 0;
};

using OpRequest = std::variant<TransposeRequest, MatMulRequest, SvdRequest, EighRequest,
                               ApspRequest, ShortestPathRequest, SsspRequest>;
using OpResult = std::variant<TransposeResult, MatMulResult, SvdResult, EighResult, ApspResult,
                              ShortestPathResult, SsspResult>;

}  // namespace gcompute::server::ops
