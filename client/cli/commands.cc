// SPDX-License-Identifier: Apache-2.0
#include "cli/commands.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "cli/args.hpp"
#include "cli/convert.hpp"
#include "cli/edits.hpp"
#include "cli/graph_files.hpp"
#include "cli/npy.hpp"
#include "cli/progress.hpp"
#include "gcompute/client/client.hpp"

namespace gcompute::cli {
namespace {

using client::Client;
using client::DType;
using client::HostMatrix;

std::string fmt(double v, int digits = 10) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

absl::StatusOr<HostMatrix> load_matrix(const std::string& path) {
  absl::StatusOr<NpyArray> a = read_npy(path);
  if (!a.ok()) return a.status();
  return to_host_matrix(*std::move(a));
}

absl::Status save(const std::string& path, HostMatrix m, bool as_vector = false) {
  return write_npy(path, to_npy(std::move(m), as_vector));
}

// Per-matrix value vectors (SVD's S, Eigh's W) arrive as 1 x p each (batch x 1 x p) and are
// written as p (batch x p), as numpy.linalg returns them.
HostMatrix per_matrix_rows(HostMatrix m) {
  if (m.batch > 1) {
    m.cols *= m.rows;
    m.rows = m.batch;
    m.batch = 1;
  }
  return m;
}

int64_t parse_vertex(const std::string& text, const char* what, int first, int64_t n,
                     absl::Status& error) {
  std::size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || v < first || v >= n + first) {
    error = absl::InvalidArgumentError(absl::StrCat(what, " '", text, "' is not a vertex of the ",
                                                    "graph (", first, "..", n - 1 + first, ")"));
  }
  return v - first;
}

// The APSP input of `apsp` and `path`: a dense .npy matrix or an edge list from a file.
struct GraphInput {
  std::optional<HostMatrix> dense;
  client::EdgeList edges;
  int first_vertex = 0;
  int64_t num_vertices = 0;

  client::ApspGraph graph() const {
    return dense ? client::ApspGraph::dense(*dense) : client::ApspGraph::edges(edges);
  }
};

absl::StatusOr<GraphInput> load_graph_input(const std::string& path, bool i32) {
  const std::optional<GraphFormat> format = graph_format_from_path(path);
  GraphInput in;
  if (format == GraphFormat::kNpy) {
    absl::StatusOr<NpyArray> a = read_npy(path);
    if (!a.ok()) return a.status();
    if (a->shape.size() != 2 || a->shape[0] != a->shape[1]) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": a dense graph must be a square 2-D weight matrix, not shape (",
                       absl::StrJoin(a->shape, ", "), ")"));
    }
    HostMatrix m = to_host_matrix(*std::move(a));
    // The server takes f32 or i32 weights: f64 files are narrowed here.
    const DType target = i32 ? DType::kI32 : (m.dtype == DType::kI32 ? DType::kI32 : DType::kF32);
    absl::StatusOr<HostMatrix> converted = convert_dtype(m, target, path);
    if (!converted.ok()) return converted.status();
    in.num_vertices = converted->rows;
    in.dense = *std::move(converted);
    return in;
  }
  if (format == GraphFormat::kDimacs || format == GraphFormat::kMatrixMarket) {
    absl::StatusOr<GraphFile> g = read_graph_file(path);
    if (!g.ok()) return g.status();
    in.first_vertex = g->first_vertex;
    in.num_vertices = g->num_vertices;
    in.edges.num_vertices = g->num_vertices;
    in.edges.src = std::move(g->src);
    in.edges.dst = std::move(g->dst);
    in.edges.weight = std::move(g->weight);
    in.edges.dtype = i32 ? DType::kI32 : DType::kF32;
    if (i32) {
      for (std::size_t e = 0; e < in.edges.weight.size(); ++e) {
        const double w = in.edges.weight[e];
        if (w != std::trunc(w)) {
          return absl::InvalidArgumentError(absl::StrCat(path, ": edge ", e,
                                                         " has the non-integer weight ", fmt(w),
                                                         "; --i32 needs integers"));
        }
      }
    }
    return in;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": unknown graph file type (expected .npy, .gr or .mtx)"));
}

class Cli {
 public:
  Cli(const CommandLine& cl, const std::string& token, std::ostream& out, std::ostream& err)
      : cl_(cl), out_(out), err_(err), client_(options(cl, token)) {}

  absl::Status run() {
    using Handler = absl::Status (Cli::*)();
    // Every "submit OP" shares one handler.
    static const std::map<std::string, Handler> kHandlers = {
        {"transpose", &Cli::transpose},
        {"matmul", &Cli::matmul},
        {"svd", &Cli::svd},
        {"eigh", &Cli::eigh},
        {"apsp", &Cli::apsp},
        {"path", &Cli::path},
        {"sssp", &Cli::sssp},
        {"graph create", &Cli::graph_create},
        {"graph edit", &Cli::graph_edit},
        {"graph show", &Cli::graph_show},
        {"graph delete", &Cli::graph_delete},
        {"graph list", &Cli::graph_list},
        {"graph apsp", &Cli::graph_apsp},
        {"graph sssp", &Cli::graph_sssp},
        {"submit", &Cli::submit},
        {"jobs list", &Cli::jobs_list},
        {"jobs show", &Cli::jobs_show},
        {"jobs watch", &Cli::jobs_watch},
        {"jobs cancel", &Cli::jobs_cancel},
        {"wait", &Cli::wait},
        {"info", &Cli::info},
        {"health", &Cli::health},
    };
    const std::string cmd = absl::StrJoin(cl_.command, " ");
    const auto it = kHandlers.find(cl_.command[0] == "submit" ? cl_.command[0] : cmd);
    if (it == kHandlers.end()) {
      return absl::InternalError(absl::StrCat("command '", cmd, "' has no implementation"));
    }
    return (this->*it->second)();
  }

 private:
  static client::ClientOptions options(const CommandLine& cl, const std::string& token) {
    client::ClientOptions o;
    o.target = cl.server;
    o.tls_ca = cl.tls_ca;
    o.tls_cert = cl.tls_cert;
    o.tls_key = cl.tls_key;
    o.tls_server_name = cl.tls_server_name;
    o.token = token;
    if (cl.timeout) o.default_timeout = *cl.timeout;
    if (cl.max_message_bytes) o.max_message_bytes = *cl.max_message_bytes;
    if (cl.inline_limit_bytes) o.inline_limit_bytes = *cl.inline_limit_bytes;
    o.shared_memory = cl.shared_memory;
    o.progress = make_progress_bar(progress_shown(cl.progress));
    return o;
  }

  using SubmitJob = std::function<absl::StatusOr<std::string>(const client::JobOptions&)>;

  /// With progress bars on, the synchronous commands of long operations run as jobs: the
  /// job's progress is drawn as it runs, and Ctrl-C cancels it on the server (a unary call
  /// would carry no progress). The results are what the unary call returns.
  absl::StatusOr<client::JobResults> run_as_job(const SubmitJob& submit) {
    client::JobOptions job;
    // Collected at once; kept a little in case this process dies before it collects.
    job.ttl_seconds = 300;
    absl::StatusOr<std::string> id = submit(job);
    if (!id.ok()) return id.status();
    CancelOnInterrupt interrupt(client_, *id);
    JobProgressBar bar(err_);
    auto last = client_.watch_job(*id, [&bar](const client::JobInfo& j) { bar.update(j); });
    bar.finish();
    if (!last.ok()) return last.status();
    if (interrupt.interrupted()) {
      return absl::CancelledError(absl::StrCat("interrupted: job ", *id, " ", last->state));
    }
    if (!last->error.ok()) return last->error;
    return client_.job_results(*id);
  }

  bool operations_as_jobs() const { return progress_shown(cl_.progress); }

  const std::string& pos(std::size_t i) const { return cl_.positionals.at(i); }

  absl::Status transpose() {
    absl::StatusOr<HostMatrix> a = load_matrix(pos(0));
    if (!a.ok()) return a.status();
    auto r = client_.transpose(*a);
    if (!r.ok()) return r.status();
    return save(pos(1), std::move(r->matrix));
  }

  absl::Status matmul() {
    const client::MatMulOptions o = matmul_options();
    auto ab = load_matmul_operands(o);
    if (!ab.ok()) return ab.status();
    auto r = client_.matmul(ab->first, ab->second, o);
    if (!r.ok()) return r.status();
    return save(pos(2), std::move(r->matrix));
  }

  absl::Status svd() {
    absl::StatusOr<NpyArray> arr = read_npy(pos(0));
    if (!arr.ok()) return arr.status();
    const bool batched = arr->shape.size() == 3;
    HostMatrix a = to_host_matrix(*std::move(arr));
    absl::StatusOr<client::SvdOptions> o = svd_options();
    if (!o.ok()) return o.status();
    if (operations_as_jobs()) {
      auto r = run_as_job(
          [&](const client::JobOptions& job) { return client_.submit_svd(a, *o, batched, job); });
      if (!r.ok()) return r.status();
      return write_svd(*r->svd, batched);
    }
    auto r = batched ? client_.batched_svd(a, *o) : client_.svd(a, *o);
    if (!r.ok()) return r.status();
    return write_svd(*r, batched);
  }

  absl::Status write_svd(client::SvdResult& r, bool batched) {
    const std::string prefix = cl_.get("out");
    HostMatrix s = per_matrix_rows(std::move(r.s));
    if (absl::Status st = save(prefix + ".S.npy", std::move(s), !batched); !st.ok()) return st;
    if (r.u) {
      if (absl::Status st = save(prefix + ".U.npy", std::move(*r.u)); !st.ok()) return st;
      if (absl::Status st = save(prefix + ".Vt.npy", std::move(*r.vt)); !st.ok()) return st;
    }
    out_ << "sweeps: " << r.sweeps << "\nconverged: " << (r.converged ? "true" : "false") << "\n";
    if (!r.converged) err_ << "gcompute: warning: the SVD did not converge\n";
    return absl::OkStatus();
  }

  absl::Status eigh() {
    absl::StatusOr<NpyArray> arr = read_npy(pos(0));
    if (!arr.ok()) return arr.status();
    const bool batched = arr->shape.size() == 3;
    HostMatrix a = to_host_matrix(*std::move(arr));
    client::EighOptions o;
    o.compute_vectors = !cl_.has("no-vectors");
    if (cl_.has("sym-tol")) o.symmetry_tolerance = std::stod(cl_.get("sym-tol"));
    auto r = client_.eigh(a, o);
    if (!r.ok()) return r.status();
    return write_eigh(*r, !batched);
  }

  absl::Status write_eigh(client::EighResult& r, bool as_vector) {
    const std::string prefix = cl_.get("out");
    HostMatrix w = per_matrix_rows(std::move(r.w));
    if (absl::Status st = save(prefix + ".W.npy", std::move(w), as_vector); !st.ok()) return st;
    if (r.v) {
      if (absl::Status st = save(prefix + ".V.npy", std::move(*r.v)); !st.ok()) return st;
    }
    out_ << "converged: " << (r.converged ? "true" : "false") << "\n";
    if (!r.converged) err_ << "gcompute: warning: an eigenvalue did not converge\n";
    return absl::OkStatus();
  }

  absl::Status write_apsp(client::ApspResult& r) {
    if (absl::Status st = save(pos(1), std::move(r.distances)); !st.ok()) return st;
    if (cl_.has("next-hop")) return save(cl_.get("next-hop"), std::move(*r.next_hop));
    return absl::OkStatus();
  }

  absl::Status apsp() {
    absl::StatusOr<GraphInput> in = load_graph_input(pos(0), cl_.has("i32"));
    if (!in.ok()) return in.status();
    return apsp_of(in->graph());
  }

  absl::Status path() {
    absl::StatusOr<GraphInput> in = load_graph_input(pos(0), cl_.has("i32"));
    if (!in.ok()) return in.status();
    absl::Status error;
    const int64_t s = parse_vertex(pos(1), "SRC", in->first_vertex, in->num_vertices, error);
    const int64_t t = parse_vertex(pos(2), "DST", in->first_vertex, in->num_vertices, error);
    if (!error.ok()) return error;
    auto r = client_.shortest_path(in->graph(), s, t);
    if (!r.ok()) return r.status();
    if (!r->reachable) {
      out_ << "unreachable\n";
      return absl::OkStatus();
    }
    std::vector<int64_t> shown;
    for (int64_t v : r->vertices) shown.push_back(v + in->first_vertex);
    out_ << "path: " << absl::StrJoin(shown, " -> ") << "\nlength: " << fmt(r->length, 17) << "\n";
    return absl::OkStatus();
  }

  /// The edge list GRAPH (pos 0) and the source SRC (pos 1) of 'sssp' and 'submit sssp'.
  absl::StatusOr<std::pair<client::SsspGraph, int64_t>> sssp_input() {
    absl::StatusOr<GraphInput> in = load_graph_input(pos(0), false);
    if (!in.ok()) return in.status();
    if (in->dense) {
      return absl::InvalidArgumentError(
          absl::StrCat(pos(0), ": sssp takes an edge list (.gr or .mtx), not a dense matrix"));
    }
    absl::Status error;
    const int64_t s = parse_vertex(pos(1), "SRC", in->first_vertex, in->num_vertices, error);
    if (!error.ok()) return error;
    return std::pair{client::SsspGraph::edges(std::move(in->edges)), s};
  }

  absl::Status sssp() {
    auto in = sssp_input();
    if (!in.ok()) return in.status();
    return sssp_of(in->first, in->second);
  }

  absl::Status graph_sssp() {
    int64_t source = 0;
    if (!absl::SimpleAtoi(pos(1), &source)) {
      return absl::InvalidArgumentError(absl::StrCat("SRC '", pos(1), "' is not a vertex id"));
    }
    return sssp_of(client::SsspGraph::graph_id(pos(0)), source);
  }

  absl::Status sssp_of(const client::SsspGraph& graph, int64_t source) {
    absl::StatusOr<client::SsspResult> r;
    if (operations_as_jobs()) {
      auto job = run_as_job(
          [&](const client::JobOptions& o) { return client_.submit_sssp(graph, source, o); });
      if (!job.ok()) return job.status();
      r = *std::move(job->sssp);
    } else {
      r = client_.sssp(graph, source);
    }
    if (!r.ok()) return r.status();
    return write_sssp(*r, pos(2), cl_.get("parents"));
  }

  /// Distances to `dist_path`, parents to `parents_path` (unless empty) and, where rows are
  /// not vertex ids, the ids beside the distances (DIST.ids.txt, one per line).
  absl::Status write_sssp(client::SsspResult& r, const std::string& dist_path,
                          const std::string& parents_path) {
    const int64_t n = r.distances.elements();
    if (absl::Status st = save(dist_path, std::move(r.distances), true); !st.ok()) return st;
    if (!parents_path.empty()) {
      if (absl::Status st = save(parents_path, std::move(r.parents), true); !st.ok()) return st;
    }
    if (!r.vertex_ids.empty()) {
      const std::string ids_path = absl::StrCat(dist_path, ".ids.txt");
      std::ofstream ids(ids_path);
      for (int64_t id : r.vertex_ids) ids << id << "\n";
      ids.close();
      if (!ids) return absl::UnavailableError(absl::StrCat("cannot write ", ids_path));
      out_ << "vertex ids: " << ids_path << "\n";
    }
    out_ << "reachable: " << r.reachable << " of " << n << "\n";
    return absl::OkStatus();
  }

  absl::Status graph_create() {
    std::vector<client::Hyperedge> edges;
    uint64_t n = 0;
    std::optional<int64_t> vertices;
    if (cl_.has("vertices")) vertices = static_cast<int64_t>(std::stoull(cl_.get("vertices")));
    if (cl_.positionals.size() == 2) {
      absl::StatusOr<GraphFile> g = read_graph_file(pos(1), vertices);
      if (!g.ok()) return g.status();
      n = static_cast<uint64_t>(g->num_vertices);
      edges.reserve(g->src.size());
      for (std::size_t e = 0; e < g->src.size(); ++e) {
        edges.push_back(client::Hyperedge{0,
                                          {static_cast<uint64_t>(g->src[e])},
                                          {static_cast<uint64_t>(g->dst[e])},
                                          g->weight[e]});
      }
      if (vertices && g->format != GraphFormat::kCsv && *vertices != g->num_vertices) {
        return absl::InvalidArgumentError(absl::StrCat("--vertices ", *vertices, " contradicts ",
                                                       pos(1), " (", g->num_vertices,
                                                       " vertices)"));
      }
    } else if (vertices) {
      n = static_cast<uint64_t>(*vertices);
    } else {
      return absl::InvalidArgumentError("graph create needs a FILE or --vertices N");
    }
    auto info = client_.create_graph(pos(0), n, edges);
    if (!info.ok()) return info.status();
    out_ << "created graph " << info->graph_id << ": version " << info->version << ", "
         << info->num_vertices << " vertices, " << info->num_edges << " edges\n";
    return absl::OkStatus();
  }

  absl::Status graph_edit() {
    absl::StatusOr<std::string> text = read_file(pos(1));
    if (!text.ok()) return text.status();
    absl::StatusOr<std::vector<client::GraphEdit>> edits = parse_edits_jsonl(*text, pos(1));
    if (!edits.ok()) return edits.status();
    std::optional<uint64_t> expected;
    if (cl_.has("expected-version")) expected = std::stoull(cl_.get("expected-version"));
    auto r = client_.apply_edits(pos(0), *edits, expected);
    if (!r.ok()) return r.status();
    out_ << "version: " << r->version << "\n";
    for (std::size_t i = 0; i < r->results.size() && i < edits->size(); ++i) {
      const client::EditResult& e = r->results[i];
      const client::GraphEdit& edit = (*edits)[i];
      out_ << "edit " << i << ": ";
      if (std::holds_alternative<client::AddVertex>(edit)) {
        out_ << "add_vertex vertex_id=" << e.vertex_id;
      } else if (std::holds_alternative<client::AddEdge>(edit)) {
        out_ << "add_edge edge_id=" << e.edge_id;
      } else if (std::holds_alternative<client::DecomposeVertex>(edit)) {
        out_ << "decompose_vertex vertex_id=" << e.vertex_id << " edge_id=" << e.edge_id;
      } else if (std::holds_alternative<client::DeleteVertex>(edit)) {
        out_ << "delete_vertex deleted_edge_ids=[" << absl::StrJoin(e.deleted_edge_ids, ",") << "]";
      } else if (std::holds_alternative<client::DeleteEdge>(edit)) {
        out_ << "delete_edge";
      } else {
        out_ << "set_weight";
      }
      out_ << "\n";
    }
    return absl::OkStatus();
  }

  absl::Status graph_show() {
    auto g = client_.get_graph(pos(0));
    if (!g.ok()) return g.status();
    if (cl_.has("json")) {
      out_ << "{\"graph_id\":\"" << json_escape(g->info.graph_id)
           << "\",\"version\":" << g->info.version << ",\"num_vertices\":" << g->info.num_vertices
           << ",\"num_edges\":" << g->info.num_edges << ",\"vertices\":["
           << absl::StrJoin(g->vertices, ",") << "],\"edges\":[";
      for (std::size_t i = 0; i < g->edges.size(); ++i) {
        const client::Hyperedge& e = g->edges[i];
        out_ << (i ? "," : "") << "{\"id\":" << e.id << ",\"tails\":["
             << absl::StrJoin(e.tails, ",") << "],\"heads\":[" << absl::StrJoin(e.heads, ",")
             << "],\"weight\":" << (std::isfinite(e.weight) ? fmt(e.weight, 17) : "null") << "}";
      }
      out_ << "]}\n";
      return absl::OkStatus();
    }
    out_ << "graph " << g->info.graph_id << ": version " << g->info.version << ", "
         << g->info.num_vertices << " vertices, " << g->info.num_edges << " edges\n"
         << "vertices: " << absl::StrJoin(g->vertices, " ") << "\n";
    for (const client::Hyperedge& e : g->edges) {
      out_ << "edge " << e.id << ": " << absl::StrJoin(e.tails, ",") << " -> "
           << absl::StrJoin(e.heads, ",") << " weight " << fmt(e.weight, 17) << "\n";
    }
    return absl::OkStatus();
  }

  static std::string json_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
      if (c == '"' || c == '\\') out.push_back('\\');
      out.push_back(c);
    }
    return out;
  }

  absl::Status graph_list() {
    auto graphs = client_.list_graphs();
    if (!graphs.ok()) return graphs.status();
    for (const client::GraphInfo& g : *graphs) {
      out_ << g.graph_id << "\tversion " << g.version << "\t" << g.num_vertices << " vertices\t"
           << g.num_edges << " edges\n";
    }
    return absl::OkStatus();
  }

  absl::Status graph_delete() { return client_.delete_graph(pos(0)); }

  absl::Status graph_apsp() { return apsp_of(client::ApspGraph::graph_id(pos(0))); }

  absl::Status apsp_of(const client::ApspGraph& graph) {
    const bool next_hop = cl_.has("next-hop");
    if (operations_as_jobs()) {
      auto r = run_as_job(
          [&](const client::JobOptions& job) { return client_.submit_apsp(graph, next_hop, job); });
      if (!r.ok()) return r.status();
      return write_apsp(*r->apsp);
    }
    auto r = client_.apsp(graph, next_hop);
    if (!r.ok()) return r.status();
    return write_apsp(*r);
  }

  // ---- jobs --------------------------------------------------------------------------------

  client::MatMulOptions matmul_options() const {
    client::MatMulOptions o;
    o.transpose_a = cl_.has("transpose-a");
    o.transpose_b = cl_.has("transpose-b");
    const std::string precision = cl_.get("precision");
    if (precision == "f32") o.precision = client::Precision::kF32;
    if (precision == "f64") o.precision = client::Precision::kF64;
    if (precision == "tf32") o.precision = client::Precision::kTF32;
    if (precision == "bf16") o.precision = client::Precision::kBF16;
    if (precision == "f16") o.precision = client::Precision::kF16;
    return o;
  }

  /// A and B from the first two files; f64 arithmetic needs f64 operands, so f32 files are
  /// widened here (exactly).
  absl::StatusOr<std::pair<HostMatrix, HostMatrix>> load_matmul_operands(
      const client::MatMulOptions& o) {
    absl::StatusOr<HostMatrix> a = load_matrix(pos(0));
    if (!a.ok()) return a.status();
    absl::StatusOr<HostMatrix> b = load_matrix(pos(1));
    if (!b.ok()) return b.status();
    if (o.precision == client::Precision::kF64) {
      a = convert_dtype(*a, DType::kF64, pos(0));
      if (!a.ok()) return a.status();
      b = convert_dtype(*b, DType::kF64, pos(1));
      if (!b.ok()) return b.status();
    }
    return std::make_pair(*std::move(a), *std::move(b));
  }

  absl::StatusOr<client::SvdOptions> svd_options() const {
    client::SvdOptions o;
    o.compute_uv = !cl_.has("no-vectors");
    o.full_matrices = cl_.has("full");
    const std::string method = cl_.get("method");
    if (method == "jacobi") o.method = client::SvdMethod::kJacobi;
    if (method == "polar") o.method = client::SvdMethod::kPolar;
    if (cl_.has("tol")) o.tolerance = std::stod(cl_.get("tol"));
    if (cl_.has("max-sweeps")) {
      const uint64_t sweeps = std::stoull(cl_.get("max-sweeps"));
      if (sweeps > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
        return absl::InvalidArgumentError("--max-sweeps is too large");
      }
      o.max_sweeps = static_cast<int32_t>(sweeps);
    }
    return o;
  }

  absl::Status submit() {
    client::JobOptions job;
    if (cl_.get("priority") == "high") job.priority = client::JobPriority::kHigh;
    job.client_job_key = cl_.get("key");
    if (cl_.has("ttl")) {
      const uint64_t ttl = std::stoull(cl_.get("ttl"));
      if (ttl > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return absl::InvalidArgumentError("--ttl is too large");
      }
      job.ttl_seconds = static_cast<int64_t>(ttl);
    }
    const std::string& op = cl_.command[1];
    absl::StatusOr<std::string> id;
    if (op == "apsp") {
      absl::StatusOr<GraphInput> in = load_graph_input(pos(0), cl_.has("i32"));
      if (!in.ok()) return in.status();
      id = client_.submit_apsp(in->graph(), cl_.has("next-hop"), job);
    } else if (op == "sssp") {
      auto in = sssp_input();
      if (!in.ok()) return in.status();
      id = client_.submit_sssp(in->first, in->second, job);
    } else if (op == "svd") {
      absl::StatusOr<NpyArray> arr = read_npy(pos(0));
      if (!arr.ok()) return arr.status();
      const bool batched = arr->shape.size() == 3;
      absl::StatusOr<client::SvdOptions> o = svd_options();
      if (!o.ok()) return o.status();
      id = client_.submit_svd(to_host_matrix(*std::move(arr)), *o, batched, job);
    } else if (op == "transpose") {
      absl::StatusOr<HostMatrix> a = load_matrix(pos(0));
      if (!a.ok()) return a.status();
      id = client_.submit_transpose(*a, job);
    } else {
      const client::MatMulOptions o = matmul_options();
      auto ab = load_matmul_operands(o);
      if (!ab.ok()) return ab.status();
      id = client_.submit_matmul(ab->first, ab->second, o, job);
    }
    if (!id.ok()) return id.status();
    out_ << *id << "\n";
    return absl::OkStatus();
  }

  static std::string time_text(int64_t unix_ms) {
    if (unix_ms == 0) return "-";
    return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromUnixMillis(unix_ms),
                            absl::UTCTimeZone());
  }

  static std::string progress_text(const client::JobInfo& j) {
    std::string text = absl::StrCat(fmt(100 * j.fraction, 3), "% ", j.phase);
    if (!j.detail.empty()) absl::StrAppend(&text, " (", j.detail, ")");
    return text;
  }

  absl::Status jobs_list() {
    auto jobs = client_.list_jobs();
    if (!jobs.ok()) return jobs.status();
    for (const client::JobInfo& j : *jobs) {
      out_ << j.job_id << "\t" << j.method << "\t" << j.state << "\t" << progress_text(j) << "\n";
    }
    return absl::OkStatus();
  }

  absl::Status jobs_show() {
    auto j = client_.get_job(pos(0));
    if (!j.ok()) return j.status();
    out_ << "job: " << j->job_id << "\nmethod: " << j->method << "\nstate: " << j->state
         << "\npriority: " << (j->priority == client::JobPriority::kHigh ? "high" : "normal")
         << "\nprogress: " << progress_text(*j) << "\ncreated: " << time_text(j->created_unix_ms)
         << "\nstarted: " << time_text(j->started_unix_ms)
         << "\nfinished: " << time_text(j->finished_unix_ms)
         << "\nexpires: " << time_text(j->expires_unix_ms) << "\n";
    if (!j->client_job_key.empty()) out_ << "key: " << j->client_job_key << "\n";
    if (!j->error.ok()) {
      out_ << "error: " << absl::StatusCodeToString(j->error.code()) << ": " << j->error.message()
           << "\n";
    }
    return absl::OkStatus();
  }

  absl::Status jobs_watch() {
    auto last = client_.watch_job(pos(0), [this](const client::JobInfo& j) {
      out_ << j.state << "\t" << progress_text(j) << std::endl;
    });
    if (!last.ok()) return last.status();
    return last->error;
  }

  absl::Status jobs_cancel() {
    auto j = client_.cancel_job(pos(0));
    if (!j.ok()) return j.status();
    out_ << j->job_id << ": " << j->state << "\n";
    return absl::OkStatus();
  }

  absl::Status wait() {
    auto last = client_.watch_job(pos(0), nullptr);
    if (!last.ok()) return last.status();
    if (!last->error.ok()) return last->error;
    auto r = client_.job_results(pos(0));
    if (!r.ok()) return r.status();
    const std::string prefix = cl_.get("out");
    if (r->matrix) return save(prefix + ".npy", std::move(r->matrix->matrix));
    if (r->eigh) return write_eigh(*r->eigh, r->eigh->w.batch <= 1);
    if (r->svd) return write_svd(*r->svd, r->method == "BatchedSvd");
    if (r->apsp) {
      if (absl::Status st = save(prefix + ".dist.npy", std::move(r->apsp->distances)); !st.ok()) {
        return st;
      }
      if (r->apsp->next_hop) return save(prefix + ".next.npy", std::move(*r->apsp->next_hop));
      return absl::OkStatus();
    }
    if (r->sssp) return write_sssp(*r->sssp, prefix + ".dist.npy", prefix + ".parents.npy");
    return absl::UnimplementedError(
        absl::StrCat("job ", pos(0), " is a ", r->method, " job; 'wait' writes no file for it"));
  }

  absl::Status health() {
    bool all_serving = true;
    const std::vector<std::string>& replicas = client_.replicas();
    for (std::size_t r = 0; r < replicas.size(); ++r) {
      auto state = client_.health_at(r, cl_.get("service"));
      if (!state.ok()) {
        if (replicas.size() == 1) return state.status();
        out_ << replicas[r] << ": " << absl::StatusCodeToString(state.status().code()) << ": "
             << state.status().message() << "\n";
        all_serving = false;
        continue;
      }
      static const char* const kNames[] = {"UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"};
      out_ << replicas[r] << ": " << kNames[static_cast<int>(*state)] << "\n";
      all_serving = all_serving && *state == client::HealthState::kServing;
    }
    if (!all_serving) return absl::UnavailableError("not every server is SERVING");
    return absl::OkStatus();
  }

  absl::Status info() {
    const std::vector<std::string>& replicas = client_.replicas();
    for (std::size_t r = 0; r < replicas.size(); ++r) {
      if (r > 0) out_ << "\n";
      if (absl::Status s = info_of(r, replicas[r]); !s.ok()) {
        if (replicas.size() == 1) return s;
        return absl::Status(s.code(), absl::StrCat(replicas[r], ": ", s.message()));
      }
    }
    return absl::OkStatus();
  }

  absl::Status info_of(std::size_t replica, const std::string& name) {
    auto i = client_.server_info_at(replica);
    if (!i.ok()) return i.status();
    out_ << "server: " << name << "\nversion: " << i->version << "\nbackend: " << i->backend
         << "\n";
    if (!i->backend_note.empty()) out_ << "backend note: " << i->backend_note << "\n";
    for (const client::DeviceInfo& d : i->devices) {
      out_ << "device " << d.index << ": " << d.name << ", "
           << fmt(static_cast<double>(d.memory_bytes) / (1 << 30), 4) << " GiB, compute capability "
           << d.compute_capability << "\n";
    }
    const client::ServerLimits& l = i->limits;
    out_ << "max message bytes: " << l.max_message_bytes
         << "\nmax matrix elements: " << l.max_matrix_elements << "\nqueue depth: " << l.queue_depth
         << "\nstored matrix quota bytes: " << l.stored_matrix_quota_bytes
         << "\ndefault ttl seconds: " << l.default_ttl_seconds << "\nworkers: " << l.workers
         << "\n";
    return absl::OkStatus();
  }

  const CommandLine& cl_;
  std::ostream& out_;
  std::ostream& err_;
  Client client_;
};

/// The bearer token: the contents of --token-file, else $GCOMPUTE_TOKEN, else none.
absl::StatusOr<std::string> cli_token(const CommandLine& cl) {
  if (cl.token_file.empty()) {
    const char* env = std::getenv("GCOMPUTE_TOKEN");
    return std::string(env != nullptr ? env : "");
  }
  std::ifstream in(cl.token_file, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("--token-file ", cl.token_file, ": cannot open: ", std::strerror(errno)));
  }
  std::string token((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  token = std::string(absl::StripAsciiWhitespace(token));
  if (token.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--token-file ", cl.token_file, " is empty"));
  }
  return token;
}

}  // namespace

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  absl::StatusOr<CommandLine> cl = parse_command_line(args);
  if (!cl.ok()) {
    err << "gcompute: " << cl.status().message() << "\n";
    return 2;
  }
  if (cl->help) {
    out << help_text(cl->command);
    return 0;
  }
  absl::StatusOr<std::string> token = cli_token(*cl);
  absl::Status status = token.ok() ? Cli(*cl, *token, out, err).run() : token.status();
  if (!status.ok()) {
    err << "gcompute: " << absl::StatusCodeToString(status.code()) << ": " << status.message()
        << "\n";
    return 1;
  }
  return 0;
}

}  // namespace gcompute::cli
