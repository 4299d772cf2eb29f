// SPDX-License-Identifier: Apache-2.0
// kernels::cuda::tuning_from_environment (host code: runs without a GPU) and the validation of
// the tuning structs: every variable of docs/dev/knobs.md, in range, out of range and unset.
#include <gtest/gtest.h>

#include <cstdlib>
#include <initializer_list>
#include <utility>

#include "gcompute/kernels/cuda/tuning.hpp"

namespace gcompute::kernels::cuda {
namespace {

constexpr const char* kVariables[] = {
    "GCOMPUTE_SVD_BLOCK",        "GCOMPUTE_SVD_GRAM_PRODUCTS", "GCOMPUTE_SVD_INNER_SWEEPS",
    "GCOMPUTE_SVD_INNER_SOLVER", "GCOMPUTE_SVD_INNER_DOUBLE",  "GCOMPUTE_SVD_SORT",
    "GCOMPUTE_SVD_SETTLE_CHECK", "GCOMPUTE_SVD_PROFILE",       "GCOMPUTE_APSP_DEPTH"};

/// The value of every knob of kVariables, in that order.
struct Knobs {
  int block, gram_products, inner_sweeps, inner_solver;
  bool inner_double, sort_columns, settle_check, profile;
  int apsp_depth;
};
constexpr Knobs kDefaults = {0, 0, 1, 0, false, true, true, false, 0};

void expect_knobs(const Tuning& t, const Knobs& want) {
  EXPECT_EQ(t.svd.block, want.block);
  EXPECT_EQ(t.svd.gram_products, want.gram_products);
  EXPECT_EQ(t.svd.inner_sweeps, want.inner_sweeps);
  EXPECT_EQ(static_cast<int>(t.svd.inner_solver), want.inner_solver);
  EXPECT_EQ(t.svd.inner_double, want.inner_double);
  EXPECT_EQ(t.svd.sort_columns, want.sort_columns);
  EXPECT_EQ(t.svd.settle_check, want.settle_check);
  EXPECT_EQ(t.svd.profile, want.profile);
  EXPECT_EQ(t.apsp.depth, want.apsp_depth);
}

/// Clears every knob before and after each test, so that the process environment does not leak
/// into the expectations.
class TuningFromEnvironment : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char* v : kVariables) ASSERT_EQ(unsetenv(v), 0) << v;
  }
  static void set(const char* name, const char* value) { ASSERT_EQ(setenv(name, value, 1), 0); }
};

TEST_F(TuningFromEnvironment, UnsetGivesTheDefaults) {
  const Tuning t = tuning_from_environment();
  const SvdTuning svd;
  expect_knobs(t, kDefaults);
  EXPECT_EQ(t.svd.block, svd.block);
  EXPECT_TRUE(validate(t.svd).ok());
  EXPECT_TRUE(validate(t.apsp).ok());
}

TEST_F(TuningFromEnvironment, ValuesInRangeAreTaken) {
  set("GCOMPUTE_SVD_BLOCK", "24");
  set("GCOMPUTE_SVD_GRAM_PRODUCTS", "65536");
  set("GCOMPUTE_SVD_INNER_SWEEPS", "30");
  set("GCOMPUTE_SVD_INNER_SOLVER", "2");
  set("GCOMPUTE_SVD_INNER_DOUBLE", "1");
  set("GCOMPUTE_SVD_SORT", "0");
  set("GCOMPUTE_SVD_SETTLE_CHECK", "0");
  set("GCOMPUTE_SVD_PROFILE", "1");
  set("GCOMPUTE_APSP_DEPTH", "2");
  expect_knobs(tuning_from_environment(), {24, 65536, 30, 2, true, false, false, true, 2});
  set("GCOMPUTE_SVD_INNER_SOLVER", "1");
  EXPECT_EQ(tuning_from_environment().svd.inner_solver, SvdTuning::InnerSolver::kTwoSided);
  set("GCOMPUTE_APSP_DEPTH", "1");
  EXPECT_EQ(tuning_from_environment().apsp.depth, 1);
}

TEST_F(TuningFromEnvironment, BlockWidthIsRoundedDownToAMultipleOfEight) {
  for (const auto& [value, want] :
       {std::pair{"8", 8}, {"15", 8}, {"20", 16}, {"63", 56}, {"64", 64}}) {
    set("GCOMPUTE_SVD_BLOCK", value);
    const Tuning t = tuning_from_environment();
    EXPECT_EQ(t.svd.block, want) << value;
    EXPECT_TRUE(validate(t.svd).ok()) << value;
  }
}

TEST_F(TuningFromEnvironment, OutOfRangeKeepsTheDefault) {
  set("GCOMPUTE_SVD_BLOCK", "7");
  set("GCOMPUTE_SVD_GRAM_PRODUCTS", "65537");
  set("GCOMPUTE_SVD_INNER_SWEEPS", "31");
  set("GCOMPUTE_SVD_INNER_SOLVER", "3");
  set("GCOMPUTE_SVD_INNER_DOUBLE", "2");
  set("GCOMPUTE_SVD_SORT", "-1");
  set("GCOMPUTE_SVD_SETTLE_CHECK", "2");
  set("GCOMPUTE_SVD_PROFILE", "5");
  set("GCOMPUTE_APSP_DEPTH", "3");
  expect_knobs(tuning_from_environment(), kDefaults);
  set("GCOMPUTE_SVD_BLOCK", "65");
  set("GCOMPUTE_SVD_INNER_SWEEPS", "0");
  set("GCOMPUTE_APSP_DEPTH", "2 ");  // only exactly "1" or "2"
  const Tuning t = tuning_from_environment();
  EXPECT_EQ(t.svd.block, 0);
  EXPECT_EQ(t.svd.inner_sweeps, 1);
  EXPECT_EQ(t.apsp.depth, 0);
}

TEST_F(TuningFromEnvironment, TextReadsAsAtoiReadsIt) {
  // atoi: "abc" is 0 (in range for the 0/1 switches), "16x" is 16.
  set("GCOMPUTE_SVD_SORT", "abc");
  set("GCOMPUTE_SVD_BLOCK", "16x");
  const Tuning t = tuning_from_environment();
  EXPECT_FALSE(t.svd.sort_columns);
  EXPECT_EQ(t.svd.block, 16);
}

TEST(TuningValidation, NamesTheField) {
  EXPECT_TRUE(validate(SvdTuning{}).ok());
  for (const int block : {-8, 4, 12, 72}) {
    const absl::Status s = validate(SvdTuning{.block = block});
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << block;
    EXPECT_NE(s.message().find("block"), absl::string_view::npos) << s;
  }
  for (const int products : {-1, 65537}) {
    const absl::Status s = validate(SvdTuning{.gram_products = products});
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << products;
    EXPECT_NE(s.message().find("gram_products"), absl::string_view::npos) << s;
  }
  EXPECT_TRUE(validate(SvdTuning{.gram_products = 1}).ok());
  for (const int sweeps : {0, 31}) {
    const absl::Status s = validate(SvdTuning{.inner_sweeps = sweeps});
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << sweeps;
    EXPECT_NE(s.message().find("inner_sweeps"), absl::string_view::npos) << s;
  }
  const absl::Status bad_solver =
      validate(SvdTuning{.inner_solver = static_cast<SvdTuning::InnerSolver>(3)});
  EXPECT_EQ(bad_solver.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad_solver.message().find("inner_solver"), absl::string_view::npos) << bad_solver;
  for (const int depth : {0, 1, 2}) EXPECT_TRUE(validate(ApspTuning{.depth = depth}).ok());
  for (const int depth : {-1, 3}) {
    const absl::Status s = validate(ApspTuning{.depth = depth});
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << depth;
    EXPECT_NE(s.message().find("depth"), absl::string_view::npos) << s;
  }
}

}  // namespace
}  // namespace gcompute::kernels::cuda
