// SPDX-License-Identifier: Apache-2.0
// The .npy reader and writer: round trips, the three header versions, refusals.
#include "cli/npy.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace gcompute::cli {
namespace {

using client::DType;
using ::testing::HasSubstr;

std::string header_bytes(int major, const std::string& dict, std::size_t pad_to = 64) {
  std::string h = dict;
  const std::size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + h.size() + 1) % pad_to != 0) h.push_back(' ');
  h.push_back('\n');
  std::string out("\x93NUMPY", 6);
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  const std::size_t n = h.size();
  out.push_back(static_cast<char>(n & 0xff));
  out.push_back(static_cast<char>((n >> 8) & 0xff));
  if (major != 1) {
    out.push_back(static_cast<char>((n >> 16) & 0xff));
    out.push_back(static_cast<char>((n >> 24) & 0xff));
  }
  return out + h;
}

/// A header dict as numpy.save writes it.
std::string npy_dict(const std::string& descr, const std::string& shape,
                     const std::string& fortran_order = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran_order + ", 'shape': " + shape +
         ", }";
}

std::string floats(const std::vector<float>& v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

TEST(Npy, RoundTripsEveryDtypeAndRank) {
  std::mt19937 rng(7);
  for (DType dtype : {DType::kF32, DType::kF64, DType::kI32}) {
    for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{
             {1}, {13}, {1, 1}, {3, 7}, {0, 5}, {2, 3, 5}, {4, 1, 1}}) {
      NpyArray a;
      a.shape = shape;
      a.dtype = dtype;
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      a.data.resize(static_cast<std::size_t>(n) * client::dtype_size(dtype));
      for (char& c : a.data) c = static_cast<char>(rng());
      absl::StatusOr<std::string> bytes = serialize_npy(a);
      ASSERT_TRUE(bytes.ok()) << bytes.status();
      EXPECT_EQ(bytes->find('\n'), (bytes->size() - a.data.size()) - 1)
          << "header must end in a newline right before the data";
      EXPECT_EQ((bytes->size() - a.data.size()) % 64, 0u) << "header padded to 64 bytes";
      absl::StatusOr<NpyArray> b = parse_npy(*bytes, "x.npy");
      ASSERT_TRUE(b.ok()) << b.status();
      EXPECT_EQ(b->shape, a.shape);
      EXPECT_EQ(b->dtype, a.dtype);
      EXPECT_EQ(b->data, a.data);
    }
  }
}

TEST(Npy, ReadsVersions1To3AndQuoteStyles) {
  const std::string data = floats({1, 2, 3, 4, 5, 6});
  for (int major : {1, 2, 3}) {
    for (const std::string& dict :
         {npy_dict("<f4", "(2, 3)"),
          std::string("{\"shape\":(2,3),\"fortran_order\":False,\"descr\":\"<f4\"}"),
          std::string("{'descr':'<f4','fortran_order':False,'shape':(2L, 3L)}")}) {
      absl::StatusOr<NpyArray> a = parse_npy(header_bytes(major, dict) + data, "v.npy");
      ASSERT_TRUE(a.ok()) << "version " << major << " " << dict << ": " << a.status();
      EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
      EXPECT_EQ(a->dtype, DType::kF32);
      EXPECT_EQ(a->data, data);
    }
  }
}

TEST(Npy, WritesVersion1ForOrdinaryShapes) {
  NpyArray a{{2, 2}, DType::kF64, std::string(32, '\0')};
  absl::StatusOr<std::string> bytes = serialize_npy(a);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ((*bytes)[6], 1);
  EXPECT_EQ((*bytes)[7], 0);
  EXPECT_NE(bytes->find("'descr': '<f8'"), std::string::npos);
  EXPECT_NE(bytes->find("'shape': (2, 2)"), std::string::npos);
}

TEST(Npy, OneDimensionalShapeHasTrailingComma) {
  NpyArray a{{5}, DType::kI32, std::string(20, '\0')};
  absl::StatusOr<std::string> bytes = serialize_npy(a);
  ASSERT_TRUE(bytes.ok());
  EXPECT_NE(bytes->find("'shape': (5,)"), std::string::npos);
}

struct Refusal {
  std::string dict;
  std::size_t data_bytes;
  std::string expected;
};

TEST(Npy, RefusesWhatItCannotRead) {
  const std::vector<Refusal> cases = {
      {npy_dict(">f4", "(2,)"), 8, "big-endian"},
      {npy_dict("<f4", "(2, 2)", "True"), 16, "fortran_order is True"},
      {npy_dict("<i8", "(2,)"), 16, "dtype '<i8' is not supported"},
      {npy_dict("<c8", "(2,)"), 16, "dtype '<c8'"},
      {npy_dict("|b1", "(2,)"), 2, "dtype '|b1'"},
      {npy_dict("<f4", "()"), 4, "0-D array"},
      {npy_dict("<f4", "(1, 1, 1, 1)"), 4, "4-D array"},
      {npy_dict("<f4", "(2, 3)"), 20, "needs 24 data bytes but the file has 20"},
      {npy_dict("<f4", "(2, 3)"), 28, "needs 24 data bytes but the file has 28"},
      {"{'descr': '<f4', 'shape': (2,), }", 8, "lacks"},
      {npy_dict("<f4", "(-2,)"), 0, "non-negative"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8, "unexpected key 'x'"},
  };
  for (const Refusal& c : cases) {
    absl::StatusOr<NpyArray> a =
        parse_npy(header_bytes(1, c.dict) + std::string(c.data_bytes, '\0'), "bad.npy");
    ASSERT_FALSE(a.ok()) << c.dict;
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(a.status().message()), HasSubstr("bad.npy")) << c.dict;
    EXPECT_THAT(std::string(a.status().message()), HasSubstr(c.expected)) << c.dict;
  }
}

TEST(Npy, RefusesBadMagicVersionAndTruncation) {
  absl::StatusOr<NpyArray> a = parse_npy("PK\x03\x04 this is a zip", "z.npz");
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(std::string(a.status().message()), HasSubstr("not a .npy file"));

  std::string v4 = header_bytes(1, npy_dict("<f4", "(1,)"));
  v4[6] = 4;
  a = parse_npy(v4 + std::string(4, '\0'), "v4.npy");
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(std::string(a.status().message()), HasSubstr("format version 4.0"));

  const std::string good = header_bytes(1, npy_dict("<f4", "(1,)"));
  a = parse_npy(good.substr(0, 30), "cut.npy");
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(std::string(a.status().message()), HasSubstr("truncated"));
}

TEST(Npy, FilesRoundTripAndErrorsNamePaths) {
  const std::string path = ::testing::TempDir() + "/gc_npy_test.npy";
  NpyArray a{{2, 2}, DType::kF32, floats({1.5f, -2, 3, 4})};
  ASSERT_TRUE(write_npy(path, a).ok());
  absl::StatusOr<NpyArray> b = read_npy(path);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->data, a.data);
  absl::StatusOr<NpyArray> missing = read_npy(path + ".missing");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr(path + ".missing"));
}

TEST(Npy, HostMatrixShapes) {
  client::HostMatrix m = to_host_matrix(NpyArray{{7}, DType::kF32, std::string(28, '\0')});
  EXPECT_EQ(m.batch, 1);
  EXPECT_EQ(m.rows, 1);
  EXPECT_EQ(m.cols, 7);
  m = to_host_matrix(NpyArray{{2, 3, 4}, DType::kF64, std::string(192, '\0')});
  EXPECT_EQ(m.batch, 2);
  EXPECT_EQ(m.rows, 3);
  EXPECT_EQ(m.cols, 4);
  EXPECT_EQ(m.expected_bytes(), m.data.size());
  EXPECT_EQ(to_npy(m).shape, (std::vector<int64_t>{2, 3, 4}));
  client::HostMatrix row{1, 1, 5, DType::kI32, std::string(20, '\0')};
  EXPECT_EQ(to_npy(row, true).shape, (std::vector<int64_t>{5}));
  EXPECT_EQ(to_npy(row, false).shape, (std::vector<int64_t>{1, 5}));
}

}  // namespace
}  // namespace gcompute::cli
