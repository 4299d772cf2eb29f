// SPDX-License-Identifier: Apache-2.0
// qdwh_iterate's choice of step, on a recording stand-in for a backend's linear algebra: which
// step each iteration takes from the weights, and where a step that reports a Gram that is not
// positive definite hands over to the next one.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>

#include "gcompute/kernels/qdwh.hpp"

namespace gcompute::kernels {
namespace {

/// Records each step as a letter: Q (Householder QR), K (CholeskyQR2), C (Cholesky), with a
/// lower-case letter for one that declined (returned false). X is never touched.
struct RecordingSteps {
  bool cholesky_qr_succeeds = true;
  bool cholesky_succeeds = true;
  std::string log;

  absl::Status keep_previous() { return absl::OkStatus(); }
  absl::StatusOr<bool> cholesky_step(const QdwhWeights& w) {
    EXPECT_LE(w.c, 100.0);
    log += cholesky_succeeds ? 'C' : 'c';
    return cholesky_succeeds;
  }
  absl::StatusOr<bool> cholesky_qr_step(const QdwhWeights& w) {
    EXPECT_GT(w.c, 100.0);
    log += cholesky_qr_succeeds ? 'K' : 'k';
    return cholesky_qr_succeeds;
  }
  absl::Status qr_step(const QdwhWeights&) {
    log += 'Q';
    return absl::OkStatus();
  }
  absl::StatusOr<double> orthogonality_error() { return 0.0; }  // orthogonal when measured
  absl::StatusOr<double> step_size() { return 0.0; }
};

std::string run(RecordingSteps& steps, double l0, double eps) {
  const absl::StatusOr<SvdInfo> info = qdwh_iterate(steps, 100, l0, eps, 20, StopToken{}, "test");
  EXPECT_TRUE(info.ok()) << info.status();
  if (!info.ok()) return "";
  EXPECT_TRUE(info->converged);
  EXPECT_EQ(info->sweeps,
            static_cast<int>(steps.log.size() -
                             std::count_if(steps.log.begin(), steps.log.end(),
                                           [](char c) { return c == 'k' || c == 'c'; })));
  return steps.log;
}

TEST(QdwhIterate, FromEpsOneQrStepThenOneCholeskyQrStepThenCholesky) {
  constexpr double f64 = std::numeric_limits<double>::epsilon();
  constexpr double f32 = std::numeric_limits<float>::epsilon();
  RecordingSteps d, s;
  // c = 1.2e21 (c eps = 2.6e5), 4.2e6 (9.3e-10), then at most 72 (f64); 2.7e9 (323), 577
  // (6.9e-5), then at most 5.7 (f32).
  EXPECT_EQ(run(d, f64, f64), "QKCCCC");
  EXPECT_EQ(run(s, f32, f32), "QKCC");
}

TEST(QdwhIterate, ADeclinedCholeskyQrStepFallsBackToQr) {
  constexpr double eps = std::numeric_limits<double>::epsilon();
  RecordingSteps steps;
  steps.cholesky_qr_succeeds = false;
  EXPECT_EQ(run(steps, eps, eps), "QkQCCCC");
}

TEST(QdwhIterate, ADeclinedCholeskyStepFallsBackToQr) {
  constexpr double eps = std::numeric_limits<double>::epsilon();
  RecordingSteps steps;
  steps.cholesky_succeeds = false;
  EXPECT_EQ(run(steps, eps, eps), "QKcQcQcQcQ");
}

TEST(QdwhIterate, TheStepFollowsTheBoundNotTheType) {
  // A bound far below eps (a CPU condition estimate can give eps^2) takes Householder steps
  // until c eps <= 1e-3; a good bound goes straight to Cholesky steps.
  constexpr double eps = std::numeric_limits<double>::epsilon();
  RecordingSteps tiny, good;
  const std::string from_tiny = run(tiny, eps * eps, eps);
  EXPECT_EQ(from_tiny.substr(0, 2), "QQ") << from_tiny;
  EXPECT_NE(from_tiny.find('K'), std::string::npos) << from_tiny;
  EXPECT_EQ(run(good, 0.5, eps).find_first_not_of('C'), std::string::npos);
}

}  // namespace
}  // namespace gcompute::kernels
