// SPDX-License-Identifier: Apache-2.0
// The engine's queue on the CPU backend: bounded depth, deadlines, cancellation while queued,
// draining, and work spread over workers.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>
#include <utility>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "engine/cpu_backend.hpp"
#include "engine/engine.hpp"

namespace gcompute::server {
namespace {

std::shared_ptr<JobContext> job(absl::Duration timeout = absl::Seconds(30)) {
  auto ctx = std::make_shared<JobContext>();
  ctx->deadline = absl::Now() + timeout;
  return ctx;
}

/// The status a task was started with, and a notification when it was.
struct Outcome {
  absl::Status status;
  absl::Notification done;
  /// A task that records its status here. Moved, not copied: a copy would leave the worker's
  /// argument sharing the status's reference-counted payload with the reader, whose release on
  /// the reader's thread and the worker's later one TSan reported as a race.
  auto record() {
    return [this](absl::Status s) {
      status = std::move(s);
      done.Notify();
    };
  }
};

/// Queues a task of `ctx` behind one that holds the engine's only worker, calls `while_queued`,
/// frees the worker and returns the status the queued task was started with.
absl::Status start_after_queueing(Engine& engine, std::shared_ptr<JobContext> ctx,
                                  const std::function<void()>& while_queued) {
  absl::Notification release;
  const absl::Status holder =
      engine.submit("t", job(), [&](absl::Status) { release.WaitForNotification(); });
  EXPECT_TRUE(holder.ok()) << holder;
  Outcome queued;
  const absl::Status submitted = engine.submit("t", std::move(ctx), queued.record());
  EXPECT_TRUE(submitted.ok()) << submitted;
  while_queued();
  release.Notify();
  if (submitted.ok()) queued.done.WaitForNotification();
  return queued.status;
}

TEST(Engine, QueueFullIsResourceExhaustedAndRecovers) {
  Engine engine(std::make_unique<CpuBackend>(1), EngineOptions{.queue_depth = 1});
  absl::Notification release;
  std::atomic<int> ran{0};
  // One running (blocked), one queued: the third must be refused.
  ASSERT_TRUE(engine
                  .submit("t", job(),
                          [&](absl::Status s) {
                            ASSERT_TRUE(s.ok());
                            release.WaitForNotification();
                            ++ran;
                          })
                  .ok());
  while (true) {  // wait until the first task is running so the queue holds only the second
    absl::SleepFor(absl::Milliseconds(5));
    if (engine
            .submit("t", job(),
                    [&](absl::Status s) {
                      ASSERT_TRUE(s.ok());
                      ++ran;
                    })
            .ok())
      break;
  }
  const absl::Status third = engine.submit("t", job(), [&](absl::Status) { ++ran; });
  EXPECT_EQ(third.code(), absl::StatusCode::kResourceExhausted) << third;
  EXPECT_NE(third.message().find("queue full"), std::string::npos) << third;
  release.Notify();
  engine.drain();
  EXPECT_EQ(ran.load(), 2);
}

TEST(Engine, ExpiredDeadlineIsRefusedAtSubmitAndInQueue) {
  Engine engine(std::make_unique<CpuBackend>(1), EngineOptions{.queue_depth = 4});
  auto expired = job(absl::Milliseconds(-1));
  EXPECT_EQ(engine.submit("t", expired, [](absl::Status) {}).code(),
            absl::StatusCode::kDeadlineExceeded);

  const absl::Status queued = start_after_queueing(engine, job(absl::Milliseconds(20)), [] {
    absl::SleepFor(absl::Milliseconds(60));  // the queued task's deadline passes while it waits
  });
  EXPECT_EQ(queued.code(), absl::StatusCode::kDeadlineExceeded) << queued;
}

TEST(Engine, CancelledWhileQueuedIsNotRun) {
  Engine engine(std::make_unique<CpuBackend>(1), EngineOptions{.queue_depth = 4});
  auto ctx = job();
  const absl::Status queued =
      start_after_queueing(engine, ctx, [&] { ctx->cancelled.store(true); });
  EXPECT_EQ(queued.code(), absl::StatusCode::kCancelled) << queued;
}

TEST(Engine, CancelledQueuedCallsFreeTheirSlots) {
  Engine engine(std::make_unique<CpuBackend>(1), EngineOptions{.queue_depth = 1});
  absl::Notification release;
  ASSERT_TRUE(engine.submit("t", job(), [&](absl::Status) { release.WaitForNotification(); }).ok());
  auto waiting = job();
  Outcome queued;
  while (!engine.submit("t", waiting, queued.record()).ok()) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  waiting->cancelled.store(true);
  // The queue is full of a cancelled call: a new call takes its slot, the cancelled one ends.
  EXPECT_TRUE(engine.submit("t", job(), [](absl::Status) {}).ok());
  ASSERT_TRUE(queued.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_EQ(queued.status.code(), absl::StatusCode::kCancelled) << queued.status;
  release.Notify();
  engine.drain();
}

TEST(Engine, DrainingRefusesNewWorkButFinishesQueued) {
  Engine engine(std::make_unique<CpuBackend>(2), EngineOptions{.queue_depth = 8});
  std::atomic<int> ran{0};
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(engine
                    .submit("t", job(),
                            [&](absl::Status s) {
                              EXPECT_TRUE(s.ok());
                              absl::SleepFor(absl::Milliseconds(10));
                              ++ran;
                            })
                    .ok());
  }
  engine.drain();
  EXPECT_EQ(ran.load(), 6);
  EXPECT_EQ(engine.submit("t", job(), [](absl::Status) {}).code(), absl::StatusCode::kUnavailable);
}

TEST(Engine, WorkersRunTasksConcurrently) {
  // Two workers: two tasks that each wait for the other can only finish if both run at once.
  Engine engine(std::make_unique<CpuBackend>(2), EngineOptions{.queue_depth = 8});
  std::atomic<int> arrived{0};
  std::atomic<int> finished{0};
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(engine
                    .submit("t", job(),
                            [&](absl::Status) {
                              ++arrived;
                              const auto until =
                                  std::chrono::steady_clock::now() + std::chrono::seconds(10);
                              while (arrived.load() < 2 && std::chrono::steady_clock::now() < until)
                                std::this_thread::yield();
                              if (arrived.load() == 2) ++finished;
                            })
                    .ok());
  }
  engine.drain();
  EXPECT_EQ(finished.load(), 2);
}

TEST(Engine, InlineIfIdleRunsOnTheCallerWhenAWorkerIsFreeAndQueuesOtherwise) {
  Engine engine(std::make_unique<CpuBackend>(1), EngineOptions{.queue_depth = 4});
  const std::thread::id caller = std::this_thread::get_id();
  std::thread::id ran_on;
  bool done = false;
  ASSERT_TRUE(engine
                  .submit(
                      "t", job(),
                      [&](absl::Status s) {
                        EXPECT_TRUE(s.ok()) << s;
                        ran_on = std::this_thread::get_id();
                        done = true;
                      },
                      Engine::Admission::kBounded, Engine::Dispatch::kInlineIfIdle)
                  .ok());
  EXPECT_TRUE(done) << "an idle engine runs the task before submit returns";
  EXPECT_EQ(ran_on, caller);

  // The only worker is busy: the task waits in the queue and runs on the worker, after it.
  absl::Notification release;
  Outcome holder_started;
  ASSERT_TRUE(engine
                  .submit("t", job(),
                          [&](absl::Status s) {
                            holder_started.record()(s);
                            release.WaitForNotification();
                          })
                  .ok());
  holder_started.done.WaitForNotification();
  Outcome queued;
  std::thread::id queued_on;
  ASSERT_TRUE(engine
                  .submit(
                      "t", job(),
                      [&](absl::Status s) {
                        queued_on = std::this_thread::get_id();
                        queued.record()(s);
                      },
                      Engine::Admission::kBounded, Engine::Dispatch::kInlineIfIdle)
                  .ok());
  EXPECT_FALSE(queued.done.HasBeenNotified()) << "ran although the only worker was busy";
  release.Notify();
  queued.done.WaitForNotification();
  EXPECT_TRUE(queued.status.ok()) << queued.status;
  EXPECT_NE(queued_on, caller);
}

TEST(Engine, AnInlineTaskHoldsAWorkerSlot) {
  // One worker slot, taken by a task running inline on another thread: a queued task waits for
  // it even though the worker thread itself is idle.
  Engine engine(std::make_unique<CpuBackend>(1), EngineOptions{.queue_depth = 4});
  absl::Notification inline_started, release;
  std::thread submitter([&] {
    ASSERT_TRUE(engine
                    .submit(
                        "t", job(),
                        [&](absl::Status) {
                          inline_started.Notify();
                          release.WaitForNotification();
                        },
                        Engine::Admission::kBounded, Engine::Dispatch::kInlineIfIdle)
                    .ok());
  });
  inline_started.WaitForNotification();
  Outcome queued;
  ASSERT_TRUE(engine.submit("t", job(), queued.record()).ok());
  EXPECT_FALSE(queued.done.WaitForNotificationWithTimeout(absl::Milliseconds(200)))
      << "a second task ran beside the inline one on a one-slot engine";
  release.Notify();
  submitter.join();
  queued.done.WaitForNotification();
  EXPECT_TRUE(queued.status.ok()) << queued.status;
}

TEST(Engine, DrainWithADeadlineThenCancelAllStopsRunningAndQueuedJobs) {
  Engine engine(std::make_unique<CpuBackend>(1), EngineOptions{.queue_depth = 4});
  auto running = job();
  auto queued = job();
  std::atomic<bool> started{false};
  absl::Status queued_start;
  // The running task works until its job is cancelled, as a kernel polling its StopToken.
  ASSERT_TRUE(engine
                  .submit("t", running,
                          [&](absl::Status s) {
                            ASSERT_TRUE(s.ok());
                            started = true;
                            while (!running->stop_token().stop_requested()) {
                              absl::SleepFor(absl::Milliseconds(1));
                            }
                          })
                  .ok());
  while (!started) absl::SleepFor(absl::Milliseconds(1));
  ASSERT_TRUE(engine.submit("t", queued, [&](absl::Status s) { queued_start = s; }).ok());
  const absl::Time start = absl::Now();
  EXPECT_FALSE(engine.drain(absl::Now() + absl::Milliseconds(100)));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(90));
  engine.cancel_all();
  EXPECT_TRUE(engine.drain(absl::Now() + absl::Seconds(10)));
  EXPECT_TRUE(running->shutdown.load());
  EXPECT_TRUE(queued->shutdown.load());
  EXPECT_EQ(queued_start.code(), absl::StatusCode::kCancelled) << queued_start;
  // Draining: nothing new is taken.
  EXPECT_EQ(engine.submit("t", job(), [](absl::Status) {}).code(), absl::StatusCode::kUnavailable);
}

TEST(Engine, StopTokenFiresAtTheJobDeadline) {
  auto ctx = job(absl::Milliseconds(50));
  const kernels::StopToken token = ctx->stop_token();
  EXPECT_FALSE(token.stop_requested());
  absl::SleepFor(absl::Milliseconds(60));
  EXPECT_TRUE(token.stop_requested());
  EXPECT_FALSE(ctx->cancelled.load());  // no gRPC cancel needed
}

}  // namespace
}  // namespace gcompute::server
