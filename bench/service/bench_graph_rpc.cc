// SPDX-License-Identifier: Apache-2.0
// Graph edits end to end: ApplyEdits RPCs to an in-process server whose graph store logs every
// batch to disk (--data-dir, fsync before acknowledging), measured against the disk itself in
// the same run: sequential write bandwidth with fsync (the bound on logged bytes per second)
// and the latency of one small write + fsync (the bound on a single edit's latency).
//   bench_graph_rpc [DATA_DIR [CSV_PATH]]
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gcompute/v1/service.grpc.pb.h"
#include "server.hpp"

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

/// MB/s of writing `bytes` in 4 MiB blocks followed by one fsync.
double disk_write_bandwidth(const fs::path& file, std::uint64_t bytes) {
  std::vector<char> block(4 << 20, 'x');
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const auto t0 = Clock::now();
  for (std::uint64_t done = 0; done < bytes; done += block.size()) {
    if (::write(fd, block.data(), block.size()) < 0) std::exit(1);
  }
  ::fsync(fd);
  const double s = seconds_since(t0);
  ::close(fd);
  fs::remove(file);
  return static_cast<double>(bytes) / s / 1e6;
}

/// Median seconds of appending 256 bytes and fsyncing, the floor of one acknowledged edit.
double fsync_latency(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  char buf[256] = {};
  std::vector<double> t;
  for (int i = 0; i < 100; ++i) {
    const auto t0 = Clock::now();
    if (::write(fd, buf, sizeof(buf)) < 0) std::exit(1);
    ::fsync(fd);
    t.push_back(seconds_since(t0));
  }
  ::close(fd);
  fs::remove(file);
  return percentile(t, 0.5);
}

std::uint64_t dir_bytes(const fs::path& dir) {
  std::uint64_t total = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) total += e.file_size();
  }
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  const char* out_env = std::getenv("OUT");
  const fs::path data =
      argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path() / "gcompute-bench-graph";
  const std::string csv_path =
      argc > 2 ? argv[2] : (out_env ? std::string(out_env) + "/graph_rpc.csv" : "graph_rpc.csv");
  fs::remove_all(data);
  fs::create_directories(data);

  const double disk_mbs = disk_write_bandwidth(data / "probe.bin", 512ull << 20);
  const double fsync_s = fsync_latency(data / "probe.log");

  gcompute::server::ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.metrics_listen = "";
  options.device = "cpu";
  options.graph_data_dir = (data / "store").string();
  options.graph_snapshot_after_bytes = 0;  // measure the log alone
  auto server = gcompute::server::Server::create(options);
  if (!server.ok()) {
    std::fprintf(stderr, "server: %s\n", std::string(server.status().message()).c_str());
    return 1;
  }
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string((*server)->port()),
                                     grpc::InsecureChannelCredentials());
  auto stub = gcompute::v1::Compute::NewStub(channel);

  const std::uint64_t vertices = 1'000'000;
  {
    grpc::ClientContext ctx;
    gcompute::v1::CreateGraphRequest req;
    req.set_graph_id("bench");
    req.set_num_vertices(vertices);
    gcompute::v1::CreateGraphResponse resp;
    if (!stub->CreateGraph(&ctx, req, &resp).ok()) return 1;
  }

  // Latency: one add_edge per call, one call at a time.
  std::vector<double> single;
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<std::uint64_t> vertex(0, vertices - 1);
  for (int i = 0; i < 300; ++i) {
    grpc::ClientContext ctx;
    gcompute::v1::ApplyEditsRequest req;
    req.set_graph_id("bench");
    auto* e = req.add_edits()->mutable_add_edge();
    e->add_tails(vertex(rng));
    e->add_heads(vertex(rng));
    e->set_weight(1.0);
    gcompute::v1::ApplyEditsResponse resp;
    const auto t0 = Clock::now();
    if (!stub->ApplyEdits(&ctx, req, &resp).ok()) return 1;
    if (i >= 20) single.push_back(seconds_since(t0));
  }

  // Throughput: batches of 10^4 insertions from 4 concurrent clients (their fsyncs may group).
  const int threads = 4, batches_per_thread = 25, batch = 10'000;
  const std::uint64_t log_before = dir_bytes(data / "store");
  std::atomic<int> failures{0};
  const auto t0 = Clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937_64 r(static_cast<std::uint64_t>(t) + 7);
      std::uniform_int_distribution<std::uint64_t> v(0, vertices - 1);
      for (int b = 0; b < batches_per_thread; ++b) {
        gcompute::v1::ApplyEditsRequest req;
        req.set_graph_id("bench");
        for (int i = 0; i < batch; ++i) {
          auto* e = req.add_edits()->mutable_add_edge();
          e->add_tails(v(r));
          e->add_heads(v(r));
          e->set_weight(static_cast<double>(i % 97) + 0.5);
        }
        grpc::ClientContext ctx;
        gcompute::v1::ApplyEditsResponse resp;
        if (!stub->ApplyEdits(&ctx, req, &resp).ok()) ++failures;
      }
    });
  }
  for (auto& w : workers) w.join();
  const double elapsed = seconds_since(t0);
  const double logged_mb = static_cast<double>(dir_bytes(data / "store") - log_before) / 1e6;
  const double edges = static_cast<double>(threads) * batches_per_thread * batch;
  if (failures.load() != 0) {
    std::fprintf(stderr, "%d batches failed\n", failures.load());
    return 1;
  }

  const double p50 = percentile(single, 0.5), p99 = percentile(single, 0.99);
  std::printf("\n%-44s %12s\n", "measure", "value");
  std::printf("%-44s %12.1f\n", "disk sequential write + fsync (MB/s)", disk_mbs);
  std::printf("%-44s %12.3f\n", "disk 256 B append + fsync, median (ms)", fsync_s * 1e3);
  std::printf("%-44s %12.0f\n", "ApplyEdits throughput (edges/s)", edges / elapsed);
  std::printf("%-44s %12.1f\n", "log written (MB/s)", logged_mb / elapsed);
  std::printf("%-44s %12.3f\n", "log MB/s / disk MB/s", logged_mb / elapsed / disk_mbs);
  std::printf("%-44s %12.3f\n", "single add_edge RPC p50 (ms)", p50 * 1e3);
  std::printf("%-44s %12.3f\n", "single add_edge RPC p99 (ms)", p99 * 1e3);
  std::printf("%-44s %12.2f\n", "p50 / fsync median", p50 / fsync_s);
  std::ofstream csv(csv_path);
  csv << "disk_mb_s,fsync_ms,edges_per_s,log_mb_s,log_over_disk,edit_p50_ms,edit_p99_ms\n"
      << disk_mbs << "," << fsync_s * 1e3 << "," << edges / elapsed << "," << logged_mb / elapsed
      << "," << logged_mb / elapsed / disk_mbs << "," << p50 * 1e3 << "," << p99 * 1e3 << "\n";
  (*server)->drain(absl::Seconds(5));
  server->reset();
  fs::remove_all(data);
  return 0;
}
