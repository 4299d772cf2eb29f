// SPDX-License-Identifier: Apache-2.0
// The engine's queue policy: strict priority between levels (a HIGH item goes ahead of every
// queued NORMAL one; nothing running is preempted), and round-robin between tenants within a
// level, so one tenant's backlog delays another's next item by at most one item per tenant.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace gcompute::server {

/// How urgent queued work is. Higher values are served first.
enum class Priority { kNormal = 0, kHigh = 1 };

template <typename T>
class FairQueue {
 public:
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  /// Appends `item` to `tenant`'s queue at `priority`.
  void push(const std::string& tenant, Priority priority, T item) {
    Level& level = levels_[index(priority)];
    auto [it, inserted] = level.queues.try_emplace(tenant);
    // A tenant with nothing queued joins the end of the turn order.
    if (it->second.empty()) level.turns.push_back(tenant);
    it->second.push_back(std::move(item));
    ++size_;
  }

  /// Removes and returns the next item: from the highest non-empty level, the oldest item of
  /// the tenant whose turn it is. Requires !empty().
  T pop() {
    Level& level = levels_[levels_[index(Priority::kHigh)].turns.empty() ? index(Priority::kNormal)
                                                                         : index(Priority::kHigh)];
    const std::string tenant = std::move(level.turns.front());
    level.turns.pop_front();
    auto it = level.queues.find(tenant);
    T item = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) {
      level.queues.erase(it);
    } else {
      level.turns.push_back(tenant);  // back of the line for its next item
    }
    --size_;
    return item;
  }

  /// Calls `fn` on every queued item, in no particular order.
  template <typename Fn>
  void for_each(Fn&& fn) {
    for (Level& level : levels_) {
      for (auto& [tenant, q] : level.queues) {
        for (T& item : q) fn(item);
      }
    }
  }

  /// Removes every item for which `pred` is true and returns them (in no particular order).
  std::vector<T> extract_if(const std::function<bool(const T&)>& pred) {
    std::vector<T> out;
    for (Level& level : levels_) {
      for (auto it = level.queues.begin(); it != level.queues.end();) {
        std::deque<T>& q = it->second;
        for (auto q_it = q.begin(); q_it != q.end();) {
          if (pred(*q_it)) {
            out.push_back(std::move(*q_it));
            q_it = q.erase(q_it);
            --size_;
          } else {
            ++q_it;
          }
        }
        if (q.empty()) {
          level.turns.remove(it->first);
          it = level.queues.erase(it);
        } else {
          ++it;
        }
      }
    }
    return out;
  }

 private:
  struct Level {
    std::map<std::string, std::deque<T>> queues;  ///< only tenants with queued items
    std::list<std::string> turns;                 ///< each tenant of `queues` once
  };
  static std::size_t index(Priority p) { return p == Priority::kHigh ? 1 : 0; }

  Level levels_[2];
  std::size_t size_ = 0;
};

}  // namespace gcompute::server
