// SPDX-License-Identifier: Apache-2.0
// gcompute-server: flags, signals, graceful drain.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gcompute/kernels/cpu/background_calls.hpp"
#include "memory_trimmer.hpp"
#include "security_flags.hpp"
#include "server.hpp"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051", "gRPC address to listen on (HOST:PORT)");
ABSL_FLAG(std::string, metrics_listen, "127.0.0.1:9464",
          "Prometheus /metrics address (HOST:PORT); empty disables it");
ABSL_FLAG(std::string, device, "auto",
          "auto (CUDA if a usable GPU exists, else CPU), cpu, or cuda (fail without a GPU)");
ABSL_FLAG(uint64_t, max_message_bytes, 256ull << 20,
          "Largest gRPC message accepted or sent (1 MiB .. 2147483647)");
ABSL_FLAG(uint64_t, max_matrix_elements, 1ull << 31, "Largest matrix (all batches), in elements");
ABSL_FLAG(int, queue_depth, 64, "Requests that may wait for a worker; more are RESOURCE_EXHAUSTED");
ABSL_FLAG(int, workers, 2, "CPU backend: requests executed at once");
ABSL_FLAG(int, lanes_per_device, 4, "CUDA backend: concurrent requests per GPU");
ABSL_FLAG(uint64_t, pinned_pool_bytes, 1ull << 30, "CUDA backend: pinned host staging memory");
ABSL_FLAG(uint64_t, stored_matrix_quota_bytes, 4ull << 30,
          "Bytes all server-resident matrices may hold together");
ABSL_FLAG(int64_t, default_ttl_seconds, 600, "Lifetime of stored matrices unless a call says");
ABSL_FLAG(int64_t, drain_seconds, 30, "On SIGTERM/SIGINT: how long in-flight calls may finish");
// Admission and time limits (docs/reliability.md).
ABSL_FLAG(uint64_t, max_batch, 1ull << 24, "Most matrices in one batch");
ABSL_FLAG(uint64_t, max_request_host_bytes, 0,
          "Host memory one request may need, estimated from its header; 0: half the host's");
ABSL_FLAG(uint64_t, max_request_device_bytes, 0,
          "CUDA backend: GPU memory one request may need; 0: three quarters of the smallest GPU's");
ABSL_FLAG(int64_t, max_request_seconds, 3600,
          "Bound of every request that carries no deadline (0: none)");
ABSL_FLAG(int64_t, upload_idle_seconds, 30,
          "An upload stream with no message for this long is aborted and its quota freed; a "
          "download whose client reads nothing for this long is cancelled");
// docs/graphs.md, docs/jobs.md
ABSL_FLAG(std::string, data_dir, "",
          "Directory for the graph store's write-ahead log and snapshots and for job records "
          "(DIR/jobs); empty: in memory only");
ABSL_FLAG(std::string, fsync, "always",
          "Graph log and job records: always (fsync before acknowledging a change) or never "
          "(benchmarks)");
ABSL_FLAG(uint64_t, graph_snapshot_bytes, 64ull << 20,
          "Graph log: take a snapshot once the log has grown by this many bytes (0: never)");
ABSL_FLAG(uint64_t, apsp_cache_bytes, 1ull << 30,
          "Memory for cached APSP results of stored graphs: device memory on the CUDA backend, "
          "host memory on the CPU backend (0: no cache)");
ABSL_FLAG(bool, device_graph_copies, true,
          "CUDA backend: keep every stored graph in device memory, updated on each committed "
          "batch, and answer Apsp, ShortestPath and Sssp of stored graphs from it (false: from "
          "the host copy, uploaded per request)");
ABSL_FLAG(bool, shared_memory, true,
          "Serve RegisterSharedMemory: clients on this host (same user) pass operands and "
          "receive results through POSIX shared memory instead of the wire");
ABSL_FLAG(int64_t, shared_memory_idle_seconds, 600,
          "Unregister a shared-memory region no call has named for this long (its client may "
          "have died without unregistering)");
ABSL_FLAG(int64_t, job_ttl_seconds, 3600,
          "How long finished jobs and their inline results stay (SubmitJob may ask otherwise)");
ABSL_FLAG(int64_t, malloc_trim_seconds, 10,
          "How often freed heap memory goes back to the system (glibc malloc_trim); 0: never");
ABSL_FLAG(int, max_jobs_per_tenant, 1024,
          "Jobs one tenant may have queued or running; more are RESOURCE_EXHAUSTED");

namespace {

/// Accepts --metrics-listen as well as --metrics_listen: flag names are identifiers, but
/// hyphens are what people type.
std::vector<char*> normalise_flag_names(int argc, char** argv, std::vector<std::string>& storage) {
  storage.assign(argv, argv + argc);
  std::vector<char*> out;
  bool after_double_dash = false;
  for (std::string& arg : storage) {
    if (arg == "--") after_double_dash = true;
    if (!after_double_dash && arg.size() > 2 && arg.compare(0, 2, "--") == 0) {
      const std::size_t end = std::min(arg.find('='), arg.size());
      for (std::size_t i = 2; i < end; ++i) {
        if (arg[i] == '-') arg[i] = '_';
      }
    }
    out.push_back(arg.data());
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  // Debian's Abseil checks every absl::Mutex acquisition for lock-order cycles (a global graph
  // updated under a global lock), and gRPC's own locks are absl::Mutex: about 9 % of every
  // call's time on the development machine (bench_data_plane, docs/performance.md).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  absl::SetProgramUsageMessage(
      "gcompute-server: GPU compute over gRPC (SVD, transpose, matmul, APSP, graphs).\n"
      "Example: gcompute-server --listen 127.0.0.1:50051 --device auto");
  std::vector<std::string> arg_storage;
  std::vector<char*> args = normalise_flag_names(argc, argv, arg_storage);
  absl::ParseCommandLine(static_cast<int>(args.size()), args.data());

  // Block the stop signals in every thread; a dedicated sigwait below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  gcompute::server::ServerOptions options;
  options.listen = absl::GetFlag(FLAGS_listen);
  options.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  options.device = absl::GetFlag(FLAGS_device);
  options.limits.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  options.limits.max_matrix_elements = absl::GetFlag(FLAGS_max_matrix_elements);
  options.limits.max_batch = absl::GetFlag(FLAGS_max_batch);
  options.limits.max_request_host_bytes = absl::GetFlag(FLAGS_max_request_host_bytes);
  options.limits.max_request_device_bytes = absl::GetFlag(FLAGS_max_request_device_bytes);
  options.limits.max_request_time = absl::Seconds(absl::GetFlag(FLAGS_max_request_seconds));
  options.limits.upload_idle_time = absl::Seconds(absl::GetFlag(FLAGS_upload_idle_seconds));
  options.queue_depth = absl::GetFlag(FLAGS_queue_depth);
  options.workers = absl::GetFlag(FLAGS_workers);
  options.lanes_per_device = absl::GetFlag(FLAGS_lanes_per_device);
  options.pinned_pool_bytes = absl::GetFlag(FLAGS_pinned_pool_bytes);
  options.stored_matrix_quota_bytes = absl::GetFlag(FLAGS_stored_matrix_quota_bytes);
  options.default_ttl = absl::Seconds(absl::GetFlag(FLAGS_default_ttl_seconds));

  options.graph_data_dir = absl::GetFlag(FLAGS_data_dir);
  if (absl::GetFlag(FLAGS_malloc_trim_seconds) < 0) {
    std::cerr << "gcompute-server: --malloc-trim-seconds must be >= 0, got "
              << absl::GetFlag(FLAGS_malloc_trim_seconds) << std::endl;
    return 2;
  }
  auto fsync_policy = gcompute::server::parse_fsync_policy(absl::GetFlag(FLAGS_fsync));
  if (!fsync_policy.ok()) {
    std::cerr << "gcompute-server: " << fsync_policy.status().message() << std::endl;
    return 2;
  }
  options.graph_fsync = *fsync_policy;
  options.graph_snapshot_after_bytes = absl::GetFlag(FLAGS_graph_snapshot_bytes);
  options.apsp_cache_bytes = absl::GetFlag(FLAGS_apsp_cache_bytes);
  options.device_graph_copies = absl::GetFlag(FLAGS_device_graph_copies);
  options.shared_memory = absl::GetFlag(FLAGS_shared_memory);
  options.shared_memory_idle = absl::Seconds(absl::GetFlag(FLAGS_shared_memory_idle_seconds));
  options.job_ttl = absl::Seconds(absl::GetFlag(FLAGS_job_ttl_seconds));
  options.max_active_jobs_per_tenant = absl::GetFlag(FLAGS_max_jobs_per_tenant);
  options.security = gcompute::server::security_options_from_flags();

  auto server = gcompute::server::Server::create(options);
  if (!server.ok()) {
    std::cerr << "gcompute-server: " << server.status().message() << std::endl;
    return 2;
  }
  if (!(*server)->security_warning().empty()) {
    std::cerr << "gcompute-server: WARNING: " << (*server)->security_warning() << std::endl;
  }
  std::cerr << "gcompute-server " << GCOMPUTE_VERSION << ": backend " << (*server)->backend_name();
  if (!(*server)->backend_note().empty()) std::cerr << " (" << (*server)->backend_note() << ")";
  const gcompute::server::SecurityOptions& sec = options.security;
  // Scripts read the port from "(port N)".
  std::cerr << "; listening on " << options.listen << " (port " << (*server)->port() << ") over "
            << (!sec.tls()                  ? "plaintext"
                : sec.tls_client_ca.empty() ? "TLS"
                                            : "mutual TLS")
            << (!sec.auth_tokens.empty() ? " with bearer tokens"
                : sec.tenant_from_cert   ? ", tenant from the client certificate"
                                         : "");
  if (!options.metrics_listen.empty()) {
    std::cerr << ", metrics on port " << (*server)->metrics_port();
  }
  std::cerr << std::endl;
  if (const auto* wal = (*server)->graph_wal()) {
    const auto& r = wal->report();
    std::cerr << "gcompute-server: graphs recovered from " << wal->dir() << " (snapshot LSN "
              << r.snapshot_lsn << ", " << r.records_replayed << " log records replayed, "
              << r.records_in_snapshot << " already in the snapshot, " << r.torn_bytes
              << " torn bytes dropped)" << std::endl;
  }

  // A failed GPU ends the process non-zero (after draining) so its supervisor restarts it.
  std::atomic<bool> device_failed{false};
  (*server)->on_fatal_error([&device_failed](const absl::Status& status) {
    std::cerr << "gcompute-server: " << status.message() << std::endl;
    device_failed.store(true);
    kill(getpid(), SIGTERM);
  });

  const gcompute::server::MemoryTrimmer trimmer(
      absl::Seconds(absl::GetFlag(FLAGS_malloc_trim_seconds)));

  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::cerr << "gcompute-server: signal " << sig << ", draining (up to "
            << absl::GetFlag(FLAGS_drain_seconds) << " s)" << std::endl;
  (*server)->drain(absl::Seconds(absl::GetFlag(FLAGS_drain_seconds)));
  (*server)->wait();
  std::cerr << "gcompute-server: stopped" << std::endl;
  const int code = device_failed.load() ? 3 : 0;
  if (const int left = gcompute::kernels::cpu::lapack_calls_in_background(); left > 0) {
    // The drain is over; cancelled LAPACK calls cannot be interrupted and end with the process
    // (exit() would wait for them).
    std::cerr << "gcompute-server: " << left
              << " cancelled LAPACK call(s) still running end with the process" << std::endl;
    std::_Exit(code);
  }
  return code;
}
