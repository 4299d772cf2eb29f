// SPDX-License-Identifier: Apache-2.0
// Cancels a CPU kernel while its uninterruptible LAPACK call runs (kernels/cpu/lapack_gate.cc's
// run_cancellable) and measures how soon the kernel answers.
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

#include "gcompute/kernels/cpu/background_calls.hpp"
#include "gcompute/kernels/stop_token.hpp"

namespace gcompute::testing {

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

}  // namespace gcompute::testing
