// SPDX-License-Identifier: Apache-2.0
// MatrixStore expiry: explicit eviction and the server's timer (ExpirySweeper).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
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
  auto short_lived = store.put(host_matrix(10, 10, 'a'), absl::Milliseconds(20));
  auto long_lived = store.put(host_matrix(5, 4, 'b'), absl::Hours(1));
  ASSERT_TRUE(short_lived.ok() && long_lived.ok());
  EXPECT_EQ(store.used_bytes(), 400u + 80u);
  EXPECT_EQ(store.evict_expired(), 0u);  // nothing has expired yet
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  EXPECT_EQ(store.evict_expired(), 1u);
  EXPECT_EQ(store.used_bytes(), 80u);
  EXPECT_EQ(store.get(short_lived->id, "a.ref").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store.get(long_lived->id, "a.ref").ok());
  EXPECT_EQ(store.evict_expired(), 0u);
}

TEST(MatrixStoreExpiry, AMatrixInUseOutlivesItsEviction) {
  MatrixStore store(small_store());
  auto info = store.put(host_matrix(8, 8, 'x'), absl::Milliseconds(20));
  ASSERT_TRUE(info.ok());
  auto in_use = store.get(info->id, "a.ref");  // a job holding the operand
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
  ASSERT_TRUE(store.put(host_matrix(16, 16, 'c'), absl::Milliseconds(30)).ok());
  ASSERT_TRUE(store.put(host_matrix(2, 2, 'd'), absl::Hours(1)).ok());
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

}  // namespace
}  // namespace gcompute::server
