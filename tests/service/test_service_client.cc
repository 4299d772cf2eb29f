// SPDX-License-Identifier: Apache-2.0
// The C++ client library against a real in-process server: happy paths of every call
// (including automatic chunked uploads and downloads of stored results), and many
// concurrent mixed calls from several threads, each checked against its oracle.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "gcompute/client/client.hpp"
#include "service_fixture.hpp"
#include "support/oracle.hpp"
#include "support/random.hpp"

namespace gcompute::service_test {
namespace {

namespace gc = ::gcompute::client;
using gcompute::testing::Rng;
constexpr double kInf = std::numeric_limits<double>::infinity();

template <typename T>
gc::HostMatrix host(std::int64_t rows, std::int64_t cols, const std::vector<T>& v,
                    std::int64_t batch = 1) {
  gc::HostMatrix m;
  m.batch = batch;
  m.rows = rows;
  m.cols = cols;
  m.dtype = std::is_same_v<T, float>    ? gc::DType::kF32
            : std::is_same_v<T, double> ? gc::DType::kF64
                                        : gc::DType::kI32;
  m.data.assign(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  return m;
}

template <typename T>
std::vector<T> elements(const gc::HostMatrix& m) {
  EXPECT_EQ(m.data.size(), m.expected_bytes());
  std::vector<T> v(m.data.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), m.data.data(), v.size() * sizeof(T));
  return v;
}

gc::Client make_client(const TestServer& ts, std::uint64_t max_message = 256 * gc::kMiB,
                       std::uint64_t inline_limit = 0, bool shared_memory = true) {
  gc::ClientOptions o;
  o.shared_memory = shared_memory;
  o.target = ts.target();
  o.max_message_bytes = max_message;
  o.inline_limit_bytes = inline_limit;
  o.default_timeout = absl::Seconds(120);
  o.chunk_bytes = 64 * 1024;
  return gc::Client(o);
}

std::vector<double> random_weights(Rng& rng, std::int64_t n, double density) {
  std::vector<double> w(static_cast<std::size_t>(n * n), kInf);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      if (i != j && rng.bernoulli(density))
        w[i * n + j] = static_cast<double>(rng.uniform_int(1, 9));
    }
  }
  return w;
}

/// Checks transpose of a random rows x cols f64 matrix through the client.
::testing::AssertionResult client_transpose(gc::Client& c, Rng& rng, std::int64_t rows,
                                            std::int64_t cols) {
  const auto v = gcompute::testing::random_normal<double>(rng, rows * cols);
  const gc::HostMatrix a = host(rows, cols, v);
  auto r = c.transpose(a);
  if (!r.ok()) return ::testing::AssertionFailure() << r.status();
  if (r->matrix.rows != cols || r->matrix.cols != rows) {
    return ::testing::AssertionFailure() << "shape " << r->matrix.rows << "x" << r->matrix.cols;
  }
  const auto t = elements<double>(r->matrix);
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) {
      if (t[j * rows + i] != v[i * cols + j]) {
        return ::testing::AssertionFailure() << "element " << i << ", " << j;
      }
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult client_matmul(gc::Client& c, Rng& rng, std::int64_t m, std::int64_t n,
                                         std::int64_t k) {
  const auto a = gcompute::testing::random_uniform<double>(rng, k * m);
  const auto b = gcompute::testing::random_uniform<double>(rng, k * n);
  const auto cc = gcompute::testing::random_uniform<double>(rng, m * n);
  const gc::HostMatrix ha = host(k, m, a), hb = host(n, k, b), hc = host(m, n, cc);
  gc::MatMulOptions o;
  o.transpose_a = true;
  o.transpose_b = true;
  o.alpha = 0.5;
  o.beta = -2.0;
  o.c = gc::Operand(hc);
  auto r = c.matmul(ha, hb, o);
  if (!r.ok()) return ::testing::AssertionFailure() << r.status();
  const auto got = elements<double>(r->matrix);
  const auto ref = gcompute::testing::reference_gemm(a.data(), b.data(), cc.data(), m, n, k, true,
                                                     true, 0.5, -2.0);
  if (got.size() != ref.size()) return ::testing::AssertionFailure() << "size " << got.size();
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::abs(got[i] - static_cast<double>(ref[i])) > 1e-13 * static_cast<double>(k + 3)) {
      return ::testing::AssertionFailure()
             << "element " << i << ": " << got[i] << " vs " << static_cast<double>(ref[i]);
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult client_svd(gc::Client& c, Rng& rng, std::int64_t m, std::int64_t n) {
  const auto a = gcompute::testing::random_normal<double>(rng, m * n);
  auto r = c.svd(host(m, n, a));
  if (!r.ok()) return ::testing::AssertionFailure() << r.status();
  if (!r->u || !r->vt) return ::testing::AssertionFailure() << "no U/Vt";
  const auto s = elements<double>(r->s), u = elements<double>(*r->u), vt = elements<double>(*r->vt);
  const std::int64_t p = std::min(m, n);
  const double tol = 64 * 2.2e-16 * static_cast<double>(std::max(m, n));
  const auto lapack = gcompute::testing::lapack_svd(a, m, n, false);
  for (std::int64_t i = 0; i < p; ++i) {
    if (std::abs(s[i] - lapack.s[i]) > tol * lapack.s[0]) {
      return ::testing::AssertionFailure() << "s[" << i << "] " << s[i] << " vs " << lapack.s[i];
    }
  }
  const double rec =
      gcompute::testing::reconstruction_error(a.data(), u.data(), s.data(), vt.data(), m, n, p);
  const double ou = gcompute::testing::orthonormal_columns_error(u.data(), m, p);
  const double ov = gcompute::testing::orthonormal_rows_error(vt.data(), p, n);
  if (rec > tol || ou > tol || ov > tol) {
    return ::testing::AssertionFailure() << "reconstruction " << rec << " U " << ou << " Vt " << ov;
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult client_apsp(gc::Client& c, Rng& rng, std::int64_t n) {
  const auto w = random_weights(rng, n, 0.2);
  std::vector<float> wf(w.begin(), w.end());
  const gc::HostMatrix hw = host(n, n, wf);
  auto r = c.apsp(gc::ApspGraph::dense(gc::Operand(hw)), true);
  if (!r.ok()) return ::testing::AssertionFailure() << r.status();
  if (!r->next_hop) return ::testing::AssertionFailure() << "no next_hop";
  const auto d = elements<float>(r->distances);
  const auto nh = elements<std::int32_t>(*r->next_hop);
  const auto ref = gcompute::testing::floyd_warshall_reference(w, n);
  for (std::int64_t i = 0; i < n * n; ++i) {
    if (!(d[i] == ref[i] || std::abs(d[i] - ref[i]) <= 1e-5 * (1 + std::abs(ref[i])))) {
      return ::testing::AssertionFailure()
             << "D[" << i / n << "][" << i % n << "] " << d[i] << " vs " << ref[i];
    }
    if (std::isinf(ref[i]) != (nh[i] == -1) && i / n != i % n) {
      return ::testing::AssertionFailure() << "N at " << i;
    }
  }
  return ::testing::AssertionSuccess();
}

class ServiceClient : public ::testing::Test {
 protected:
  void SetUp() override {
    ts_ = start_server();
    ASSERT_NE(ts_, nullptr);
  }
  std::unique_ptr<TestServer> ts_;
};

TEST_F(ServiceClient, EveryCallHappyPath) {
  GC_SEEDED_RNG(rng);
  gc::Client c = make_client(*ts_);
  auto info = c.server_info();
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->backend, "cpu");
  EXPECT_EQ(info->limits.max_message_bytes, ts_->options.limits.max_message_bytes);
  EXPECT_EQ(info->limits.queue_depth, static_cast<std::uint32_t>(ts_->options.queue_depth));

  EXPECT_TRUE(client_transpose(c, rng, 1, 1));
  EXPECT_TRUE(client_transpose(c, rng, 13, 17));
  EXPECT_TRUE(client_matmul(c, rng, 7, 5, 11));
  EXPECT_TRUE(client_svd(c, rng, 12, 7));
  EXPECT_TRUE(client_svd(c, rng, 3, 9));
  EXPECT_TRUE(client_apsp(c, rng, 31));

  {  // batched SVD, compute_uv false
    const auto a = gcompute::testing::random_normal<double>(rng, 3 * 5 * 4);
    gc::SvdOptions o;
    o.compute_uv = false;
    auto r = c.batched_svd(host(5, 4, a, 3), o);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_FALSE(r->u.has_value());
    EXPECT_EQ(r->s.batch, 3);
    const auto s = elements<double>(r->s);
    ASSERT_EQ(s.size(), 12u);
    for (int k = 0; k < 3; ++k) {
      const auto lapack = gcompute::testing::lapack_svd(
          std::vector<double>(a.begin() + k * 20, a.begin() + (k + 1) * 20), 5, 4, false);
      for (int i = 0; i < 4; ++i) EXPECT_NEAR(s[k * 4 + i], lapack.s[i], 1e-13 * lapack.s[0]);
    }
  }
  {  // upload, download, delete, use by ref
    const auto v = gcompute::testing::random_normal<double>(rng, 100 * 70);
    const gc::HostMatrix a = host(100, 70, v);
    auto stored = c.upload_matrix(a, 60);
    ASSERT_TRUE(stored.ok()) << stored.status();
    EXPECT_EQ(stored->rows, 100);
    EXPECT_EQ(stored->size_bytes, a.data.size());
    auto back = c.download_matrix(stored->ref);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->data, a.data);
    // Into a matrix: a buffer of the right size is kept (no new allocation), any other is
    // replaced, and the shape is the stored one's either way.
    gc::HostMatrix into = host(3, 2, std::vector<double>{1, 2, 3, 4, 5, 6});
    ASSERT_TRUE(c.download_matrix_into(stored->ref, into).ok());
    EXPECT_EQ(into.rows, 100);
    EXPECT_EQ(into.cols, 70);
    EXPECT_EQ(into.data, a.data);
    const char* kept = into.data.data();
    std::memset(into.data.data(), 0x5a, into.data.size());  // poison before the second one
    ASSERT_TRUE(c.download_matrix_into(stored->ref, into).ok());
    EXPECT_EQ(into.data.data(), kept);
    EXPECT_EQ(into.data, a.data);
    auto t = c.transpose(gc::Operand(stored->ref));
    ASSERT_TRUE(t.ok()) << t.status();
    const auto tv = elements<double>(t->matrix);
    EXPECT_EQ(tv[69 * 100 + 99], v[99 * 70 + 69]);
    EXPECT_TRUE(c.delete_matrix(stored->ref).ok());
    auto gone = c.download_matrix(stored->ref);
    EXPECT_EQ(gone.status().code(), absl::StatusCode::kNotFound) << gone.status();
  }
  {  // graphs, stored APSP and shortest paths
    auto g = c.create_graph("client-g", 5,
                            {gc::Hyperedge{0, {0}, {1}, 2.0}, gc::Hyperedge{0, {1}, {2}, 3.0},
                             gc::Hyperedge{0, {0}, {2}, 7.0}, gc::Hyperedge{0, {2, 3}, {4}, 1.0}});
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ(g->num_edges, 4u);
    auto list = c.list_graphs();
    ASSERT_TRUE(list.ok());
    ASSERT_EQ(list->size(), 1u);
    EXPECT_EQ((*list)[0].graph_id, "client-g");
    auto path = c.shortest_path(gc::ApspGraph::graph_id("client-g"), 0, 4);
    ASSERT_TRUE(path.ok()) << path.status();
    EXPECT_TRUE(path->reachable);
    EXPECT_EQ(path->length, 6.0);
    EXPECT_EQ(path->vertices, (std::vector<std::int64_t>{0, 1, 2, 4}));
    auto edits = c.apply_edits("client-g", {gc::SetWeight{2, 1.0}, gc::AddVertex{}}, 1);
    ASSERT_TRUE(edits.ok()) << edits.status();
    EXPECT_EQ(edits->version, 2u);
    EXPECT_EQ(edits->results[1].vertex_id, 5u);
    auto snap = c.get_graph("client-g");
    ASSERT_TRUE(snap.ok());
    EXPECT_EQ(snap->vertices.size(), 6u);
    path = c.shortest_path(gc::ApspGraph::graph_id("client-g"), 0, 4);
    ASSERT_TRUE(path.ok()) << path.status();
    EXPECT_EQ(path->length, 2.0);
    EXPECT_EQ(path->vertices, (std::vector<std::int64_t>{0, 2, 4}));
    path = c.shortest_path(gc::ApspGraph::graph_id("client-g"), 4, 0);
    ASSERT_TRUE(path.ok());
    EXPECT_FALSE(path->reachable);

    auto stale = c.apply_edits("client-g", {gc::AddVertex{}}, 1);
    EXPECT_EQ(stale.status().code(), absl::StatusCode::kAborted) << stale.status();

    gc::EdgeList el;
    el.num_vertices = 4;
    el.src = {0, 1, 2, 0, 0};
    el.dst = {1, 2, 3, 3, 3};
    el.weight = {1, 1, 1, 5, 4};  // parallel 0 -> 3 keeps 4, the path via 1, 2 costs 3
    auto stored = c.apsp_stored(gc::ApspGraph::edges(el), 60);
    ASSERT_TRUE(stored.ok()) << stored.status();
    auto sp = c.shortest_path(*stored, 0, 3);
    ASSERT_TRUE(sp.ok()) << sp.status();
    EXPECT_EQ(sp->length, 3.0);
    EXPECT_EQ(sp->vertices, (std::vector<std::int64_t>{0, 1, 2, 3}));
    EXPECT_TRUE(c.delete_graph("client-g").ok());
    EXPECT_EQ(c.get_graph("client-g").status().code(), absl::StatusCode::kNotFound);
  }
}

TEST_F(ServiceClient, SharedMemoryOnTheSameHostGivesTheWiresResults) {
  GC_SEEDED_RNG(rng);
  server::RegionRegistry& regions = *ts_->server->shared_memory_regions();
  gc::Client wire = make_client(*ts_, 256 * gc::kMiB, 0, /*shared_memory=*/false);
  {
    gc::Client shm = make_client(*ts_);
    EXPECT_TRUE(client_transpose(wire, rng, 300, 200));
    EXPECT_EQ(regions.size(), 0u);
    EXPECT_TRUE(client_transpose(shm, rng, 300, 200));  // 480 KB: through an arena
    EXPECT_EQ(regions.size(), 1u);
    EXPECT_TRUE(client_transpose(shm, rng, 3, 5));  // small: inline
    // Operands of 192 KB, a result of 1.44 MB: the arena grows (a new region replaces it).
    const auto a = gcompute::testing::random_uniform<float>(rng, 600 * 40);
    const auto b = gcompute::testing::random_uniform<float>(rng, 40 * 600);
    auto via_shm = shm.matmul(host(600, 40, a), host(40, 600, b));
    ASSERT_TRUE(via_shm.ok()) << via_shm.status();
    auto via_wire = wire.matmul(host(600, 40, a), host(40, 600, b));
    ASSERT_TRUE(via_wire.ok()) << via_wire.status();
    EXPECT_EQ(via_shm->matrix.rows, 600);
    EXPECT_EQ(via_shm->matrix.data, via_wire->matrix.data);
    EXPECT_EQ(regions.size(), 1u);
    // Several results, each where the server put it.
    const auto m = gcompute::testing::random_normal<double>(rng, 2 * 120 * 80);
    gc::SvdOptions full;
    full.full_matrices = true;
    auto s1 = shm.batched_svd(host(120, 80, m, 2), full);
    auto s2 = wire.batched_svd(host(120, 80, m, 2), full);
    ASSERT_TRUE(s1.ok() && s2.ok()) << s1.status() << s2.status();
    EXPECT_EQ(s1->s.data, s2->s.data);
    EXPECT_EQ(s1->u->data, s2->u->data);
    EXPECT_EQ(s1->vt->data, s2->vt->data);
    EXPECT_EQ(s1->u->rows, 120);
    EXPECT_EQ(s1->u->cols, 120);
    std::vector<double> sym(100 * 100);
    for (int i = 0; i < 100; ++i) {
      for (int j = 0; j <= i; ++j) sym[i * 100 + j] = sym[j * 100 + i] = rng.uniform(-1, 1);
    }
    auto e1 = shm.eigh(host(100, 100, sym));
    auto e2 = wire.eigh(host(100, 100, sym));
    ASSERT_TRUE(e1.ok() && e2.ok()) << e1.status() << e2.status();
    EXPECT_EQ(e1->w.data, e2->w.data);
    EXPECT_EQ(e1->v->data, e2->v->data);
    // The server forgets every region (as a restart does): the call goes over the wire and
    // the next one makes a new arena.
    regions.clear();
    EXPECT_TRUE(client_transpose(shm, rng, 300, 200));
    EXPECT_EQ(regions.size(), 0u);
    EXPECT_TRUE(client_transpose(shm, rng, 300, 200));
    EXPECT_EQ(regions.size(), 1u);
  }
  EXPECT_EQ(regions.size(), 0u);  // the client unregistered its arena as it went
}

TEST(ServiceClientSmall, AutomaticUploadsAndStoredResults) {
  GC_SEEDED_RNG(rng);
  auto ts = start_server(small_message_options());
  ASSERT_NE(ts, nullptr);
  // Operands over the inline limit are uploaded in chunks; results over the message size
  // come back stored and are downloaded (the wire, so no shared memory).
  gc::Client c = make_client(*ts, 1 << 20, 16 * 1024, /*shared_memory=*/false);
  EXPECT_TRUE(client_transpose(c, rng, 300, 200));  // 480 KB in and out
  const auto a = gcompute::testing::random_uniform<float>(rng, 600 * 3);
  const auto b = gcompute::testing::random_uniform<float>(rng, 3 * 600);
  auto r = c.matmul(host(600, 3, a), host(3, 600, b));  // 1.44 MB result
  ASSERT_TRUE(r.ok()) << r.status();
  const auto got = elements<float>(r->matrix);
  ASSERT_EQ(got.size(), 600u * 600u);
  for (std::int64_t i = 0; i < 600; i += 7) {
    for (std::int64_t j = 0; j < 600; j += 5) {
      double ref = 0;
      for (int q = 0; q < 3; ++q) ref += static_cast<double>(a[i * 3 + q]) * b[q * 600 + j];
      ASSERT_NEAR(got[i * 600 + j], ref, 1e-5);
    }
  }
  EXPECT_TRUE(still_serving(*ts->stub));
}

TEST(ServiceConcurrency, ManyMixedCallsFromSeveralThreads) {
  ServerOptions o = test_options();
  o.workers = 2;
  o.queue_depth = 256;
  auto ts = start_server(o);
  ASSERT_NE(ts, nullptr);
  gc::Client shared = make_client(*ts, 256 * gc::kMiB, 32 * 1024);
  const std::uint64_t base_seed = gcompute::testing::test_seed();
  std::printf("base seed %llu (replay with GCOMPUTE_TEST_SEED)\n",
              static_cast<unsigned long long>(base_seed));
  constexpr int kThreads = 6, kCalls = 14;
  std::atomic<int> failures{0}, calls{0};
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Rng rng(base_seed + static_cast<std::uint64_t>(t));
      // Half the threads share one client, the others have their own channel.
      gc::Client own = make_client(*ts, 256 * gc::kMiB, 32 * 1024);
      gc::Client& c = t % 2 == 0 ? shared : own;
      const std::string graph = "conc-" + std::to_string(t);
      auto created = c.create_graph(graph, 4, {gc::Hyperedge{0, {0}, {1}, 1.0}});
      if (!created.ok()) {
        ++failures;
        errors[t] += "create_graph: " + std::string(created.status().message()) + "\n";
        return;
      }
      std::uint64_t version = 1;
      for (int i = 0; i < kCalls; ++i) {
        ::testing::AssertionResult r = ::testing::AssertionSuccess();
        switch ((i + t) % 6) {
          case 0:
            r = client_transpose(c, rng, rng.uniform_int(1, 90), rng.uniform_int(1, 90));
            break;
          case 1:
            r = client_matmul(c, rng, rng.uniform_int(1, 40), rng.uniform_int(1, 40),
                              rng.uniform_int(1, 40));
            break;
          case 2:
            r = client_svd(c, rng, rng.uniform_int(1, 30), rng.uniform_int(1, 30));
            break;
          case 3:
            r = client_apsp(c, rng, rng.uniform_int(1, 60));
            break;
          case 4: {  // 64 KB auto-uploaded operand: chunked upload, by-ref call, delete
            r = client_transpose(c, rng, 128, 64);
            break;
          }
          case 5: {
            auto e = c.apply_edits(graph, {gc::AddVertex{}, gc::AddEdge{{1}, {version + 3}, 2.0}},
                                   version);
            if (!e.ok()) {
              r = ::testing::AssertionFailure() << e.status();
              break;
            }
            ++version;
            if (e->version != version || e->results[0].vertex_id != version + 2) {
              r = ::testing::AssertionFailure()
                  << "version " << e->version << " vertex " << e->results[0].vertex_id;
              break;
            }
            auto p = c.shortest_path(gc::ApspGraph::graph_id(graph), 0,
                                     static_cast<std::int64_t>(version + 2));
            if (!p.ok() || !p->reachable || p->length != 3.0) {
              r = ::testing::AssertionFailure() << "path " << (p.ok() ? p->length : -1);
            }
            break;
          }
        }
        ++calls;
        if (!r) {
          ++failures;
          errors[t] += std::string("call ") + std::to_string(i) + ": " + r.message() + "\n";
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_TRUE(errors[t].empty()) << "thread " << t << ":\n" << errors[t];
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(calls.load(), kThreads * kCalls);
  // /metrics is checked in test_service_errors only: in this executable any scrape of the
  // in-process exposer overflows a civetweb worker's 100 KiB stack (see the service report).
  EXPECT_TRUE(still_serving(*ts->stub));
}

}  // namespace
}  // namespace gcompute::service_test
