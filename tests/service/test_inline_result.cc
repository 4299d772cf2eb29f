// SPDX-License-Identifier: Apache-2.0
// The raw Transpose and MatMul responses (server/api/inline_result): whatever the result, the
// bytes parse as the same message with protobuf, and an inline result goes out without a copy
// exactly from kSplicedResultMinBytes on.
#include "api/inline_result.hpp"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gcompute/v1/service.pb.h"

namespace gcompute::server {
namespace {

namespace pb = ::gcompute::v1;

struct Encoded {
  std::string bytes;
  bool data_not_copied = false;  ///< a slice starts at the result's own bytes
};

/// Encodes `response` (a copy: encoding moves the result out) and notes where its slices start.
template <typename Response>
Encoded encode(Response response, const pb::MatrixResult& (Response::*result)() const) {
  const char* const data = (response.*result)().inline_().data().data();
  const grpc::ByteBuffer buffer = encode_with_result(response);
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  Encoded out;
  for (const grpc::Slice& s : slices) {
    out.bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
    out.data_not_copied |= s.size() > 0 && reinterpret_cast<const char*>(s.begin()) == data;
  }
  return out;
}

pb::ExecutionStats some_stats() {
  pb::ExecutionStats s;
  s.set_compute_seconds(0.125);
  s.set_total_seconds(0.5);
  s.set_device("cpu");
  return s;
}

pb::Matrix matrix_of(std::size_t bytes) {
  pb::Matrix m;
  m.set_rows(static_cast<std::int64_t>(bytes / 4));
  m.set_cols(1);
  m.set_dtype(pb::DTYPE_F32);
  std::string data(bytes, '\0');
  for (std::size_t i = 0; i < bytes; ++i) data[i] = static_cast<char>(i * 131 + 7);
  m.set_data(std::move(data));
  return m;
}

TEST(InlineResult, EveryResultParsesBackAndOnlyLargeInlineOnesAreNotCopied) {
  for (std::size_t bytes : {std::size_t{0}, std::size_t{16} << 10, kSplicedResultMinBytes - 4,
                            kSplicedResultMinBytes, kSplicedResultMinBytes + 12}) {
    SCOPED_TRACE(bytes);
    pb::TransposeResponse t;
    *t.mutable_at()->mutable_inline_() = matrix_of(bytes);
    *t.mutable_stats() = some_stats();
    const Encoded et = encode(t, &pb::TransposeResponse::at);
    pb::TransposeResponse t_back;
    ASSERT_TRUE(t_back.ParseFromString(et.bytes));
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(t_back, t));
    EXPECT_EQ(et.bytes.size(), t.ByteSizeLong());
    EXPECT_EQ(et.data_not_copied, bytes >= kSplicedResultMinBytes);

    pb::MatMulResponse m;
    *m.mutable_c()->mutable_inline_() = matrix_of(bytes);
    const Encoded em = encode(m, &pb::MatMulResponse::c);
    pb::MatMulResponse m_back;
    ASSERT_TRUE(m_back.ParseFromString(em.bytes));
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(m_back, m));
    EXPECT_EQ(em.data_not_copied, bytes >= kSplicedResultMinBytes);
  }
}

TEST(InlineResult, StoredOrMissingResultsAreCodedAsUsual) {
  pb::TransposeResponse stored;
  stored.mutable_at()->mutable_stored()->mutable_ref()->set_id("m-0123");
  *stored.mutable_stats() = some_stats();
  pb::TransposeResponse none;
  *none.mutable_stats() = some_stats();
  for (const pb::TransposeResponse& r : {stored, none}) {
    pb::TransposeResponse copy = r;
    const grpc::ByteBuffer buffer = encode_with_result(copy);
    std::vector<grpc::Slice> slices;
    ASSERT_TRUE(buffer.Dump(&slices).ok());
    std::string bytes;
    for (const grpc::Slice& s : slices)
      bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
    EXPECT_EQ(bytes, r.SerializeAsString());
  }
}

}  // namespace
}  // namespace gcompute::server
