// SPDX-License-Identifier: Apache-2.0
// Service overhead on the GPU: the same matmul / transpose timed (a) as a direct kernel call on
// a stream of our own (CUDA events, median) and (b) as a MatMul / Transpose RPC to an
// in-process server on loopback whose operands are already on the server (refs) and whose
// result stays there (PLACEMENT_STORED). Both in one run; prints ratios and writes CSV.
//   bench_service [CSV_PATH]
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <vector>

#include "../cuda/bench_device.hpp"
#include "gcompute/client/client.hpp"
#include "gcompute/kernels/cuda/matmul.hpp"
#include "gcompute/kernels/cuda/transpose.hpp"
#include "gcompute/v1/service.grpc.pb.h"
#include "server.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Row {
  std::string op;
  int n;
  double kernel_ms, rpc_ms;
  // The server's own account (ExecutionStats medians): from arrival to the response, and the
  // parts of it spent waiting for a worker or lane and in the kernel (with its stream wait).
  double server_total_ms = 0, server_queue_ms = 0, server_compute_ms = 0;
};

gcompute::client::HostMatrix random_matrix(int n) {
  gcompute::client::HostMatrix m;
  m.batch = 1;
  m.rows = n;
  m.cols = n;
  m.dtype = gcompute::client::DType::kF32;
  m.data.resize(static_cast<std::size_t>(n) * n * 4);
  std::mt19937 rng(n);
  std::uniform_real_distribution<float> d(-1, 1);
  float* p = reinterpret_cast<float*>(m.data.data());
  for (std::size_t i = 0; i < static_cast<std::size_t>(n) * n; ++i) p[i] = d(rng);
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  const char* out_env = std::getenv("OUT");
  std::string csv_path =
      argc > 1 ? argv[1] : (out_env ? std::string(out_env) + "/service.csv" : "service.csv");
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "bench_service: no usable GPU\n");
    return 77;
  }

  gcompute::server::ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.metrics_listen = "";
  options.device = "cuda";
  options.stored_matrix_quota_bytes = 8ull << 30;
  auto server = gcompute::server::Server::create(options);
  if (!server.ok()) {
    std::fprintf(stderr, "server: %s\n", std::string(server.status().message()).c_str());
    return 1;
  }
  const std::string target = "127.0.0.1:" + std::to_string((*server)->port());
  gcompute::client::ClientOptions co;
  co.target = target;
  gcompute::client::Client client(co);
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  auto stub = gcompute::v1::Compute::NewStub(
      grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args));

  namespace gk = gcompute::kernels::cuda;
  // A stream of our own (non-blocking, like a lane's) with its cuBLAS handle.
  const gcompute::bench::BenchDevice device(
      gk::ResourcesOptions{.priority_stream = false, .cusolver = false});
  const gk::Context ctx = device.context();
  const cudaStream_t stream = ctx.stream.value();
  const gk::Event e0 = gcompute::bench::timing_event(), e1 = gcompute::bench::timing_event();

  std::vector<Row> rows;
  const int reps = 15;
  {  // The floor of any RPC here: a GetServerInfo round trip (no engine, no GPU).
    std::vector<double> t;
    for (int r = 0; r < 50; ++r) {
      grpc::ClientContext cctx;
      gcompute::v1::GetServerInfoRequest req;
      gcompute::v1::GetServerInfoResponse resp;
      const auto t0 = Clock::now();
      if (!stub->GetServerInfo(&cctx, req, &resp).ok()) return 1;
      if (r >= 5) t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    rows.push_back({"grpc_floor", 0, 0, median(t)});
  }
  for (int n : {1024, 2048, 4096, 8192}) {
    auto host = random_matrix(n);
    auto ref_a = client.upload_matrix(host);
    auto ref_b = client.upload_matrix(host);
    if (!ref_a.ok() || !ref_b.ok()) {
      std::fprintf(stderr, "upload failed\n");
      return 1;
    }
    // Direct kernels on device copies of the same data.
    const std::size_t bytes = static_cast<std::size_t>(n) * n * 4;
    gk::DeviceBuffer ba = device.buffer(bytes), bb = device.buffer(bytes),
                     bc = device.buffer(bytes);
    void *da = ba.data(), *db = bb.data(), *dc = bc.data();
    // The allocations are ordered on `stream`, which the legacy-stream copies below do not wait
    // for (non-blocking): let them complete first.
    CHECK_CUDA(cudaStreamSynchronize(stream));
    CHECK_CUDA(cudaMemcpy(da, host.data.data(), bytes, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(db, host.data.data(), bytes, cudaMemcpyHostToDevice));
    gcompute::kernels::MatmulShape ms;
    ms.m = ms.n = ms.k = n;
    gcompute::kernels::TransposeShape ts{1, n, n, 4};

    for (const std::string op : {"matmul", "transpose"}) {
      std::vector<double> kernel, rpc, server_total, server_queue, server_compute;
      for (int r = 0; r < reps + 2; ++r) {
        CHECK_CUDA(cudaEventRecord(e0.value(), stream));
        absl::Status st = op == "matmul" ? gcompute::kernels::cuda::matmul(ctx, da, db, dc, ms)
                                         : gcompute::kernels::cuda::transpose(ctx, da, dc, ts);
        if (!st.ok()) {
          std::fprintf(stderr, "%s\n", std::string(st.message()).c_str());
          return 1;
        }
        CHECK_CUDA(cudaEventRecord(e1.value(), stream));
        CHECK_CUDA(cudaEventSynchronize(e1.value()));
        const float ms_k = gcompute::bench::check_ok(gk::elapsed_ms(e0, e1), "elapsed");
        if (r >= 2) kernel.push_back(ms_k);

        grpc::ClientContext cctx;
        const auto t0 = Clock::now();
        std::string stored_id;
        gcompute::v1::ExecutionStats stats;
        grpc::Status gs;
        if (op == "matmul") {
          gcompute::v1::MatMulRequest req;
          req.mutable_a()->mutable_ref()->set_id(ref_a->ref.id);
          req.mutable_b()->mutable_ref()->set_id(ref_b->ref.id);
          req.mutable_output()->set_placement(gcompute::v1::OutputOptions::PLACEMENT_STORED);
          gcompute::v1::MatMulResponse resp;
          gs = stub->MatMul(&cctx, req, &resp);
          stored_id = resp.c().stored().ref().id();
          stats = resp.stats();
        } else {
          gcompute::v1::TransposeRequest req;
          req.mutable_a()->mutable_ref()->set_id(ref_a->ref.id);
          req.mutable_output()->set_placement(gcompute::v1::OutputOptions::PLACEMENT_STORED);
          gcompute::v1::TransposeResponse resp;
          gs = stub->Transpose(&cctx, req, &resp);
          stored_id = resp.at().stored().ref().id();
          stats = resp.stats();
        }
        const double ms_r = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        if (!gs.ok()) {
          std::fprintf(stderr, "rpc: %s\n", gs.error_message().c_str());
          return 1;
        }
        if (r >= 2) {
          rpc.push_back(ms_r);
          server_total.push_back(stats.total_seconds() * 1e3);
          server_queue.push_back(stats.queue_seconds() * 1e3);
          server_compute.push_back(stats.compute_seconds() * 1e3);
        }
        gcompute::client::MatrixRef del;
        del.id = stored_id;
        (void)client.delete_matrix(del);
      }
      rows.push_back({op, n, median(kernel), median(rpc), median(server_total),
                      median(server_queue), median(server_compute)});
    }
    (void)client.delete_matrix(ref_a->ref);
    (void)client.delete_matrix(ref_b->ref);
  }

  std::ofstream csv(csv_path);
  csv << "op,n,kernel_ms,rpc_ms,rpc_over_kernel,server_total_ms,server_queue_ms,"
         "server_compute_ms\n";
  std::printf("\n%-10s %6s %12s %12s %10s %10s %10s %10s\n", "op", "n", "kernel ms", "rpc ms",
              "rpc/kernel", "srv total", "srv queue", "srv comp");
  for (const Row& r : rows) {
    const double ratio = r.kernel_ms > 0 ? r.rpc_ms / r.kernel_ms : 0.0;
    std::printf("%-10s %6d %12.3f %12.3f %10.3f %10.3f %10.3f %10.3f\n", r.op.c_str(), r.n,
                r.kernel_ms, r.rpc_ms, ratio, r.server_total_ms, r.server_queue_ms,
                r.server_compute_ms);
    csv << r.op << "," << r.n << "," << r.kernel_ms << "," << r.rpc_ms << "," << ratio << ","
        << r.server_total_ms << "," << r.server_queue_ms << "," << r.server_compute_ms << "\n";
  }
  std::printf("csv: %s\n", csv_path.c_str());
  return 0;
}
