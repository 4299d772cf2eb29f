// SPDX-License-Identifier: Apache-2.0
// Cancels a CPU kernel while it runs: at a fixed time, or while its uninterruptible LAPACK call
// runs (kernels/cpu/lapack_gate.cc's run_cancellable), and measures how soon the kernel answers.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "absl/status/status.h"

#include "gcompute/kernels/cpu/background_calls.hpp"
#include "gcompute/kernels/stop_token.hpp"
#include "support/stop_after.hpp"

namespace gcompute::testing {

/// Calls `call(stop)`, which returns the kernel's status, and raises the flag behind `stop`
/// `after` into the call: the kernel must return CANCELLED, saying so. Returns how long the call
/// took.
template <typename Call>
std::chrono::steady_clock::duration expect_cancelled_midway(std::chrono::milliseconds after,
                                                            Call call) {
  const auto start = std::chrono::steady_clock::now();
  const absl::Status status = call_stopped_after(after, call).result;
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  EXPECT_NE(status.message().find("cancelled"), absl::string_view::npos) << status;
  return took;
}

/// Calls `call(stop)` and raises the flag behind `stop` 50 ms after a LAPACK call has started
/// in the background (the input copies come first, so a fixed delay could fire before it).
/// Returns how long after the flag `call` returned.
template <typename Call>
std::chrono::duration<double, std::milli> cancel_during_lapack(Call call) {
  using kernels::cpu::lapack_calls_in_background;
  while (lapack_calls_in_background() > 0) {  // an earlier test's, when run in one process
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::atomic<bool> flag{false};
  std::chrono::steady_clock::time_point raised;
  std::thread canceller([&] {
    for (int i = 0; i < 20000 && lapack_calls_in_background() == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    raised = std::chrono::steady_clock::now();
    flag = true;
  });
  call(kernels::StopToken(&flag));
  const auto returned = std::chrono::steady_clock::now();
  canceller.join();
  return returned - raised;
}

/// cancel_during_lapack where `call(stop)` returns the kernel's status: CANCELLED, saying the
/// LAPACK call finishes in the background, well before that call would have ended.
template <typename Call>
void expect_lapack_cancel_answered_at_once(Call call) {
  absl::Status status;
  const auto late = cancel_during_lapack([&](kernels::StopToken stop) { status = call(stop); });
  ASSERT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  EXPECT_NE(status.message().find("finishes in the background"), absl::string_view::npos) << status;
  // The uninterrupted call would take another second or more; the bound leaves room for a
  // loaded machine (CI runs two tests at once, sanitizers included).
  EXPECT_LT(late.count(), 750.0) << late.count() << " ms";
}

}  // namespace gcompute::testing
