// SPDX-License-Identifier: Apache-2.0
// The engine's queue policy: HIGH before NORMAL, turns between tenants, and an engine with one
// worker under a backlog of 1,000 jobs from one tenant still serving another tenant's job next.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "engine/cpu_backend.hpp"
#include "engine/engine.hpp"
#include "engine/fair_queue.hpp"

namespace gcompute::server {
namespace {

TEST(FairQueue, TakesTurnsBetweenTenantsInArrivalOrderWithinEach) {
  FairQueue<std::string> q;
  for (int i = 0; i < 4; ++i) q.push("a", Priority::kNormal, "a" + std::to_string(i));
  q.push("b", Priority::kNormal, "b0");
  q.push("c", Priority::kNormal, "c0");
  q.push("b", Priority::kNormal, "b1");
  ASSERT_EQ(q.size(), 7u);
  std::vector<std::string> order;
  while (!q.empty()) order.push_back(q.pop());
  EXPECT_EQ(order, (std::vector<std::string>{"a0", "b0", "c0", "a1", "b1", "a2", "a3"}));
}

TEST(FairQueue, HighGoesAheadOfQueuedNormalAndTakesTurnsToo) {
  FairQueue<std::string> q;
  q.push("a", Priority::kNormal, "a-n0");
  q.push("a", Priority::kNormal, "a-n1");
  q.push("b", Priority::kHigh, "b-h0");
  q.push("a", Priority::kHigh, "a-h0");
  q.push("b", Priority::kHigh, "b-h1");
  std::vector<std::string> order;
  order.push_back(q.pop());
  q.push("c", Priority::kHigh, "c-h0");  // arrives while others wait: still ahead of NORMAL
  while (!q.empty()) order.push_back(q.pop());
  EXPECT_EQ(order, (std::vector<std::string>{"b-h0", "a-h0", "b-h1", "c-h0", "a-n0", "a-n1"}));
}

TEST(FairQueue, ExtractIfRemovesMatchesAndKeepsTurnsConsistent) {
  FairQueue<int> q;
  for (int i = 0; i < 6; ++i) q.push(i % 2 == 0 ? "even" : "odd", Priority::kNormal, i);
  q.push("x", Priority::kHigh, 100);
  std::vector<int> removed = q.extract_if([](const int& v) { return v % 2 == 1 || v == 100; });
  std::sort(removed.begin(), removed.end());
  EXPECT_EQ(removed, (std::vector<int>{1, 3, 5, 100}));
  ASSERT_EQ(q.size(), 3u);
  EXPECT_EQ(q.pop(), 0);
  EXPECT_EQ(q.pop(), 2);
  EXPECT_EQ(q.pop(), 4);
  EXPECT_TRUE(q.empty());
  q.push("odd", Priority::kNormal, 7);  // a tenant emptied by extract_if can queue again
  EXPECT_EQ(q.pop(), 7);
}

TEST(FairQueue, BacklogOfAThousandDoesNotStarveAnotherTenant) {
  FairQueue<int> q;
  for (int i = 0; i < 1000; ++i) q.push("heavy", Priority::kNormal, i);
  q.pop();  // heavy's first item starts
  q.push("light", Priority::kNormal, -1);
  // light's item is served after at most one more of heavy's, not after 999.
  EXPECT_EQ(q.pop(), 1);
  EXPECT_EQ(q.pop(), -1);
  EXPECT_EQ(q.size(), 998u);
}

std::shared_ptr<JobContext> context(const std::string& tenant, Priority priority) {
  auto ctx = std::make_shared<JobContext>();
  ctx->tenant = tenant;
  ctx->priority = priority;
  return ctx;
}

// One worker, blocked; 1,000 queued jobs of tenant "heavy", then one of "light" and one HIGH
// job of "heavy": the HIGH job runs first, light's second, and the backlog after them.
TEST(EngineFairness, OneWorkerServesHighThenOtherTenantBeforeABacklogOfAThousand) {
  Engine engine(std::make_unique<CpuBackend>(1), EngineOptions{.queue_depth = 1});
  absl::Notification release;
  std::mutex mu;
  std::vector<std::string> order;
  auto record = [&](std::string name) {
    return [&, name = std::move(name)](absl::Status s) {
      EXPECT_TRUE(s.ok()) << s;
      std::lock_guard lock(mu);
      order.push_back(name);
    };
  };
  std::atomic<bool> started{false};
  ASSERT_TRUE(engine
                  .submit("blocker", context("heavy", Priority::kNormal),
                          [&](absl::Status) {
                            started = true;
                            release.WaitForNotification();
                          })
                  .ok());
  while (!started.load()) std::this_thread::yield();
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(engine
                    .submit("t", context("heavy", Priority::kNormal), record("heavy"),
                            Engine::Admission::kUnbounded)
                    .ok());
  }
  // --queue-depth=1 still bounds ordinary submissions.
  EXPECT_EQ(engine.submit("t", context("other", Priority::kNormal), [](absl::Status) {}).code(),
            absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(engine
                  .submit("t", context("light", Priority::kNormal), record("light"),
                          Engine::Admission::kUnbounded)
                  .ok());
  ASSERT_TRUE(engine
                  .submit("t", context("heavy", Priority::kHigh), record("heavy-high"),
                          Engine::Admission::kUnbounded)
                  .ok());
  release.Notify();
  engine.drain();
  ASSERT_EQ(order.size(), 1002u);
  EXPECT_EQ(order[0], "heavy-high");
  // After the HIGH job, turns alternate heavy, light: light's job is at most second.
  const auto light = std::find(order.begin(), order.end(), "light") - order.begin();
  EXPECT_LE(light, 2) << "light ran at position " << light << " of 1002";
}

TEST(EngineFairness, RunningPhaseIsSetWhenTheTaskStarts) {
  Engine engine(std::make_unique<CpuBackend>(1), EngineOptions{});
  auto ctx = context("t", Priority::kNormal);
  EXPECT_EQ(ctx->phase.load(), JobPhase::kQueued);
  absl::Notification done;
  JobPhase seen = JobPhase::kQueued;
  ASSERT_TRUE(engine
                  .submit("t", ctx,
                          [&](absl::Status) {
                            seen = ctx->phase.load();
                            done.Notify();
                          })
                  .ok());
  done.WaitForNotification();
  EXPECT_EQ(seen, JobPhase::kRunning);
}

}  // namespace
}  // namespace gcompute::server
