// SPDX-License-Identifier: Apache-2.0
// MatrixStore: owners (tenants) that cannot see each other, ids nobody can guess, quotas per
// owner and for all, expiry by explicit eviction and by the server's timer (ExpirySweeper).
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <set>
#include <thread>

#include "store/matrices/expiry_sweeper.hpp"
#include "store/matrices/matrix_store.hpp"

namespace gcompute::server {
namespace {

Matrix host_matrix(std::int64_t rows, std::int64_t cols, char fill) {
  Matrix m;
  m.desc = MatrixDesc{DType::kF32, 1, rows, cols};
  m.data = std::make_shared<std::string>(m.desc.bytes(), fill);
  return m;
}

MatrixStore::Options small_store() {
  MatrixStore::Options o;
  o.quota_bytes = 1 << 20;
  return o;
}

/// Reserves and stores in one step, for `owner` (the implicit tenant by default).
absl::StatusOr<StoredMatrixInfo> put(MatrixStore& store, Matrix m, absl::Duration ttl,
                                     const std::string& owner = "") {
  auto r = store.reserve(owner, m.desc.bytes());
  if (!r.ok()) return r.status();
  return store.put(std::move(m), ttl, *std::move(r));
}

/// Polls `done` every millisecond for up to `limit`.
template <class F>
bool eventually(F done, std::chrono::milliseconds limit = std::chrono::seconds(5)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

TEST(MatrixStoreExpiry, EvictExpiredDropsOnlyExpiredEntriesAndFreesTheirQuota) {
  MatrixStore store(small_store());
  auto short_lived = put(store, host_matrix(10, 10, 'a'), absl::Milliseconds(20));
  auto long_lived = put(store, host_matrix(5, 4, 'b'), absl::Hours(1));
  ASSERT_TRUE(short_lived.ok() && long_lived.ok());
  EXPECT_EQ(store.used_bytes(), 400u + 80u);
  EXPECT_EQ(store.evict_expired(), 0u);  // nothing has expired yet
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  EXPECT_EQ(store.evict_expired(), 1u);
  EXPECT_EQ(store.used_bytes(), 80u);
  EXPECT_EQ(store.get("", short_lived->id, "a.ref").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store.get("", long_lived->id, "a.ref").ok());
  EXPECT_EQ(store.evict_expired(), 0u);
}

TEST(MatrixStoreExpiry, AMatrixInUseOutlivesItsEviction) {
  MatrixStore store(small_store());
  auto info = put(store, host_matrix(8, 8, 'x'), absl::Milliseconds(20));
  ASSERT_TRUE(info.ok());
  auto in_use = store.get("", info->id, "a.ref");  // a job holding the operand
  ASSERT_TRUE(in_use.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  EXPECT_EQ(store.evict_expired(), 1u);
  EXPECT_EQ(store.used_bytes(), 0u);
  ASSERT_NE(in_use->data, nullptr);
  EXPECT_EQ(*in_use->data, std::string(256, 'x'));
}

TEST(MatrixStoreExpiry, SweeperFreesExpiredMatricesWithoutAnyOtherCall) {
  MatrixStore store(small_store());
  std::atomic<int> evictions{0};
  ExpirySweeper sweeper(store, absl::Milliseconds(10), [&] { ++evictions; });
  ASSERT_TRUE(put(store, host_matrix(16, 16, 'c'), absl::Milliseconds(30)).ok());
  ASSERT_TRUE(put(store, host_matrix(2, 2, 'd'), absl::Hours(1)).ok());
  EXPECT_EQ(store.used_bytes(), 1024u + 16u);
  EXPECT_TRUE(eventually([&] { return store.used_bytes() == 16u; }))
      << "still " << store.used_bytes() << " bytes stored";
  EXPECT_TRUE(eventually([&] { return evictions.load() >= 1; }));
  const int seen = evictions.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(evictions.load(), seen) << "the callback runs only when something was evicted";
}

TEST(MatrixStoreExpiry, SweeperStopsPromptlyWhenDestroyed) {
  MatrixStore store(small_store());
  const auto start = std::chrono::steady_clock::now();
  { ExpirySweeper sweeper(store, absl::Hours(1), nullptr); }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(MatrixStoreOwners, AnotherOwnersMatrixIsNotFoundLikeAMissingOne) {
  MatrixStore store(small_store());
  auto mine = put(store, host_matrix(2, 2, 'a'), absl::Hours(1), "alice");
  ASSERT_TRUE(mine.ok());
  EXPECT_TRUE(store.get("alice", mine->id, "a.ref.id").ok());
  const absl::Status theirs = store.get("bob", mine->id, "a.ref.id").status();
  const absl::Status missing = store.get("bob", "m-0123", "a.ref.id").status();
  EXPECT_EQ(theirs.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  // Same wording for both: the message confirms nothing but the id that was sent.
  EXPECT_EQ(std::string(theirs.message()).substr(0, 12), "a.ref.id = \"");
  EXPECT_NE(std::string(theirs.message()).find("no such stored matrix"), std::string::npos);
  EXPECT_EQ(store.info("bob", mine->id, "ref.id").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store.remove("bob", mine->id).code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store.get("alice", mine->id, "a.ref.id").ok()) << "bob's delete must not touch it";
  EXPECT_EQ(store.remove("", mine->id).code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store.remove("alice", mine->id).ok());
}

TEST(MatrixStoreRelease, AReleasedReadTakesTheEntryAndItsQuotaButKeepsTheData) {
  MatrixStore store(small_store());
  auto kept = put(store, host_matrix(4, 4, 'k'), absl::Hours(1), "alice");
  auto temp = put(store, host_matrix(8, 8, 't'), absl::Hours(1), "alice");
  ASSERT_TRUE(kept.ok() && temp.ok());
  EXPECT_EQ(store.used_bytes("alice"), 64u + 256u);
  // Not marked release: an ordinary read.
  ASSERT_TRUE(store.read("alice", kept->id, false, "a.ref.id").ok());
  EXPECT_EQ(store.used_bytes("alice"), 64u + 256u);
  // Another owner's release neither reads nor takes it.
  EXPECT_EQ(store.read("bob", temp->id, true, "a.ref.id").status().code(),
            absl::StatusCode::kNotFound);
  absl::StatusOr<Matrix> taken = store.read("alice", temp->id, true, "a.ref.id");
  ASSERT_TRUE(taken.ok()) << taken.status();
  EXPECT_EQ(store.used_bytes("alice"), 64u);
  EXPECT_EQ(store.used_bytes(), 64u);
  ASSERT_NE(taken->data, nullptr);
  EXPECT_EQ(*taken->data, std::string(256, 't'));
  // Gone: a second read (the same ref named twice) and a delete are NOT_FOUND, naming the field.
  const absl::Status again = store.read("alice", temp->id, true, "b.ref.id").status();
  EXPECT_EQ(again.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(std::string(again.message()).substr(0, 12), "b.ref.id = \"");
  EXPECT_EQ(store.remove("alice", temp->id).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store.evict_expired(), 0u);  // its expiry entry went with it
  EXPECT_TRUE(store.get("alice", kept->id, "a.ref.id").ok());
}

TEST(MatrixStoreOwners, IdsAreUniqueFullLengthAndRandom) {
  MatrixStore::Options o;
  o.quota_bytes = 1ull << 40;
  MatrixStore store(o);
  std::set<std::string> ids;
  std::array<int, 16> nibble_counts{};
  constexpr int kIds = 100000;
  for (int i = 0; i < kIds; ++i) {
    auto info = put(store, host_matrix(0, 0, 0), absl::Hours(1));
    ASSERT_TRUE(info.ok());
    ASSERT_EQ(info->id.size(), 2u + 32u) << info->id;  // "m-" and 128 bits in hex
    ASSERT_EQ(info->id.rfind("m-", 0), 0u);
    for (char c : info->id.substr(2)) {
      ASSERT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << info->id;
      ++nibble_counts[c <= '9' ? c - '0' : c - 'a' + 10];
    }
    ASSERT_TRUE(ids.insert(info->id).second) << "repeated id " << info->id;
  }
  // 3.2 M hex digits: each of the 16 values should appear 200 000 +- a few hundred times.
  for (int count : nibble_counts) EXPECT_NEAR(count, kIds * 32 / 16, 3000);
}

TEST(MatrixStoreOwners, QuotaPerOwnerAndForAll) {
  MatrixStore::Options o;
  o.quota_bytes = 1000;
  o.owner_quota_bytes = [](const std::string& owner) -> std::uint64_t {
    return owner == "small" ? 100 : 1000;
  };
  MatrixStore store(o);
  auto small = store.reserve("small", 100);
  ASSERT_TRUE(small.ok());
  const absl::Status over = store.reserve("small", 1).status();
  EXPECT_EQ(over.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(std::string(over.message()).find("tenant \"small\" stored-matrix quota exceeded"),
            std::string::npos)
      << over;
  {
    auto big = store.reserve("big", 800);
    ASSERT_TRUE(big.ok());
    EXPECT_EQ(store.used_bytes("big"), 800u);
    // 100 + 800 of 1000 in use: the server-wide quota stops the next 300.
    const absl::Status all = store.reserve("other", 300).status();
    EXPECT_EQ(all.code(), absl::StatusCode::kResourceExhausted);
    EXPECT_NE(std::string(all.message()).find("--stored-matrix-quota-bytes"), std::string::npos);
  }
  EXPECT_EQ(store.used_bytes("big"), 0u);  // released with the reservation
  EXPECT_EQ(store.used_bytes(), 100u);
  *small = MatrixStore::Reservation();
  EXPECT_EQ(store.used_bytes(), 0u);
}

}  // namespace
}  // namespace gcompute::server
