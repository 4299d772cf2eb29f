// SPDX-License-Identifier: Apache-2.0
#include "detail/lapack_gate.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gcompute/kernels/cpu/background_calls.hpp"

// OpenBLAS's thread controls. Weak, so that the library still links against another BLAS
// (where the small-matrix mode then only spreads items over host threads).
extern "C" {
int openblas_get_num_threads(void) __attribute__((weak));
void openblas_set_num_threads(int) __attribute__((weak));
}

namespace gcompute::kernels::cpu::detail {
namespace {

std::timed_mutex& lapack_turn() {
  static std::timed_mutex mu;
  return mu;
}

// The pool size while a small batch runs OpenBLAS single-threaded, else 0: other callers must
// still see the configured size (and wait for their turn) in the meantime.
std::atomic<int> overridden_pool{0};

int blas_threads() {
  if (const int saved = overridden_pool.load(); saved > 0) return saved;
  return openblas_get_num_threads != nullptr ? std::max(1, openblas_get_num_threads()) : 1;
}

void set_blas_threads(int n) {
  if (openblas_set_num_threads != nullptr) openblas_set_num_threads(n);
}

absl::Status call_item(const char* op, std::int64_t b,
                       const std::function<absl::Status(std::int64_t)>& item) {
  try {
    return item(b);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat(op, ": out of host memory for the LAPACK workspace of matrix ", b));
  }
}

// LAPACK calls started by run_cancellable that have not returned, their callers possibly gone.
std::atomic<int> calls_in_background{0};

int background_limit() {
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// exit() runs OpenBLAS's teardown, which a call still running in the background would
// crash into: registered at the first background call, exit waits for them first.
void wait_for_background_calls_at_exit() {
  static std::once_flag registered;
  std::call_once(registered, [] {
    std::atexit([] {
      while (calls_in_background.load() > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
  });
}

/// Waits, polling `stop`, until `ready` holds; false when stopped first.
template <typename Ready>
bool wait_polling(StopToken stop, Ready ready) {
  while (!ready()) {
    if (stop.stop_requested()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

absl::Status cancelled(const char* op, std::int64_t done, std::int64_t batch) {
  return absl::CancelledError(
      absl::StrCat(op, ": cancelled after ", done, " of ", batch, " matrices"));
}

}  // namespace

absl::Status run_batch(const char* op, std::int64_t batch, bool small, StopToken stop,
                       const std::function<absl::Status(std::int64_t)>& item) {
  if (batch <= 0) return absl::OkStatus();
  const int pool = blas_threads();
  // A multi-threaded OpenBLAS is shared: wait for the turn, polling the stop token so that a
  // queued request stays cancellable. A single-threaded one runs concurrent calls in parallel.
  std::unique_lock<std::timed_mutex> turn(lapack_turn(), std::defer_lock);
  if (pool > 1) {
    // The turn, then the end of any cancelled call still running on OpenBLAS's threads.
    const bool got = wait_polling(stop, [&] {
      return turn.owns_lock() ? calls_in_background.load() == 0
                              : turn.try_lock_for(std::chrono::milliseconds(5)) &&
                                    calls_in_background.load() == 0;
    });
    if (!got) {
      return absl::CancelledError(
          absl::StrCat(op, ": cancelled while waiting for another LAPACK call to finish"));
    }
  }

  const std::int64_t threads =
      small ? std::min<std::int64_t>(
                  batch, std::max<std::int64_t>(pool, std::thread::hardware_concurrency()))
            : 1;
  if (threads <= 1) {
    for (std::int64_t b = 0; b < batch; ++b) {
      if (stop.stop_requested()) return cancelled(op, b, batch);
      if (absl::Status st = call_item(op, b, item); !st.ok()) return st;
    }
    return absl::OkStatus();
  }

  // Small matrices: OpenBLAS single-threaded (while this batch holds the turn), items over
  // host threads.
  struct RestoreThreads {
    int count;
    ~RestoreThreads() {
      if (count <= 1) return;
      set_blas_threads(count);
      overridden_pool = 0;
    }
  } restore{pool};
  if (pool > 1) {
    overridden_pool = pool;
    set_blas_threads(1);
  }
  std::atomic<std::int64_t> next{0};
  std::atomic<std::int64_t> done{0};
  std::mutex error_mu;
  absl::Status error;
  auto worker = [&] {
    for (std::int64_t b = next++; b < batch; b = next++) {
      absl::Status st =
          stop.stop_requested() ? cancelled(op, done.load(), batch) : call_item(op, b, item);
      if (!st.ok()) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (error.ok()) error = std::move(st);
        next = batch;  // hand out no more work
        return;
      }
      ++done;
    }
  };
  std::vector<std::thread> pool_threads;
  for (std::int64_t t = 1; t < threads; ++t) {
    try {
      pool_threads.emplace_back(worker);
    } catch (const std::system_error&) {
      break;  // out of threads: the running ones take all the work
    }
  }
  worker();
  for (std::thread& t : pool_threads) t.join();
  return error;
}

absl::Status run_cancellable(const char* op, StopToken stop, std::function<absl::Status()> call) {
  const int limit = background_limit();
  const bool admitted = wait_polling(stop, [&] {
    int running = calls_in_background.load();
    while (running < limit) {
      if (calls_in_background.compare_exchange_weak(running, running + 1)) return true;
    }
    return false;
  });
  if (!admitted) {
    return absl::CancelledError(
        absl::StrCat(op, ": cancelled while waiting for cancelled LAPACK calls to finish"));
  }
  wait_for_background_calls_at_exit();
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    absl::Status status;
  };
  auto shared = std::make_shared<Shared>();
  auto body = [shared, call = std::move(call), op] {
    absl::Status st;
    try {
      st = call();
    } catch (const std::bad_alloc&) {
      st = absl::ResourceExhaustedError(absl::StrCat(op, ": out of host memory for LAPACK"));
    }
    {
      std::lock_guard<std::mutex> lock(shared->mu);
      shared->status = std::move(st);
      shared->done = true;
    }
    shared->cv.notify_all();
    --calls_in_background;
  };
  try {
    std::thread(body).detach();
  } catch (const std::system_error&) {
    body();  // out of threads: run it here, uninterruptible
  }
  std::unique_lock<std::mutex> lock(shared->mu);
  while (!shared->cv.wait_for(lock, std::chrono::milliseconds(5), [&] { return shared->done; })) {
    if (stop.stop_requested()) {
      return absl::CancelledError(
          absl::StrCat(op, ": cancelled during a LAPACK call (it finishes in the background)"));
    }
  }
  return shared->status;
}

}  // namespace gcompute::kernels::cpu::detail

namespace gcompute::kernels::cpu {

int lapack_calls_in_background() {
  return detail::calls_in_background.load();
}

}  // namespace gcompute::kernels::cpu
