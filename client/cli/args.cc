// SPDX-License-Identifier: Apache-2.0
#include "cli/args.hpp"

#include <charconv>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gcompute::cli {
namespace {

enum class ValueKind { kFlag, kString, kUint, kDouble };

struct OptionSpec {
  const char* name;
  ValueKind kind;
  const char* help;
  std::vector<std::string> choices = {};
};

struct CommandSpec {
  std::vector<std::string> words;
  std::vector<std::string> positionals;  // names; optional ones in brackets
  std::size_t min_positionals;
  std::vector<OptionSpec> options;
  const char* summary;
  const char* details;
};

const std::vector<OptionSpec>& global_options() {
  static const std::vector<OptionSpec> options = {
      {"server", ValueKind::kString,
       "HOST:PORT of the server (default 127.0.0.1:50051); several\n"
       "                              as a comma-separated list, or dns:///NAME:PORT for\n"
       "                              every address of NAME (requests are balanced; graph\n"
       "                              requests go to the graph id's owner)"},
      {"timeout", ValueKind::kDouble, "deadline of the whole command in seconds (default 600)"},
      {"inline-limit", ValueKind::kUint,
       "upload operands in chunks above this many inline\n"
       "                              bytes (default min(max-message-bytes/2, 64 MiB))"},
      {"max-message-bytes", ValueKind::kUint,
       "largest gRPC message; match the server's\n"
       "                              (default 268435456)"},
      {"tls-ca", ValueKind::kString,
       "TLS: PEM file of the CA that signed the server's\n"
       "                              certificate (turns TLS on)"},
      {"tls-cert", ValueKind::kString,
       "TLS client certificate (PEM) for mutual TLS; with\n"
       "                              --tls-key"},
      {"tls-key", ValueKind::kString, "private key (PEM) of --tls-cert"},
      {"tls-server-name", ValueKind::kString,
       "name the server's certificate must carry when it\n"
       "                              is not the --server host"},
      {"token-file", ValueKind::kString,
       "file holding the bearer token (default: the\n"
       "                              GCOMPUTE_TOKEN environment variable)"},
      {"no-shared-memory", ValueKind::kFlag,
       "never pass data through shared memory (by default a\n"
       "                              server on this host gets operands and writes\n"
       "                              results there, not over the socket)"},
      {"progress",
       ValueKind::kString,
       "progress bars on stderr: auto (when stderr is a\n"
       "                              terminal), always or never. With bars, apsp, graph\n"
       "                              apsp and svd run as jobs, show the kernel's steps,\n"
       "                              and Ctrl-C cancels the job",
       {"auto", "always", "never"}},
  };
  return options;
}

/// The options of matmul and of submit matmul.
std::vector<OptionSpec> matmul_options() {
  return {{"precision",
           ValueKind::kString,
           "f32, f64, tf32, bf16 or f16 (default: the files' own)",
           {"f32", "f64", "tf32", "bf16", "f16"}},
          {"transpose-a", ValueKind::kFlag, "use A transposed"},
          {"transpose-b", ValueKind::kFlag, "use B transposed"}};
}

/// `options` and the options of svd and submit svd (whose help texts of --tol and
/// --max-sweeps differ).
std::vector<OptionSpec> svd_options(std::vector<OptionSpec> options, const char* tol_help,
                                    const char* max_sweeps_help) {
  options.push_back({"no-vectors", ValueKind::kFlag, "compute singular values only"});
  options.push_back({"full", ValueKind::kFlag, "full U (rows x rows) and Vt (cols x cols)"});
  options.push_back({"method",
                     ValueKind::kString,
                     "auto (the backend's fastest), jacobi (small values accurate) or polar",
                     {"auto", "jacobi", "polar"}});
  options.push_back({"tol", ValueKind::kDouble, tol_help});
  options.push_back({"max-sweeps", ValueKind::kUint, max_sweeps_help});
  return options;
}

/// `options` and the options every submit takes.
std::vector<OptionSpec> job_options(std::vector<OptionSpec> options) {
  options.push_back({"priority",
                     ValueKind::kString,
                     "normal (default) or high: ahead of queued normal jobs",
                     {"normal", "high"}});
  options.push_back(
      {"key", ValueKind::kString, "idempotency key: a resubmit with it returns the same job"});
  options.push_back(
      {"ttl", ValueKind::kUint, "seconds the finished job stays (default: the server's)"});
  return options;
}

const std::vector<CommandSpec>& commands() {
  static const std::vector<CommandSpec> specs = {
      {{"transpose"},
       {"IN.npy", "OUT.npy"},
       2,
       {},
       "transpose a matrix (3-D arrays: each matrix of the batch)",
       "Writes IN transposed: rows x cols becomes cols x rows; a 3-D array of shape\n"
       "(batch, rows, cols) becomes (batch, cols, rows). A 1-D array is read as one row.\n"},
      {{"matmul"},
       {"A.npy", "B.npy", "OUT.npy"},
       3,
       matmul_options(),
       "multiply matrices: OUT = op(A) @ op(B)",
       "A and B must have the same dtype (f32 or f64). tf32, bf16 and f16 take f32 files and\n"
       "write f32 results. With --precision f64, f32 files are converted to f64 on the client\n"
       "and the result is written as f64. 3-D arrays are batches; a batch of 1 broadcasts.\n"},
      {{"svd"},
       {"A.npy"},
       1,
       svd_options({{"out", ValueKind::kString, "prefix of the output files (required)"}},
                   "GPU Jacobi tolerance in [0, 1); 0: the server's default",
                   "most GPU Jacobi sweeps or QDWH iterations; 0: the server's default (60)"),
       "singular value decomposition A = U diag(S) Vt",
       "Writes PREFIX.S.npy (descending; 1-D, or (batch, p) for a 3-D input), PREFIX.U.npy and\n"
       "PREFIX.Vt.npy, and prints the sweeps (GPU Jacobi) or QDWH iterations executed (0 where\n"
       "LAPACK keeps its count) and whether the method converged.\n"},
      {{"eigh"},
       {"A.npy"},
       1,
       {{"out", ValueKind::kString, "prefix of the output files (required)"},
        {"no-vectors", ValueKind::kFlag, "compute eigenvalues only"},
        {"sym-tol", ValueKind::kDouble,
         "symmetry tolerance relative to max |a| in [0, 1); 0: the server's default"}},
       "eigendecomposition of a symmetric matrix A = V diag(W) V^T",
       "Reads the lower triangle (as numpy.linalg.eigh); a matrix that is not symmetric is an\n"
       "error naming the pair. Writes PREFIX.W.npy (ascending; 1-D, or (batch, n) for a 3-D\n"
       "input) and PREFIX.V.npy (eigenvectors as columns).\n"},
      {{"apsp"},
       {"GRAPH", "OUT.npy"},
       2,
       {{"next-hop", ValueKind::kString, "also write the next-hop matrix (int32) to this file"},
        {"i32", ValueKind::kFlag, "compute with int32 weights (they must be integers)"}},
       "all-pairs shortest paths",
       "GRAPH is a dense .npy weight matrix (W[i][j] = weight of i -> j; inf = no edge), a\n"
       "DIMACS .gr file or a Matrix Market .mtx file. Row and column k of OUT is the file's\n"
       "k-th vertex: vertex k of a 1-based file (.gr, .mtx) is row k-1. Unreachable pairs are\n"
       "inf (2147483647 with --i32). Next-hop: N[i][j] is the vertex after i on a shortest path\n"
       "to j (0-based), -1 where j is unreachable. f64 .npy weights are sent as f32.\n"},
      {{"path"},
       {"GRAPH", "SRC", "DST"},
       3,
       {{"i32", ValueKind::kFlag, "compute with int32 weights"}},
       "one shortest path",
       "GRAPH as for apsp. SRC and DST are numbered as the file numbers vertices: from 1 in\n"
       "DIMACS and Matrix Market files, from 0 in .npy files. Prints the path (same numbering)\n"
       "and its length, or \"unreachable\".\n"},
      {{"sssp"},
       {"GRAPH", "SRC", "OUT.npy"},
       3,
       {{"parents", ValueKind::kString, "also write the parents (int32, 0-based rows) here"}},
       "shortest paths from one vertex (no APSP: for graphs far beyond n^2 memory)",
       "GRAPH is a DIMACS .gr or a Matrix Market .mtx file, weights as f32 (negative ones\n"
       "allowed). SRC is numbered as the file numbers vertices (from 1). OUT holds one distance\n"
       "per vertex in file order, inf where unreachable; parents[k] is the row before row k on\n"
       "a shortest path (the source's own row for the source, -1 where unreachable). A negative\n"
       "cycle reachable from SRC is an error naming a vertex on it.\n"},
      {{"graph", "create"},
       {"NAME", "[FILE]"},
       1,
       {{"vertices", ValueKind::kUint,
         "number of vertices (an empty graph without FILE; at least max id + 1 for .csv)"}},
       "create a stored graph",
       "FILE is a DIMACS .gr, a Matrix Market .mtx or a .csv edge list of lines src,dst,weight\n"
       "with 0-based vertices (an optional header line). Vertex k of a 1-based file becomes\n"
       "vertex id k-1. Without FILE the graph has --vertices vertices and no edges.\n"},
      {{"graph", "edit"},
       {"NAME", "EDITS.jsonl"},
       2,
       {{"expected-version", ValueKind::kUint, "fail (ABORTED) unless the graph has this version"}},
       "apply a batch of edits atomically",
       "EDITS.jsonl holds one JSON object per line, one of:\n"
       "  {\"add_vertex\":{}}\n"
       "  {\"delete_vertex\":{\"vertex_id\":3}}\n"
       "  {\"add_edge\":{\"tails\":[0],\"heads\":[1],\"weight\":2.5}}\n"
       "  {\"delete_edge\":{\"edge_id\":4}}\n"
       "  {\"set_weight\":{\"edge_id\":1,\"weight\":0.5}}\n"
       "  {\"decompose_vertex\":{\"vertex_id\":2,\"move_edge_ids\":[5],\"joining_weight\":1}}\n"
       "Prints the new version and, per edit, the ids it created or deleted.\n"},
      {{"graph", "show"},
       {"NAME"},
       1,
       {{"json", ValueKind::kFlag, "print JSON instead of text"}},
       "print a stored graph",
       ""},
      {{"graph", "delete"}, {"NAME"}, 1, {}, "delete a stored graph", ""},
      {{"graph", "list"}, {}, 0, {}, "list the stored graphs", ""},
      {{"graph", "apsp"},
       {"NAME", "OUT.npy"},
       2,
       {{"next-hop", ValueKind::kString, "also write the next-hop matrix (int32) to this file"}},
       "all-pairs shortest paths of a stored graph",
       "Row and column k of OUT is vertex id k of the graph.\n"},
      {{"graph", "sssp"},
       {"NAME", "SRC", "OUT.npy"},
       3,
       {{"parents", ValueKind::kString, "also write the parents (int32 rows) here"}},
       "shortest paths from vertex id SRC of a stored graph",
       "As 'sssp'. Row k is vertex id k when the graph's vertices are 0..n-1; otherwise the\n"
       "vertex id of each row is written to OUT.ids.txt, one per line.\n"},
      {{"submit", "transpose"},
       {"IN.npy"},
       1,
       job_options({}),
       "submit a transpose job; prints its id",
       "As 'transpose', but the server runs it as a job: collect the result with\n"
       "'gcompute wait ID --out PREFIX' (PREFIX.npy), from this or any other connection.\n"},
      {{"submit", "matmul"},
       {"A.npy", "B.npy"},
       2,
       job_options(matmul_options()),
       "submit a matmul job; prints its id",
       "As 'matmul'; 'gcompute wait ID --out PREFIX' writes PREFIX.npy.\n"},
      {{"submit", "svd"},
       {"A.npy"},
       1,
       job_options(svd_options({}, "GPU Jacobi tolerance in [0, 1)",
                               "most GPU Jacobi sweeps or QDWH iterations")),
       "submit an SVD job; prints its id",
       "As 'svd'; 'gcompute wait ID --out PREFIX' writes PREFIX.S.npy, PREFIX.U.npy and\n"
       "PREFIX.Vt.npy.\n"},
      {{"submit", "apsp"},
       {"GRAPH"},
       1,
       job_options({{"next-hop", ValueKind::kFlag, "also compute the next-hop matrix"},
                    {"i32", ValueKind::kFlag, "compute with int32 weights"}}),
       "submit an all-pairs shortest paths job; prints its id",
       "GRAPH as for 'apsp'. 'gcompute wait ID --out PREFIX' writes PREFIX.dist.npy and,\n"
       "with --next-hop, PREFIX.next.npy (0-based vertex numbers).\n"},
      {{"submit", "sssp"},
       {"GRAPH", "SRC"},
       2,
       job_options({}),
       "submit a shortest-paths-from-one-vertex job; prints its id",
       "GRAPH and SRC as for 'sssp'. 'gcompute wait ID --out PREFIX' writes PREFIX.dist.npy and\n"
       "PREFIX.parents.npy (and PREFIX.dist.npy.ids.txt for a stored graph whose ids are not\n"
       "0..n-1).\n"},
      {{"jobs", "list"}, {}, 0, {}, "list one's jobs (id, operation, state, progress)", ""},
      {{"jobs", "show"}, {"ID"}, 1, {}, "print a job's state, progress, times and error", ""},
      {{"jobs", "watch"},
       {"ID"},
       1,
       {},
       "print a job's state and progress at each change until it is final",
       "Exits 0 when the job SUCCEEDED, 1 when it FAILED or was CANCELLED.\n"},
      {{"jobs", "cancel"}, {"ID"}, 1, {}, "cancel a queued or running job", ""},
      {{"wait"},
       {"ID"},
       1,
       {{"out", ValueKind::kString, "prefix of the output files (required)"}},
       "wait for a job to finish and write its results",
       "Writes the results as the synchronous command does: PREFIX.npy (transpose, matmul),\n"
       "PREFIX.S.npy PREFIX.U.npy PREFIX.Vt.npy (svd), PREFIX.dist.npy [PREFIX.next.npy]\n"
       "(apsp). A job that FAILED or was CANCELLED exits 1 with its error.\n"},
      {{"info"},
       {},
       0,
       {},
       "print the server's version, backend, devices and limits",
       "With several servers, prints each one's.\n"},
      {{"health"},
       {},
       0,
       {{"service", ValueKind::kString, "the service to ask about (default \"\": the server)"}},
       "check grpc.health.v1 health",
       "Prints each server's state (SERVING, NOT_SERVING, UNKNOWN, SERVICE_UNKNOWN) and exits\n"
       "0 only if every server is SERVING, 1 otherwise (e.g. while it drains). For container\n"
       "health checks: gcompute --server 127.0.0.1:50051 --timeout 3 health\n"},
  };
  return specs;
}

/// Commands of two words: "graph create", "submit apsp", "jobs list".
bool is_group(const std::string& word) {
  return word == "graph" || word == "submit" || word == "jobs";
}

/// The second words of a group's commands.
std::vector<std::string> group_words(const std::string& group) {
  std::vector<std::string> out;
  for (const CommandSpec& spec : commands()) {
    if (spec.words.size() == 2 && spec.words[0] == group) out.push_back(spec.words[1]);
  }
  return out;
}

const CommandSpec* find_command(const std::vector<std::string>& words) {
  for (const CommandSpec& spec : commands()) {
    if (spec.words == words) return &spec;
  }
  return nullptr;
}

const OptionSpec* find_option(const std::vector<OptionSpec>& options, const std::string& name) {
  for (const OptionSpec& o : options) {
    if (name == o.name) return &o;
  }
  return nullptr;
}

absl::Status check_value(const OptionSpec& spec, const std::string& value) {
  const char* end = value.data() + value.size();
  if (spec.kind == ValueKind::kUint) {
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(value.data(), end, v);
    if (ec != std::errc() || p != end || value.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", spec.name, " takes a non-negative ", "integer, not '", value, "'"));
    }
  } else if (spec.kind == ValueKind::kDouble) {
    double v = 0;
    auto [p, ec] = std::from_chars(value.data(), end, v);
    if (ec != std::errc() || p != end || value.empty() || !std::isfinite(v) || v < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", spec.name, " takes a non-negative ", "number, not '", value, "'"));
    }
  }
  if (!spec.choices.empty()) {
    bool ok = false;
    for (const std::string& c : spec.choices) ok = ok || c == value;
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat("--", spec.name, " must be one of ",
                                                     absl::StrJoin(spec.choices, ", "), ", not '",
                                                     value, "'"));
    }
  }
  return absl::OkStatus();
}

std::string command_name(const std::vector<std::string>& words) {
  return absl::StrJoin(words, " ");
}

// The placeholder shown for an option's value in help texts.
std::string metavar(const OptionSpec& o) {
  static const std::map<std::string, std::string> names = {{"server", "HOST:PORT"},
                                                           {"timeout", "SECONDS"},
                                                           {"inline-limit", "BYTES"},
                                                           {"max-message-bytes", "BYTES"},
                                                           {"precision", "P"},
                                                           {"out", "PREFIX"},
                                                           {"tol", "X"},
                                                           {"max-sweeps", "N"},
                                                           {"next-hop", "NEXT.npy"},
                                                           {"vertices", "N"},
                                                           {"expected-version", "V"},
                                                           {"service", "NAME"},
                                                           {"priority", "P"},
                                                           {"key", "KEY"},
                                                           {"ttl", "SECONDS"},
                                                           {"method", "M"},
                                                           {"sym-tol", "X"},
                                                           {"tls-ca", "FILE"},
                                                           {"tls-cert", "FILE"},
                                                           {"tls-key", "FILE"},
                                                           {"tls-server-name", "NAME"},
                                                           {"token-file", "FILE"},
                                                           {"progress", "WHEN"}};
  auto it = names.find(o.name);
  return it == names.end() ? "VALUE" : it->second;
}

void append_options(std::string& out, const std::vector<OptionSpec>& options) {
  for (const OptionSpec& o : options) {
    std::string left = absl::StrCat("  --", o.name);
    if (o.kind != ValueKind::kFlag) absl::StrAppend(&left, " ", metavar(o));
    if (left.size() < 30) {
      left.resize(30, ' ');
    } else {
      absl::StrAppend(&left, "\n", std::string(30, ' '));
    }
    absl::StrAppend(&out, left, o.help, "\n");
  }
}

}  // namespace

std::string help_text(const std::vector<std::string>& command) {
  std::string out;
  if (const CommandSpec* spec = find_command(command)) {
    absl::StrAppend(&out, "usage: gcompute ", command_name(spec->words));
    for (const std::string& p : spec->positionals) absl::StrAppend(&out, " ", p);
    if (!spec->options.empty()) absl::StrAppend(&out, " [options]");
    absl::StrAppend(&out, "\n\n", spec->summary, ".\n");
    if (*spec->details) absl::StrAppend(&out, "\n", spec->details);
    if (!spec->options.empty()) {
      absl::StrAppend(&out, "\noptions:\n");
      append_options(out, spec->options);
    }
    absl::StrAppend(&out, "\nglobal options (before or after the subcommand):\n");
    append_options(out, global_options());
    return out;
  }
  const bool group_only = command.size() == 1 && is_group(command[0]);
  absl::StrAppend(&out, "usage: gcompute [global options] ",
                  group_only ? command[0] + " SUBCOMMAND" : "COMMAND", " [arguments] [options]\n\n",
                  group_only ? command[0] + " subcommands:\n" : "commands:\n");
  for (const CommandSpec& spec : commands()) {
    if (group_only && spec.words[0] != command[0]) continue;
    std::string left = absl::StrCat("  ", command_name(spec.words));
    if (left.size() < 18) left.resize(18, ' ');
    absl::StrAppend(&out, left, spec.summary, "\n");
  }
  absl::StrAppend(&out, "\nglobal options:\n");
  append_options(out, global_options());
  absl::StrAppend(&out,
                  "  --help                      this text; 'gcompute COMMAND --help' for one "
                  "command\n");
  return out;
}

absl::StatusOr<CommandLine> parse_command_line(const std::vector<std::string>& args) {
  CommandLine cl;
  std::vector<std::string> words;  // every non-option token, in order
  const CommandSpec* spec = nullptr;
  bool options_done = false;
  auto resolve = [&]() -> absl::Status {
    if (spec || words.empty()) return absl::OkStatus();
    if (is_group(words[0])) {
      if (words.size() < 2) return absl::OkStatus();
      spec = find_command({words[0], words[1]});
      if (!spec) {
        return absl::InvalidArgumentError(absl::StrCat(
            "unknown ", words[0], " subcommand '", words[1], "' (",
            absl::StrJoin(group_words(words[0]), ", "), "; see 'gcompute ", words[0], " --help')"));
      }
      return absl::OkStatus();
    }
    spec = find_command({words[0]});
    if (!spec) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown command '", words[0], "' (see 'gcompute --help')"));
    }
    return absl::OkStatus();
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (options_done || arg.size() < 2 || arg[0] != '-' || arg == "-") {
      words.push_back(arg);
      if (absl::Status s = resolve(); !s.ok()) return s;
      continue;
    }
    if (arg == "--") {
      options_done = true;
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      cl.help = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      return absl::InvalidArgumentError(absl::StrCat("unknown option '", arg, "'"));
    }
    std::string name = arg.substr(2);
    std::optional<std::string> value;
    if (const std::size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    const OptionSpec* opt = find_option(global_options(), name);
    const bool global = opt != nullptr;
    if (!opt && spec) opt = find_option(spec->options, name);
    if (!opt) {
      if (!spec) {
        return absl::InvalidArgumentError(absl::StrCat(
            "unknown option '--", name, "' (subcommand options go after the ", "subcommand)"));
      }
      return absl::InvalidArgumentError(
          absl::StrCat("unknown option '--", name, "' for '", command_name(spec->words), "'"));
    }
    if (opt->kind == ValueKind::kFlag) {
      if (value) {
        return absl::InvalidArgumentError(absl::StrCat("--", name, " takes no value"));
      }
      value = "";
    } else if (!value) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
      }
      value = args[++i];
    }
    if (absl::Status s = check_value(*opt, *value); !s.ok()) return s;
    if (global) {
      if (name == "server") {
        if (value->empty()) return absl::InvalidArgumentError("--server needs HOST:PORT");
        cl.server = *value;
      } else if (name == "timeout") {
        const double seconds = std::stod(*value);
        if (seconds <= 0) return absl::InvalidArgumentError("--timeout must be positive");
        cl.timeout = absl::Seconds(seconds);
      } else if (name == "progress") {
        cl.progress = *value == "always"  ? ProgressMode::kAlways
                      : *value == "never" ? ProgressMode::kNever
                                          : ProgressMode::kAuto;
      } else if (name == "no-shared-memory") {
        cl.shared_memory = false;
      } else if (name == "inline-limit") {
        cl.inline_limit_bytes = std::stoull(*value);
      } else if (name == "tls-ca" || name == "tls-cert" || name == "tls-key" ||
                 name == "tls-server-name" || name == "token-file") {
        if (value->empty())
          return absl::InvalidArgumentError(absl::StrCat("--", name, " is empty"));
        std::string& field = name == "tls-ca"            ? cl.tls_ca
                             : name == "tls-cert"        ? cl.tls_cert
                             : name == "tls-key"         ? cl.tls_key
                             : name == "tls-server-name" ? cl.tls_server_name
                                                         : cl.token_file;
        field = *value;
      } else {
        cl.max_message_bytes = std::stoull(*value);
        if (*cl.max_message_bytes == 0) {
          return absl::InvalidArgumentError("--max-message-bytes must be positive");
        }
      }
    } else {
      cl.options[name] = *value;
    }
  }
  if (!spec) {
    if (!words.empty()) cl.command = {words[0]};  // a group ("graph") alone
    if (cl.help) return cl;
    if (words.empty()) return absl::InvalidArgumentError("no command (see 'gcompute --help')");
    return absl::InvalidArgumentError(
        absl::StrCat("'", words[0], "' needs a subcommand (see 'gcompute ", words[0], " --help')"));
  }
  cl.command = spec->words;
  cl.positionals.assign(words.begin() + static_cast<std::ptrdiff_t>(spec->words.size()),
                        words.end());
  if (cl.help) return cl;
  const std::size_t n = cl.positionals.size();
  if (n < spec->min_positionals || n > spec->positionals.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", command_name(spec->words), "' takes ", absl::StrJoin(spec->positionals, " "),
        spec->positionals.empty() ? "no arguments" : "", "; got ", n, " argument",
        n == 1 ? "" : "s", " (see 'gcompute ", command_name(spec->words), " --help')"));
  }
  if ((spec->words[0] == "svd" || spec->words[0] == "eigh" || spec->words[0] == "wait") &&
      !cl.has("out")) {
    return absl::InvalidArgumentError(absl::StrCat("'", spec->words[0], "' needs --out PREFIX"));
  }
  return cl;
}

}  // namespace gcompute::cli
