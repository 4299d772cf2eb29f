// SPDX-License-Identifier: Apache-2.0
// Apsp of a stored graph through the service (an in-process server on 127.0.0.1, one client):
// after a batch of edge insertions (the APSP cache updates its result) against after a
// deletion (recomputed from the graph), and a repeat (a hit), in one run. Results stay on the
// server (PLACEMENT_STORED), so the times are the server's work plus one unary call, not a
// 256 MB transfer; the stored results are deleted after each call. The graph: n vertices,
// out-degree 10, integer weights 1..1000. Each row is the median of `reps` rounds; the cache's
// counters confirm which path answered.
//
// cuda-host is the CUDA backend with --device-graph-copies=false: the recomputation densifies the
// host copy and uploads it instead of building the matrix from the graph's device copy.
//
//   bench_stored_apsp [cpu|cuda|cuda-host] [CSV_PATH] [n] [batches, e.g. 1,10,100] [reps]
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bench_server.hpp"
#include "ops/apsp_cache.hpp"

namespace {

namespace v1 = gcompute::v1;
using gcompute::bench::delete_stored;
using gcompute::bench::fail;
using gcompute::bench::median;
using gcompute::bench::timed_call;

std::vector<int> int_list(const char* text) {
  std::vector<int> out;
  for (const char* p = text; *p != '\0';) {
    out.push_back(std::atoi(p));
    while (*p != '\0' && *p != ',') ++p;
    if (*p == ',') ++p;
  }
  return out;
}

struct Client {
  v1::Compute::Stub& stub;

  /// Seconds of one Apsp of graph `id` with results stored (then deleted).
  double apsp(const std::string& id, bool next_hop, double& server_compute) {
    v1::ApspRequest req;
    req.set_graph_id(id);
    req.set_next_hop(next_hop);
    req.mutable_output()->set_placement(v1::OutputOptions::PLACEMENT_STORED);
    v1::ApspResponse resp;
    const double s = timed_call(stub, &v1::Compute::Stub::Apsp, req, &resp, "Apsp");
    server_compute = resp.stats().compute_seconds();
    delete_stored(stub, resp.distances());
    delete_stored(stub, resp.next_hop());
    return s;
  }

  void edits(const v1::ApplyEditsRequest& req) {
    v1::ApplyEditsResponse resp;
    grpc::ClientContext ctx;
    if (const grpc::Status st = stub.ApplyEdits(&ctx, req, &resp); !st.ok()) fail("ApplyEdits", st);
  }
};

struct Row {
  bool next_hop;
  int edges;
  double full_ms, update_ms, hit_ms, full_compute_ms, update_compute_ms;
};

}  // namespace

int main(int argc, char** argv) {
  const std::string device = argc > 1 ? argv[1] : "cpu";
  const char* out_env = std::getenv("OUT");
  const std::string csv_path =
      argc > 2 ? argv[2]
               : (out_env ? std::string(out_env) + "/stored_apsp.csv" : "stored_apsp.csv");
  const std::uint64_t n = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 2048;
  const std::vector<int> batches = int_list(argc > 4 ? argv[4] : "1,10,100");
  const int reps = argc > 5 ? std::atoi(argv[5]) : 3;

  gcompute::bench::BenchServer bench = gcompute::bench::start_bench_server(device);
  v1::Compute::Stub* stub = bench.stub.get();
  Client client{*stub};
  gcompute::server::ApspCache& cache = *bench.server->apsp_cache();

  std::mt19937_64 rng(20261126);
  std::uniform_int_distribution<std::uint64_t> vertex(0, n - 1);
  std::uniform_int_distribution<int> weight(1, 1000);
  {
    v1::CreateGraphRequest req;
    req.set_graph_id("g");
    req.set_num_vertices(n);
    for (std::uint64_t v = 0; v < n; ++v) {
      for (int k = 0; k < 10; ++k) {
        auto* e = req.add_edges();
        e->add_tails(v);
        e->add_heads(vertex(rng));
        e->set_weight(weight(rng));
      }
    }
    v1::CreateGraphResponse resp;
    grpc::ClientContext ctx;
    if (const grpc::Status st = stub->CreateGraph(&ctx, req, &resp); !st.ok()) {
      fail("CreateGraph", st);
    }
  }

  std::vector<Row> rows;
  std::uint64_t next_edge_to_delete = 0;
  bool counts_ok = true;
  for (bool next_hop : {false, true}) {
    for (int count : batches) {
      std::vector<double> full, update, hit, full_c, update_c;
      for (int rep = -1; rep < reps; ++rep) {
        // A deletion: the next Apsp recomputes (and caches the result).
        v1::ApplyEditsRequest del;
        del.set_graph_id("g");
        del.add_edits()->mutable_delete_edge()->set_edge_id(next_edge_to_delete++);
        client.edits(del);
        const auto before = cache.stats();
        double c = 0;
        const double f = client.apsp("g", next_hop, c);
        const auto after_full = cache.stats();
        // Insertions only: the next Apsp updates the cached result.
        v1::ApplyEditsRequest add;
        add.set_graph_id("g");
        for (int k = 0; k < count; ++k) {
          auto* e = add.add_edits()->mutable_add_edge();
          e->add_tails(vertex(rng));
          e->add_heads(vertex(rng));
          e->set_weight(weight(rng));
        }
        client.edits(add);
        double uc = 0;
        const double u = client.apsp("g", next_hop, uc);
        const auto after_update = cache.stats();
        double hc = 0;
        const double h = client.apsp("g", next_hop, hc);
        const auto after_hit = cache.stats();
        counts_ok &= after_full.misses == before.misses + 1 &&
                     after_update.incremental == after_full.incremental + 1 &&
                     after_hit.hits == after_update.hits + 1;
        if (rep < 0) continue;  // warm-up
        full.push_back(f);
        update.push_back(u);
        hit.push_back(h);
        full_c.push_back(c);
        update_c.push_back(uc);
      }
      rows.push_back({next_hop, count, median(full) * 1e3, median(update) * 1e3, median(hit) * 1e3,
                      median(full_c) * 1e3, median(update_c) * 1e3});
      const Row& r = rows.back();
      std::printf("  next=%d edges=%d: full %.2f ms, update %.3f ms (%.2f %%), hit %.3f ms\n",
                  next_hop, count, r.full_ms, r.update_ms, 100 * r.update_ms / r.full_ms, r.hit_ms);
      std::fflush(stdout);
    }
  }
  if (!counts_ok) {
    std::fprintf(stderr, "the APSP cache did not answer as expected (miss, update, hit)\n");
    return 1;
  }

  std::ofstream csv(csv_path);
  csv << "backend,n,next_hop,edges,full_ms,update_ms,hit_ms,full_compute_ms,update_compute_ms,"
         "update_share\n";
  for (const Row& r : rows) {
    csv << device << "," << n << "," << (r.next_hop ? 1 : 0) << "," << r.edges << "," << r.full_ms
        << "," << r.update_ms << "," << r.hit_ms << "," << r.full_compute_ms << ","
        << r.update_compute_ms << "," << r.update_ms / r.full_ms << "\n";
  }
  std::printf(
      "\nApsp of a stored graph through the service: %s backend, n = %llu, results stored\n",
      device.c_str(), static_cast<unsigned long long>(n));
  std::printf("%9s %7s %10s %11s %9s %8s\n", "next-hop", "edges", "full ms", "update ms", "hit ms",
              "share");
  for (const Row& r : rows) {
    std::printf("%9s %7d %10.2f %11.3f %9.3f %7.2f%%\n", r.next_hop ? "yes" : "no", r.edges,
                r.full_ms, r.update_ms, r.hit_ms, 100 * r.update_ms / r.full_ms);
  }
  std::printf("csv: %s\n", csv_path.c_str());
  bench.server->drain(absl::Seconds(5));
  return 0;
}
