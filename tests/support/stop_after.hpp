// SPDX-License-Identifier: Apache-2.0
// Cancels a kernel call while it runs: another thread raises the flag behind the call's
// StopToken after a fixed delay, and the caller learns how soon after the flag the call returned.
#pragma once

#include <atomic>
#include <chrono>
#include <thread>
#include <type_traits>

#include "gcompute/kernels/stop_token.hpp"

namespace gcompute::testing {

/// What a call returned, and how many milliseconds after its stop flag was raised it returned
/// (negative when it returned before the flag).
template <typename Result>
struct StoppedCall {
  Result result;
  double late_ms;
};

/// Calls `call(stop)` and raises the flag behind `stop` `after` into the call.
template <typename Call, typename Result = std::invoke_result_t<Call&, kernels::StopToken>>
StoppedCall<Result> call_stopped_after(std::chrono::milliseconds after, Call call) {
  std::atomic<bool> flag{false};
  std::chrono::steady_clock::time_point raised;
  std::thread raiser([&] {
    std::this_thread::sleep_for(after);
    raised = std::chrono::steady_clock::now();
    flag.store(true);
  });
  StoppedCall<Result> out{call(kernels::StopToken(&flag)), 0.0};
  const auto returned = std::chrono::steady_clock::now();
  raiser.join();
  out.late_ms = std::chrono::duration<double, std::milli>(returned - raised).count();
  return out;
}

}  // namespace gcompute::testing
