// SPDX-License-Identifier: Apache-2.0
// Responses whose result bytes go out as a slice of their own (proto/wire/spliced_bytes) against
// protobuf's own reading of them: the same message comes back, for data lengths whose varints
// take one to three bytes (and none), for field numbers whose tags take more than one byte, and
// without the data being copied.
#include "wire/spliced_bytes.hpp"

#include <google/protobuf/unknown_field_set.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gcompute/v1/service.pb.h"
#include "support/random.hpp"

namespace gcompute::wire {
namespace {

namespace pb = ::gcompute::v1;

std::vector<grpc::Slice> slices_of(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  return slices;
}

std::string flatten(const grpc::ByteBuffer& buffer) {
  std::string out;
  for (const grpc::Slice& s : slices_of(buffer))
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

/// A TransposeResponse with every field set and `data_bytes` of random result data.
pb::TransposeResponse full_response(testing::Rng& rng, std::size_t data_bytes) {
  pb::TransposeResponse r;
  pb::Matrix* m = r.mutable_at()->mutable_inline_();
  m->set_rows(7);
  m->set_cols(300);
  m->set_dtype(pb::DTYPE_F64);
  m->set_batch(3);
  std::string data(data_bytes, '\0');
  for (char& c : data) c = static_cast<char>(rng.engine()() & 0xff);
  m->set_data(data);
  pb::ExecutionStats* s = r.mutable_stats();
  s->set_queue_seconds(1e-6);
  s->set_compute_seconds(0.25);
  s->set_total_seconds(0.5);
  s->set_device("cuda:0");
  return r;
}

/// The response coded as the server codes it: the result's field path, then its data.
grpc::ByteBuffer spliced(const pb::TransposeResponse& full) {
  pb::TransposeResponse rest = full;
  rest.clear_at();
  pb::Matrix matrix_fields = full.at().inline_();
  matrix_fields.clear_data();
  return encode_with_spliced_bytes(
      {{0, rest.SerializeAsString()},
       {pb::TransposeResponse::kAtFieldNumber, std::string()},
       {pb::MatrixResult::kInlineFieldNumber, matrix_fields.SerializeAsString()}},
      pb::Matrix::kDataFieldNumber, full.at().inline_().data());
}

TEST(SplicedBytes, ProtobufReadsTheSameMessageForEveryLengthClass) {
  GC_SEEDED_RNG(rng);
  // Data lengths whose varints take 1, 2 and 3 bytes (and the edges between them); the
  // submessage lengths around them cross the same edges. Empty data is left out, as protobuf
  // leaves it out: one slice, and no data field.
  for (std::size_t bytes : {0u, 1u, 100u, 127u, 128u, 16383u, 16384u, 16384u * 4 + 3, 300000u}) {
    SCOPED_TRACE(bytes);
    const pb::TransposeResponse full = full_response(rng, bytes);
    const grpc::ByteBuffer buffer = spliced(full);
    EXPECT_EQ(buffer.Length(), full.ByteSizeLong());
    pb::TransposeResponse parsed;
    ASSERT_TRUE(parsed.ParseFromString(flatten(buffer)));
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(parsed, full));
    EXPECT_EQ(slices_of(buffer).size(), bytes == 0 ? 1u : 2u);
  }
}

TEST(SplicedBytes, TheDataIsNotCopied) {
  std::string data(1 << 20, 'x');
  const char* const where = data.data();
  const grpc::ByteBuffer buffer =
      encode_with_spliced_bytes({{0, std::string()}, {1, std::string()}}, 4, std::move(data));
  const std::vector<grpc::Slice> slices = slices_of(buffer);
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(reinterpret_cast<const char*>(slices[1].begin()), where);
  EXPECT_EQ(slices[1].size(), std::size_t{1} << 20);
}

TEST(SplicedBytes, FieldNumbersWithLongTagsNestAsWritten) {
  // No message of the API has such fields: read the bytes as unknown fields instead.
  const grpc::ByteBuffer buffer = encode_with_spliced_bytes(
      {{0, std::string("\x08\x05", 2)}, {20, std::string()}, {3000, std::string("\x10\x07", 2)}},
      100000, std::string("payload"));
  google::protobuf::UnknownFieldSet outer;
  ASSERT_TRUE(outer.ParseFromString(flatten(buffer)));
  ASSERT_EQ(outer.field_count(), 2);
  EXPECT_EQ(outer.field(0).number(), 1);
  EXPECT_EQ(outer.field(0).varint(), 5u);
  ASSERT_EQ(outer.field(1).number(), 20);
  google::protobuf::UnknownFieldSet middle;
  ASSERT_TRUE(middle.ParseFromString(outer.field(1).length_delimited()));
  ASSERT_EQ(middle.field_count(), 1);
  ASSERT_EQ(middle.field(0).number(), 3000);
  google::protobuf::UnknownFieldSet inner;
  ASSERT_TRUE(inner.ParseFromString(middle.field(0).length_delimited()));
  ASSERT_EQ(inner.field_count(), 2);
  EXPECT_EQ(inner.field(0).number(), 2);
  EXPECT_EQ(inner.field(0).varint(), 7u);
  EXPECT_EQ(inner.field(1).number(), 100000);
  EXPECT_EQ(inner.field(1).length_delimited(), "payload");
}

}  // namespace
}  // namespace gcompute::wire
