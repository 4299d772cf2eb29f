// SPDX-License-Identifier: Apache-2.0
// Element type conversions of the CLI (f32 <-> f64, to int32 APSP weights).
#include "cli/convert.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

namespace gcompute::cli {
namespace {

using client::DType;
using client::HostMatrix;

template <typename T>
HostMatrix make(DType dtype, std::vector<T> v) {
  HostMatrix m{1, 1, static_cast<int64_t>(v.size()), dtype, std::string(v.size() * sizeof(T), 0)};
  std::memcpy(m.data.data(), v.data(), m.data.size());
  return m;
}

template <typename T>
std::vector<T> values(const HostMatrix& m) {
  std::vector<T> v(m.data.size() / sizeof(T));
  std::memcpy(v.data(), m.data.data(), m.data.size());
  return v;
}

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(Convert, WidensAndNarrowsFloats) {
  absl::StatusOr<HostMatrix> d =
      convert_dtype(make<float>(DType::kF32, {1.5f, -0.1f, kInf}), DType::kF64, "a");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->dtype, DType::kF64);
  EXPECT_THAT(values<double>(*d), ::testing::ElementsAre(1.5, static_cast<double>(-0.1f),
                                                         std::numeric_limits<double>::infinity()));
  absl::StatusOr<HostMatrix> f = convert_dtype(*d, DType::kF32, "a");
  ASSERT_TRUE(f.ok());
  EXPECT_THAT(values<float>(*f), ::testing::ElementsAre(1.5f, -0.1f, kInf));
}

TEST(Convert, ToInt32MapsInfinityToNoEdge) {
  absl::StatusOr<HostMatrix> i =
      convert_dtype(make<float>(DType::kF32, {3, -7, kInf, 0}), DType::kI32, "w.npy");
  ASSERT_TRUE(i.ok()) << i.status();
  EXPECT_THAT(values<int32_t>(*i), ::testing::ElementsAre(3, -7, 2147483647, 0));
  absl::StatusOr<HostMatrix> back = convert_dtype(*i, DType::kF32, "w.npy");
  ASSERT_TRUE(back.ok());
  EXPECT_THAT(values<float>(*back), ::testing::ElementsAre(3, -7, kInf, 0));
}

TEST(Convert, RefusesNonIntegersAndForeignTypes) {
  for (double bad : {0.5, -std::numeric_limits<double>::infinity(), 3e9,
                     std::numeric_limits<double>::quiet_NaN()}) {
    absl::StatusOr<HostMatrix> i =
        convert_dtype(make<double>(DType::kF64, {1, bad}), DType::kI32, "w.npy");
    ASSERT_FALSE(i.ok()) << bad;
    EXPECT_THAT(std::string(i.status().message()), ::testing::HasSubstr("w.npy: element 1"));
  }
  HostMatrix half{1, 1, 1, DType::kF16, std::string(2, 0)};
  EXPECT_FALSE(convert_dtype(half, DType::kF32, "h").ok());
}

}  // namespace
}  // namespace gcompute::cli
