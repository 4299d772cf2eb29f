// SPDX-License-Identifier: Apache-2.0
// Replica selection of the client: FNV-1a test vectors, rendezvous ownership of graph ids
// (deterministic, spread, minimal movement when a replica leaves), and target expansion.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "client/fake_compute.hpp"
#include "gcompute/client/client.hpp"

namespace gcompute::client {
namespace {

TEST(Fnv1a64, MatchesPublishedVectors) {
  // From the FNV reference (draft-eastlake-fnv): "" and "a" and "foobar".
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
}

// Fixed scores and owners, shared with tests/python/test_routing.py: the Python client must
// route graph ids exactly as this one does.
TEST(RendezvousScore, FixedVectorsSharedWithThePythonClient) {
  EXPECT_EQ(rendezvous_score("10.0.0.1:50051", "graph-0"), 0x18d73bf2f5167026ull);
  EXPECT_EQ(rendezvous_score("10.0.0.2:50051", "graph-0"), 0xc4c41f71c51f29c5ull);
  EXPECT_EQ(rendezvous_score("a:1", "x"), 0x312849b6243b51ddull);
  EXPECT_EQ(rendezvous_score("[::1]:50051", "g-00000000000000ff"), 0x865ff663dc69b8beull);
  EXPECT_EQ(rendezvous_score("127.0.0.1:7", "roads"), 0xf8d005f5898a60bcull);
  EXPECT_EQ(rendezvous_score("", ""), 0x080e795202020c51ull);
  EXPECT_EQ(rendezvous_score("h\xc3\xb6st:1", "g"), 0xf3485fc09dc12ebdull);  // UTF-8 bytes
  const std::vector<std::string> replicas = {"10.0.0.1:50051", "10.0.0.2:50051", "10.0.0.3:50051"};
  const std::vector<std::pair<std::string, std::size_t>> owners = {
      {"graph-0", 1},    {"graph-1", 0},    {"graph-2", 1}, {"graph-3", 0},
      {"affinity-0", 0}, {"affinity-1", 2}, {"roads", 0},   {"g-0123456789abcdef", 1}};
  for (const auto& [id, owner] : owners) EXPECT_EQ(graph_owner(replicas, id), owner) << id;
}

// The documented score, written out independently of the client.
uint64_t score(const std::string& name_pipe_id) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : name_pipe_id) h = (h ^ c) * 1099511628211ull;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

TEST(GraphOwner, IsTheHighestScoreOfNamePipeId) {
  const std::vector<std::string> replicas = {"10.0.0.1:50051", "10.0.0.2:50051", "10.0.0.3:50051"};
  for (int g = 0; g < 200; ++g) {
    const std::string id = "graph-" + std::to_string(g);
    std::size_t expected = 0;
    for (std::size_t i = 1; i < replicas.size(); ++i) {
      if (score(replicas[i] + "|" + id) > score(replicas[expected] + "|" + id)) expected = i;
    }
    EXPECT_EQ(graph_owner(replicas, id), expected) << id;
  }
  EXPECT_EQ(graph_owner({"only:1"}, "x"), 0u);
}

TEST(GraphOwner, SpreadsIdsAndMovesOnlyTheRemovedReplicasGraphs) {
  const std::vector<std::string> three = {"a:1", "b:1", "c:1"};
  const std::vector<std::string> two = {"a:1", "c:1"};  // b left
  std::map<std::size_t, int> counts;
  const int n = 3000;
  for (int g = 0; g < n; ++g) {
    const std::string id = "g-" + std::to_string(g);  // neighbours differ in the last digit
    const std::size_t before = graph_owner(three, id);
    ++counts[before];
    const std::string& after = two[graph_owner(two, id)];
    if (three[before] != "b:1") {
      EXPECT_EQ(after, three[before]) << id << " moved although its owner stayed";
    }
  }
  for (std::size_t r = 0; r < three.size(); ++r) {
    EXPECT_GT(counts[r], n / 3 - n / 10) << three[r];
    EXPECT_LT(counts[r], n / 3 + n / 10) << three[r];
  }
}

TEST(GraphOwner, DoesNotDependOnTheOrderOfTheList) {
  std::vector<std::string> replicas = {"x:1", "y:2", "z:3", "w:4"};
  std::vector<std::string> shuffled = {"z:3", "w:4", "x:1", "y:2"};
  for (int g = 0; g < 100; ++g) {
    const std::string id = std::to_string(g);
    EXPECT_EQ(replicas[graph_owner(replicas, id)], shuffled[graph_owner(shuffled, id)]);
  }
}

TEST(ExpandTarget, ListsAndSingleTargets) {
  auto one = expand_target("127.0.0.1:50051");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, std::vector<std::string>{"127.0.0.1:50051"});
  auto list = expand_target("a:1, b:2 ,c:3");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(*list, (std::vector<std::string>{"a:1", "b:2", "c:3"}));
  EXPECT_EQ(expand_target("a:1,,b:2").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(expand_target("a:1,a:1").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(expand_target("dns:///nohostport").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ExpandTarget, DnsNamesResolveToEveryAddress) {
  auto local = expand_target("dns:///localhost:50051");
  ASSERT_TRUE(local.ok()) << local.status();
  ASSERT_FALSE(local->empty());
  EXPECT_TRUE(std::is_sorted(local->begin(), local->end()));
  const bool has_v4 = std::find(local->begin(), local->end(), "127.0.0.1:50051") != local->end();
  const bool has_v6 = std::find(local->begin(), local->end(), "[::1]:50051") != local->end();
  EXPECT_TRUE(has_v4 || has_v6);
  auto literal = expand_target("dns:///127.0.0.1:7");
  ASSERT_TRUE(literal.ok());
  EXPECT_EQ(*literal, std::vector<std::string>{"127.0.0.1:7"});
}

TEST(Client, ReportsABadTargetOnEveryCall) {
  Client client(ClientOptions{.target = "a:1,,b:2"});
  auto info = client.server_info();
  EXPECT_EQ(info.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client.list_graphs().status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Client, RoutesUnreachableReplicasWithUnavailable) {
  // Two replicas that refuse connections: a stateless call tries both and reports
  // UNAVAILABLE; nothing hangs past the deadline.
  ClientOptions o;
  o.target = "127.0.0.1:1,127.0.0.1:2";
  o.default_timeout = absl::Seconds(5);
  Client client(o);
  EXPECT_EQ(client.replicas().size(), 2u);
  EXPECT_EQ(client.server_info().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(client.replica_for_matrix(MatrixRef{"m-unknown"}).has_value());
}

// Three fake replicas: stored matrices stay with the replica that created them.
class ReplicaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 3; ++i) {
      fakes_[i].id_prefix = "r" + std::to_string(i) + "-";
      grpc::ServerBuilder builder;
      int port = 0;
      builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
      builder.RegisterService(&fakes_[i]);
      servers_.push_back(builder.BuildAndStart());
      ASSERT_GT(port, 0);
      target_ += (i ? "," : "") + std::string("127.0.0.1:") + std::to_string(port);
    }
  }
  void TearDown() override {
    for (auto& s : servers_) s->Shutdown();
  }
  static HostMatrix matrix(int64_t rows, int64_t cols, float first) {
    std::vector<float> v(rows * cols);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = first + static_cast<float>(i);
    return HostMatrix{1, rows, cols, DType::kF32,
                      std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4)};
  }
  fake::FakeCompute fakes_[3];
  std::vector<std::unique_ptr<grpc::Server>> servers_;
  std::string target_;
};

TEST_F(ReplicaTest, RefsGoBackToTheReplicaThatStoredThem) {
  ClientOptions o;
  o.target = target_;
  o.default_timeout = absl::Seconds(30);
  Client client(o);
  ASSERT_EQ(client.replicas().size(), 3u);
  std::vector<StoredMatrix> stored;
  for (int k = 0; k < 6; ++k) {
    auto s = client.upload_matrix(matrix(2, 3, static_cast<float>(10 * k)));
    ASSERT_TRUE(s.ok()) << s.status();
    stored.push_back(*s);
  }
  // Round robin: two uploads each.
  for (auto& f : fakes_) EXPECT_EQ(f.uploads, 2);
  for (const StoredMatrix& s : stored) {
    const std::size_t owner = static_cast<std::size_t>(s.ref.id[1] - '0');
    ASSERT_EQ(client.replica_for_matrix(s.ref), owner);
    const int before = fakes_[owner].transposes;
    auto t = client.transpose(s.ref);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(fakes_[owner].transposes, before + 1) << s.ref.id;
    auto back = client.download_matrix(s.ref);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->rows, 2);
    ASSERT_TRUE(client.delete_matrix(s.ref).ok());
    EXPECT_FALSE(client.replica_for_matrix(s.ref).has_value());
  }
  int deletes = 0;
  for (auto& f : fakes_) deletes += f.deletes;
  EXPECT_EQ(deletes, 6);
}

TEST_F(ReplicaTest, OperandsOnDifferentReplicasAreRefused) {
  ClientOptions o;
  o.target = target_;
  Client client(o);
  auto a = client.upload_matrix(matrix(2, 2, 0));
  auto b = client.upload_matrix(matrix(2, 2, 1));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_NE(client.replica_for_matrix(a->ref), client.replica_for_matrix(b->ref));
  auto c = client.matmul(a->ref, b->ref);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << c.status();
}

TEST_F(ReplicaTest, AutomaticUploadsAndTheCallShareOneReplica) {
  ClientOptions o;
  o.target = target_;
  o.inline_limit_bytes = 16;  // every operand is uploaded first
  Client client(o);
  for (int k = 0; k < 6; ++k) {
    auto t = client.transpose(matrix(4, 5, static_cast<float>(k)));
    ASSERT_TRUE(t.ok()) << t.status();
  }
  for (auto& f : fakes_) {
    EXPECT_EQ(f.uploads, f.transposes);
    // The temporary uploads are released by the call, on the replica where they live.
    EXPECT_EQ(f.deletes, 0);
    EXPECT_TRUE(f.stored.empty());
    EXPECT_EQ(f.transposes, 2);
  }
}

}  // namespace
}  // namespace gcompute::client
