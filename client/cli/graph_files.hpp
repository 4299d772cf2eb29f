// SPDX-License-Identifier: Apache-2.0
// Graph files read by the CLI: DIMACS shortest-path (.gr), Matrix Market coordinate (.mtx)
// and CSV edge lists (.csv). Errors name the file and the 1-based line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gcompute::cli {

enum class GraphFormat { kNpy, kDimacs, kMatrixMarket, kCsv };

/// A directed, weighted graph read from a file, with 0-based vertices.
struct GraphFile {
  GraphFormat format = GraphFormat::kCsv;
  int64_t num_vertices = 0;
  std::vector<int64_t> src;
  std::vector<int64_t> dst;
  std::vector<double> weight;
  /// How the file numbers its first vertex: 1 for DIMACS and Matrix Market, 0 otherwise.
  int first_vertex = 0;
};

/// The format by file extension (.npy, .gr, .mtx, .csv; case-insensitive), if any.
std::optional<GraphFormat> graph_format_from_path(const std::string& path);
/// 1 for the 1-based formats (DIMACS, Matrix Market), else 0.
int first_vertex_of(GraphFormat format);

/// DIMACS: "c" comments, one "p sp N M" line, then M lines "a U V W" (1-based U, V).
absl::StatusOr<GraphFile> parse_dimacs(const std::string& text, const std::string& name);
/// Matrix Market "matrix coordinate real|integer|pattern general|symmetric", square.
/// Entry (i, j, w) is the edge i -> j (1-based); symmetric files also give j -> i;
/// pattern files weigh every edge 1.
absl::StatusOr<GraphFile> parse_matrix_market(const std::string& text, const std::string& name);
/// Lines "src,dst,weight" with 0-based vertices; an optional header line, blank lines and
/// '#' comments. Vertices are 0 .. max id (or 0 .. num_vertices-1 when given).
absl::StatusOr<GraphFile> parse_edge_csv(const std::string& text, const std::string& name,
                                         std::optional<int64_t> num_vertices = {});

/// Reads and parses a .gr, .mtx or .csv file according to its extension.
absl::StatusOr<GraphFile> read_graph_file(const std::string& path,
                                          std::optional<int64_t> num_vertices = {});

}  // namespace gcompute::cli
