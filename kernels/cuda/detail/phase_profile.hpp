// SPDX-License-Identifier: Apache-2.0
// SvdTuning::profile's instrument: CUDA events at marked points of a stream, with the device
// time between one mark and the next summed per phase.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gcompute/kernels/cuda/event.hpp"
#include "gcompute/kernels/cuda/stream.hpp"

namespace gcompute::kernels::cuda::detail {

/// mark(p) records an event that starts phase p (an index into the names given at
/// construction) and ends whatever was marked before; mark(kUntimed) ends a phase without
/// starting one. collect(), after the stream has reached the marks (a synchronisation), adds the
/// intervals up and keeps the last mark as the start of the next; report() prints the sums and
/// the time outside the marked phases to stderr, and starts the next report's interval (one
/// profile serves every matrix of a batch). A phase is stream time from its mark to the
/// next: host work and synchronisations between the two (an info read, a host sort) count in
/// it, and only what follows a kUntimed mark is left to the rest. Best effort: a
/// failing event call turns the profile off (and clears the error, so that no later launch
/// check reports it), never failing the computation.
class PhaseProfile {
 public:
  static constexpr int kUntimed = -1;

  PhaseProfile(StreamView stream, bool on, std::vector<std::string> names)
      : stream_(stream),
        on_(on),
        names_(std::move(names)),
        sum_(names_.size(), 0.0),
        count_(names_.size(), 0) {
    if (!on_) return;
    absl::StatusOr<Event> begin = Event::create(EventTiming::kEnabled);
    absl::StatusOr<Event> end = Event::create(EventTiming::kEnabled);
    if (!begin.ok() || !end.ok() || !begin->record(stream_).ok()) {
      give_up();
      return;
    }
    begin_ = *std::move(begin);
    end_ = *std::move(end);
  }

  void mark(int phase) {
    if (!on_) return;
    if (used_ == events_.size()) {
      absl::StatusOr<Event> e = Event::create(EventTiming::kEnabled);
      if (!e.ok()) return give_up();
      events_.push_back(*std::move(e));
      phases_.push_back(kUntimed);
    }
    phases_[used_] = phase;
    if (!events_[used_++].record(stream_).ok()) give_up();
  }

  void collect() {
    if (!on_ || used_ == 0) return;
    for (std::size_t i = 0; i + 1 < used_; ++i) {
      if (phases_[i] == kUntimed) continue;
      const absl::StatusOr<float> ms = elapsed_ms(events_[i], events_[i + 1]);
      if (!ms.ok()) return give_up();
      sum_[static_cast<std::size_t>(phases_[i])] += *ms;
      ++count_[static_cast<std::size_t>(phases_[i])];
    }
    std::swap(events_[0], events_[used_ - 1]);
    phases_[0] = phases_[used_ - 1];
    used_ = 1;
  }

  /// "<what> total T ms: <phase> S (C), ..., rest R" on stderr, for the time since construction
  /// or the previous report; then the sums start again from zero.
  void report(const std::string& what) {
    if (!on_) return;
    mark(kUntimed);
    if (!on_ || !end_.record(stream_).ok() || !end_.synchronize().ok()) return give_up();
    collect();
    const absl::StatusOr<float> total = elapsed_ms(begin_, end_);
    if (!on_ || !total.ok()) return give_up();
    std::string line = what + " total " + format_ms(*total) + " ms:";
    double timed = 0;
    for (std::size_t p = 0; p < names_.size(); ++p) {
      line += " " + names_[p] + " " + format_ms(sum_[p]) + " (" + std::to_string(count_[p]) + "),";
      timed += sum_[p];
    }
    line += " rest (outside the marked phases) " + format_ms(*total - timed);
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fill(sum_.begin(), sum_.end(), 0.0);
    std::fill(count_.begin(), count_.end(), 0);
    std::swap(begin_, end_);  // the event just reached starts the next interval
  }

 private:
  static std::string format_ms(double ms) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.3f", ms);
    return buf;
  }
  void give_up() {
    on_ = false;
    static_cast<void>(cudaGetLastError());
  }

  StreamView stream_;
  bool on_;
  std::vector<std::string> names_;
  std::vector<double> sum_;
  std::vector<std::int64_t> count_;
  Event begin_, end_;
  std::vector<Event> events_;
  std::vector<int> phases_;
  std::size_t used_ = 0;
};

}  // namespace gcompute::kernels::cuda::detail
