// SPDX-License-Identifier: Apache-2.0
#include "api/idle_watch.hpp"

#include <algorithm>

namespace gcompute::server {

void IdleWatch::Registration::close() {
  std::lock_guard lock(mu_);
  on_idle_ = nullptr;
}

IdleWatch::IdleWatch(absl::Duration idle) : idle_(idle), thread_([this] { loop(); }) {}

IdleWatch::~IdleWatch() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::shared_ptr<IdleWatch::Registration> IdleWatch::watch(std::function<bool()> on_idle) {
  auto reg = std::make_shared<Registration>();
  reg->on_idle_ = std::move(on_idle);
  reg->touch();
  std::lock_guard lock(mu_);
  watched_.push_back(reg);
  return reg;
}

void IdleWatch::loop() {
  // A stream is aborted between one and 1.25 idle periods after its last activity.
  const auto period = std::clamp(absl::ToChronoMilliseconds(idle_ / 4),
                                 std::chrono::milliseconds(5), std::chrono::milliseconds(1000));
  const auto idle = std::chrono::duration_cast<Clock::duration>(absl::ToChronoNanoseconds(idle_));
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, period, [this] { return stopping_; })) {
    std::vector<std::shared_ptr<Registration>> expired;
    const Clock::rep now = Clock::now().time_since_epoch().count();
    std::erase_if(watched_, [&](const std::shared_ptr<Registration>& reg) {
      if (reg.use_count() == 1) return true;  // its stream is gone
      if (now - reg->last_.load() >= idle.count()) expired.push_back(reg);
      return false;
    });
    lock.unlock();
    for (const std::shared_ptr<Registration>& reg : expired) {
      std::lock_guard reg_lock(reg->mu_);
      if (!reg->on_idle_) continue;  // closed
      // A stream busy at this moment is not idle: its period starts again.
      if (reg->on_idle_()) {
        reg->on_idle_ = nullptr;
      } else {
        reg->touch();
      }
    }
    lock.lock();
  }
}

}  // namespace gcompute::server
