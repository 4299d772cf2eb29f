// SPDX-License-Identifier: Apache-2.0
#include "cli/graph_files.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/npy.hpp"

namespace gcompute::cli {
namespace {

absl::Status line_error(const std::string& name, std::size_t line, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(name, ":", line, ": ", what));
}

bool parse_int(absl::string_view s, int64_t& out) {
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && p == end;
}

bool parse_double(absl::string_view s, double& out) {
  if (s.empty()) return false;
  const char* begin = s.data();
  if (*begin == '+') ++begin;  // from_chars does not take a leading '+'
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(begin, end, out);
  return ec == std::errc() && p == end;
}

std::vector<absl::string_view> fields(absl::string_view line) {
  return absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
}

std::string quote(absl::string_view s) {
  return absl::StrCat("'", std::string(s), "'");
}

}  // namespace

std::optional<GraphFormat> graph_format_from_path(const std::string& path) {
  const std::size_t dot = path.rfind('.');
  if (dot == std::string::npos) return std::nullopt;
  const std::string ext = absl::AsciiStrToLower(path.substr(dot + 1));
  if (ext == "npy") return GraphFormat::kNpy;
  if (ext == "gr") return GraphFormat::kDimacs;
  if (ext == "mtx") return GraphFormat::kMatrixMarket;
  if (ext == "csv") return GraphFormat::kCsv;
  return std::nullopt;
}

int first_vertex_of(GraphFormat format) {
  return format == GraphFormat::kDimacs || format == GraphFormat::kMatrixMarket ? 1 : 0;
}

absl::StatusOr<GraphFile> parse_dimacs(const std::string& text, const std::string& name) {
  GraphFile g;
  g.format = GraphFormat::kDimacs;
  g.first_vertex = 1;
  bool have_problem = false;
  int64_t declared_arcs = 0;
  std::size_t line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    const std::vector<absl::string_view> f = fields(line);
    if (f.empty() || f[0] == "c") continue;
    if (f[0] == "p") {
      if (have_problem) return line_error(name, line_no, "second problem line");
      if (f.size() != 4 || f[1] != "sp") {
        return line_error(name, line_no, "expected the problem line 'p sp NODES ARCS'");
      }
      if (!parse_int(f[2], g.num_vertices) || g.num_vertices < 0 ||
          !parse_int(f[3], declared_arcs) || declared_arcs < 0) {
        return line_error(name, line_no,
                          absl::StrCat("bad node or arc count ", quote(f[2]), " ", quote(f[3])));
      }
      have_problem = true;
      g.src.reserve(declared_arcs);
      g.dst.reserve(declared_arcs);
      g.weight.reserve(declared_arcs);
    } else if (f[0] == "a") {
      if (!have_problem) return line_error(name, line_no, "arc before the problem line");
      int64_t u = 0, v = 0;
      double w = 0;
      if (f.size() != 4 || !parse_int(f[1], u) || !parse_int(f[2], v) || !parse_double(f[3], w)) {
        return line_error(name, line_no, "expected an arc line 'a U V WEIGHT'");
      }
      if (u < 1 || u > g.num_vertices || v < 1 || v > g.num_vertices) {
        return line_error(
            name, line_no,
            absl::StrCat("arc ", u, " -> ", v, " names a vertex outside 1..", g.num_vertices));
      }
      g.src.push_back(u - 1);
      g.dst.push_back(v - 1);
      g.weight.push_back(w);
    } else {
      return line_error(name, line_no,
                        absl::StrCat("unknown line type ", quote(f[0]), " (expected c, p or a)"));
    }
  }
  if (!have_problem) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": no problem line 'p sp NODES ARCS'"));
  }
  if (static_cast<int64_t>(g.src.size()) != declared_arcs) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": the problem line declares ",
                                                   declared_arcs, " arcs but ", g.src.size(),
                                                   " were found"));
  }
  return g;
}

absl::StatusOr<GraphFile> parse_matrix_market(const std::string& text, const std::string& name) {
  GraphFile g;
  g.format = GraphFormat::kMatrixMarket;
  g.first_vertex = 1;
  std::size_t line_no = 0;
  bool have_banner = false, have_size = false, pattern = false, symmetric = false;
  int64_t declared = 0, entries = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    if (!have_banner) {
      std::vector<absl::string_view> f = fields(line);
      if (f.size() != 5 || absl::AsciiStrToLower(f[0]) != "%%matrixmarket") {
        return line_error(name, line_no,
                          "expected the banner '%%MatrixMarket matrix coordinate FIELD SYMMETRY'");
      }
      const std::string object = absl::AsciiStrToLower(f[1]);
      const std::string format = absl::AsciiStrToLower(f[2]);
      const std::string field = absl::AsciiStrToLower(f[3]);
      const std::string symmetry = absl::AsciiStrToLower(f[4]);
      if (object != "matrix" || format != "coordinate") {
        return line_error(name, line_no,
                          absl::StrCat("'", object, " ", format,
                                       "' is not supported (only 'matrix coordinate')"));
      }
      if (field != "real" && field != "integer" && field != "pattern") {
        return line_error(
            name, line_no,
            absl::StrCat("field '", field, "' is not supported (real, integer or pattern)"));
      }
      if (symmetry != "general" && symmetry != "symmetric") {
        return line_error(
            name, line_no,
            absl::StrCat("symmetry '", symmetry, "' is not supported (general or symmetric)"));
      }
      pattern = field == "pattern";
      symmetric = symmetry == "symmetric";
      have_banner = true;
      continue;
    }
    const std::vector<absl::string_view> f = fields(line);
    if (f.empty() || f[0][0] == '%') continue;
    if (!have_size) {
      int64_t rows = 0, cols = 0;
      if (f.size() != 3 || !parse_int(f[0], rows) || !parse_int(f[1], cols) ||
          !parse_int(f[2], declared) || rows < 0 || cols < 0 || declared < 0) {
        return line_error(name, line_no, "expected the size line 'ROWS COLS ENTRIES'");
      }
      if (rows != cols) {
        return line_error(name, line_no,
                          absl::StrCat("the matrix is ", rows, "x", cols,
                                       "; a graph's adjacency matrix must be square"));
      }
      g.num_vertices = rows;
      have_size = true;
      continue;
    }
    int64_t i = 0, j = 0;
    double w = 1;
    const std::size_t expected = pattern ? 2 : 3;
    if (f.size() != expected || !parse_int(f[0], i) || !parse_int(f[1], j) ||
        (!pattern && !parse_double(f[2], w))) {
      return line_error(
          name, line_no,
          pattern ? "expected an entry 'ROW COL'" : "expected an entry 'ROW COL VALUE'");
    }
    if (i < 1 || i > g.num_vertices || j < 1 || j > g.num_vertices) {
      return line_error(name, line_no,
                        absl::StrCat("entry (", i, ", ", j, ") is outside 1..", g.num_vertices));
    }
    if (++entries > declared) {
      return line_error(name, line_no,
                        absl::StrCat("more entries than the ", declared, " declared"));
    }
    g.src.push_back(i - 1);
    g.dst.push_back(j - 1);
    g.weight.push_back(w);
    if (symmetric && i != j) {
      g.src.push_back(j - 1);
      g.dst.push_back(i - 1);
      g.weight.push_back(w);
    }
  }
  if (!have_banner || !have_size) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": no Matrix Market ", have_banner ? "size line" : "banner"));
  }
  if (entries != declared) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": the size line declares ", declared,
                                                   " entries but ", entries, " were found"));
  }
  return g;
}

absl::StatusOr<GraphFile> parse_edge_csv(const std::string& text, const std::string& name,
                                         std::optional<int64_t> num_vertices) {
  GraphFile g;
  g.format = GraphFormat::kCsv;
  g.first_vertex = 0;
  std::size_t line_no = 0;
  bool first_content = true;
  int64_t max_id = -1;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_no;
    const absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty() || line[0] == '#') continue;
    std::vector<absl::string_view> f = absl::StrSplit(line, ',');
    for (absl::string_view& s : f) s = absl::StripAsciiWhitespace(s);
    int64_t u = 0, v = 0;
    double w = 0;
    const bool numeric =
        f.size() == 3 && parse_int(f[0], u) && parse_int(f[1], v) && parse_double(f[2], w);
    if (!numeric && first_content && f.size() == 3 && !parse_int(f[0], u)) {
      first_content = false;  // a header such as "src,dst,weight"
      continue;
    }
    first_content = false;
    if (!numeric) {
      return line_error(
          name, line_no,
          absl::StrCat("expected 'src,dst,weight' (integers and a number), got ", quote(line)));
    }
    if (u < 0 || v < 0 || (num_vertices && (u >= *num_vertices || v >= *num_vertices))) {
      return line_error(name, line_no,
                        absl::StrCat("edge ", u, " -> ", v, " names a vertex outside 0..",
                                     num_vertices ? absl::StrCat(*num_vertices - 1)
                                                  : std::string("(non-negative)")));
    }
    max_id = std::max({max_id, u, v});
    g.src.push_back(u);
    g.dst.push_back(v);
    g.weight.push_back(w);
  }
  g.num_vertices = num_vertices ? *num_vertices : max_id + 1;
  return g;
}

absl::StatusOr<GraphFile> read_graph_file(const std::string& path,
                                          std::optional<int64_t> num_vertices) {
  const std::optional<GraphFormat> format = graph_format_from_path(path);
  if (!format || *format == GraphFormat::kNpy) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": unknown graph file type (expected .gr, .mtx or .csv)"));
  }
  absl::StatusOr<std::string> text = read_file(path);
  if (!text.ok()) return text.status();
  switch (*format) {
    case GraphFormat::kDimacs:
      return parse_dimacs(*text, path);
    case GraphFormat::kMatrixMarket:
      return parse_matrix_market(*text, path);
    default:
      return parse_edge_csv(*text, path, num_vertices);
  }
}

}  // namespace gcompute::cli
