// SPDX-License-Identifier: Apache-2.0
// Sssp of a stored graph through the service: a CPU-backend and a CUDA-backend server in this
// process hold the same graph (n vertices, out-degree `degree`, integer weights 1..1000, random
// heads), and the same Sssp runs against each, in one run. Results stay on the server
// (PLACEMENT_STORED, deleted after each call), so a row is the server's work plus one unary
// call. Columns: the call's wall time and the server's h2d and compute seconds (median of
// `reps` after one warm-up); the distances of the two backends are compared bit for bit.
//
//   bench_sssp_service [CSV_PATH] [n] [degree] [reps] [devices, e.g. cpu,cuda]
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_server.hpp"

namespace {

using Clock = std::chrono::steady_clock;
namespace v1 = gcompute::v1;
using gcompute::bench::delete_stored;
using gcompute::bench::fail;
using gcompute::bench::median;
using gcompute::bench::timed_call;

/// Creates graph "g" (its vertices first, then the edges in batches that fit a message).
void create_graph(v1::Compute::Stub& stub, std::uint64_t n, int degree) {
  std::mt19937_64 rng(20261126);
  std::uniform_int_distribution<std::uint64_t> vertex(0, n - 1);
  std::uniform_int_distribution<int> weight(1, 1000);
  {
    v1::CreateGraphRequest req;
    req.set_graph_id("g");
    req.set_num_vertices(n);
    v1::CreateGraphResponse resp;
    grpc::ClientContext ctx;
    if (const grpc::Status st = stub.CreateGraph(&ctx, req, &resp); !st.ok()) {
      fail("CreateGraph", st);
    }
  }
  constexpr std::uint64_t kPerBatch = 1 << 20;
  const std::uint64_t m = n * static_cast<std::uint64_t>(degree);
  for (std::uint64_t first = 0; first < m; first += kPerBatch) {
    v1::ApplyEditsRequest req;
    req.set_graph_id("g");
    for (std::uint64_t e = first; e < std::min(m, first + kPerBatch); ++e) {
      auto* add = req.add_edits()->mutable_add_edge();
      add->add_tails(e / static_cast<std::uint64_t>(degree));
      add->add_heads(vertex(rng));
      add->set_weight(weight(rng));
    }
    v1::ApplyEditsResponse resp;
    grpc::ClientContext ctx;
    if (const grpc::Status st = stub.ApplyEdits(&ctx, req, &resp); !st.ok()) {
      fail("ApplyEdits", st);
    }
  }
}

struct Timing {
  double wall, h2d, compute;
  v1::MatrixResult distances, parents;
};

Timing sssp(v1::Compute::Stub& stub, std::int64_t source) {
  v1::SsspRequest req;
  req.set_graph_id("g");
  req.set_source(source);
  req.mutable_output()->set_placement(v1::OutputOptions::PLACEMENT_STORED);
  v1::SsspResponse resp;
  const double wall = timed_call(stub, &v1::Compute::Stub::Sssp, req, &resp, "Sssp");
  return {wall, resp.stats().h2d_seconds(), resp.stats().compute_seconds(), resp.distances(),
          resp.parents()};
}

std::string download(v1::Compute::Stub& stub, const std::string& id) {
  v1::DownloadMatrixRequest req;
  req.mutable_ref()->set_id(id);
  grpc::ClientContext ctx;
  auto reader = stub.DownloadMatrix(&ctx, req);
  v1::DownloadMatrixResponse part;
  std::string bytes;
  while (reader->Read(&part)) {
    if (part.has_chunk()) bytes += part.chunk().data();
  }
  if (const grpc::Status st = reader->Finish(); !st.ok()) fail("DownloadMatrix", st);
  return bytes;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = text.find(',', at);
    out.push_back(text.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const char* out_env = std::getenv("OUT");
  const std::string csv_path =
      argc > 1 ? argv[1]
               : (out_env ? std::string(out_env) + "/sssp_service.csv" : "sssp_service.csv");
  const std::uint64_t n = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 100000;
  const int degree = argc > 3 ? std::atoi(argv[3]) : 10;
  const int reps = argc > 4 ? std::atoi(argv[4]) : 3;
  const std::vector<std::string> devices = split(argc > 5 ? argv[5] : "cpu,cuda");

  std::ofstream csv(csv_path);
  csv << "device,n,m,wall_ms,h2d_ms,compute_ms\n";
  std::string reference;  // the first backend's distances
  bool equal = true;
  for (const std::string& device : devices) {
    gcompute::bench::BenchServer b = gcompute::bench::start_bench_server(device);
    const auto t0 = Clock::now();
    create_graph(*b.stub, n, degree);
    std::printf("%s: graph of %llu vertices, %llu edges stored in %.1f s\n", device.c_str(),
                static_cast<unsigned long long>(n),
                static_cast<unsigned long long>(n * static_cast<std::uint64_t>(degree)),
                std::chrono::duration<double>(Clock::now() - t0).count());
    std::vector<double> wall, h2d, compute;
    for (int rep = -1; rep < reps; ++rep) {
      const Timing t = sssp(*b.stub, 0);
      if (rep == -1) {
        const std::string d = download(*b.stub, t.distances.stored().ref().id());
        if (reference.empty()) {
          reference = d;
        } else if (d.size() != reference.size() ||
                   std::memcmp(d.data(), reference.data(), d.size()) != 0) {
          equal = false;
        }
      }
      delete_stored(*b.stub, t.distances);
      delete_stored(*b.stub, t.parents);
      if (rep < 0) continue;
      wall.push_back(t.wall * 1e3);
      h2d.push_back(t.h2d * 1e3);
      compute.push_back(t.compute * 1e3);
    }
    std::printf("%s: Sssp %.1f ms (server h2d %.1f ms, compute %.1f ms)\n", device.c_str(),
                median(wall), median(h2d), median(compute));
    std::fflush(stdout);
    csv << device << "," << n << "," << n * static_cast<std::uint64_t>(degree) << ","
        << median(wall) << "," << median(h2d) << "," << median(compute) << "\n";
    b.server->drain(absl::Seconds(5));
  }
  std::printf("distances of every backend equal bit for bit: %s\n", equal ? "yes" : "NO");
  return equal ? 0 : 1;
}
