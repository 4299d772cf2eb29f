// SPDX-License-Identifier: Apache-2.0
// The hand-coded chunk messages of the matrix streams (proto/wire/chunk_codec) against
// protobuf's own coding of the same messages: the bytes sent are protobuf's, and whatever
// protobuf may send (fields in another order, zero offsets left out, unknown fields, messages
// cut into slices anywhere) is read back as protobuf reads it.
#include "wire/chunk_codec.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gcompute/v1/service.pb.h"
#include "support/random.hpp"

namespace gcompute::wire {
namespace {

namespace pb = ::gcompute::v1;

std::string flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& s : slices)
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

/// `bytes` as a buffer of slices cut at `cuts` (ascending offsets).
grpc::ByteBuffer in_slices(const std::string& bytes, const std::vector<std::size_t>& cuts) {
  std::vector<grpc::Slice> slices;
  std::size_t from = 0;
  for (std::size_t cut : cuts) {
    slices.emplace_back(bytes.data() + from, cut - from);
    from = cut;
  }
  slices.emplace_back(bytes.data() + from, bytes.size() - from);
  return grpc::ByteBuffer(slices.data(), slices.size());
}

std::string protobuf_chunk(std::uint64_t offset, const std::string& data) {
  pb::UploadMatrixRequest m;
  m.mutable_chunk()->set_offset(offset);
  m.mutable_chunk()->set_data(data);
  return m.SerializeAsString();
}

std::string joined(const ChunkView& view) {
  std::string out;
  for (std::span<const char> p : view.pieces) out.append(p.data(), p.size());
  return out;
}

TEST(ChunkCodec, EncodesTheBytesProtobufWrites) {
  GC_SEEDED_RNG(rng);
  for (std::uint64_t offset : {0ull, 1ull, 127ull, 128ull, 16383ull, 16384ull, 1ull << 40}) {
    for (std::size_t size : {0u, 1u, 127u, 128u, 70000u}) {
      SCOPED_TRACE(::testing::Message() << "offset " << offset << ", " << size << " bytes");
      const auto raw = gcompute::testing::random_bytes(rng, size);
      const std::string data(raw.begin(), raw.end());
      int released = 0;
      {
        const grpc::ByteBuffer sent =
            encode_chunk(offset, data.data(), data.size(), [&released] { ++released; });
        EXPECT_EQ(flatten(sent), protobuf_chunk(offset, data));
        // The same bytes parse as either stream's message.
        pb::DownloadMatrixResponse down;
        ASSERT_TRUE(down.ParseFromString(flatten(sent)));
        EXPECT_EQ(down.chunk().offset(), offset);
        EXPECT_EQ(down.chunk().data(), data);
        EXPECT_EQ(flatten(encode_chunk_copy(offset, data.data(), data.size())), flatten(sent));
      }
      EXPECT_EQ(released, 1) << "the data slice is let go exactly once";
    }
  }
}

TEST(ChunkCodec, KeepsTheDataUntilTheLastCopyOfTheMessageIsGone) {
  std::string data(1000, 'x');
  int released = 0;
  auto sent = std::make_unique<grpc::ByteBuffer>(
      encode_chunk(5, data.data(), data.size(), [&released] { ++released; }));
  const grpc::ByteBuffer copy = *sent;  // gRPC holds messages the same way
  sent.reset();
  EXPECT_EQ(released, 0);
  EXPECT_EQ(flatten(copy), protobuf_chunk(5, data));
}

TEST(ChunkCodec, ReadsProtobufChunksCutIntoSlicesAnywhere) {
  GC_SEEDED_RNG(rng);
  for (std::uint64_t offset : {0ull, 300ull, 1ull << 33}) {
    const auto raw = gcompute::testing::random_bytes(rng, 5000);
    const std::string data(raw.begin(), raw.end());
    const std::string bytes = protobuf_chunk(offset, data);
    // One cut at every byte of the prefix (varints split across slices), then random cuts.
    std::vector<std::vector<std::size_t>> cut_sets = {{}};
    for (std::size_t at = 1; at < 16; ++at) cut_sets.push_back({at});
    for (int k = 0; k < 20; ++k) {
      std::vector<std::size_t> cuts;
      for (std::size_t at = 1 + rng.engine()() % 700; at < bytes.size();
           at += 1 + rng.engine()() % 700) {
        cuts.push_back(at);
      }
      cut_sets.push_back(cuts);
    }
    for (const auto& cuts : cut_sets) {
      SCOPED_TRACE(::testing::Message() << "offset " << offset << ", " << cuts.size() << " cuts");
      grpc::ByteBuffer received = in_slices(bytes, cuts);
      pb::UploadMatrixRequest whole;
      auto part = decode_part(received, whole);
      ASSERT_TRUE(part.ok()) << part.status();
      ASSERT_TRUE(part->has_value()) << "a chunk as protobuf writes it is read in place";
      EXPECT_EQ((*part)->offset, offset);
      EXPECT_EQ((*part)->size, data.size());
      EXPECT_EQ(joined(**part), data);
    }
  }
}

TEST(ChunkCodec, OtherLayoutsAreParsedWholeAsProtobufWould) {
  // Hand-made messages protobuf accepts but does not write itself: data before the offset,
  // a repeated offset (the last wins), a field unknown to this version, an empty chunk.
  const std::string data = "abcdef";
  auto data_field = [&] { return std::string("\x12\x06", 2) + data; };
  const std::vector<std::pair<std::string, std::uint64_t>> chunks = {
      {data_field() + std::string("\x08\x07", 2), 7},
      {std::string("\x08\x03", 2) + data_field() + std::string("\x08\x09", 2), 9},
      {std::string("\x08\x04", 2) + data_field() + std::string("\x18\x01", 2), 4},
  };
  for (const auto& [chunk, want_offset] : chunks) {
    const std::string bytes = std::string("\x12", 1) + static_cast<char>(chunk.size()) + chunk;
    grpc::ByteBuffer received = in_slices(bytes, {});
    pb::UploadMatrixRequest whole;
    auto part = decode_part(received, whole);
    ASSERT_TRUE(part.ok()) << part.status();
    EXPECT_FALSE(part->has_value());
    ASSERT_TRUE(whole.has_chunk());
    EXPECT_EQ(whole.chunk().offset(), want_offset);
    EXPECT_EQ(whole.chunk().data(), data);
  }
  // A field after the chunk, and the header: parsed whole too.
  pb::UploadMatrixRequest header;
  header.mutable_header()->mutable_shape()->set_rows(3);
  for (const std::string& bytes : {protobuf_chunk(1, data) + std::string("\x20\x01", 2),
                                   header.SerializeAsString(), std::string("\x12\x00", 2)}) {
    grpc::ByteBuffer received = in_slices(bytes, {});
    pb::UploadMatrixRequest whole;
    auto part = decode_part(received, whole);
    ASSERT_TRUE(part.ok()) << part.status();
    EXPECT_FALSE(part->has_value());
  }
  grpc::ByteBuffer received = in_slices(header.SerializeAsString(), {1});
  pb::UploadMatrixRequest whole;
  ASSERT_TRUE(decode_part(received, whole).ok());
  EXPECT_EQ(whole.header().shape().rows(), 3);
}

TEST(ChunkCodec, BytesThatAreNoMessageAreInvalidArgument) {
  const std::string good = protobuf_chunk(12, "hello");
  for (const std::string& bytes :
       {good.substr(0, good.size() - 1),          // cut short inside the data
        std::string("\x12\x7f\x08", 3),           // a chunk longer than the message
        std::string("\xff\xff\xff\xff\xff", 5)})  // no valid tag
  {
    grpc::ByteBuffer received = in_slices(bytes, {});
    pb::UploadMatrixRequest whole;
    auto part = decode_part(received, whole);
    ASSERT_FALSE(part.ok());
    EXPECT_EQ(part.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(part.status().message()),
                ::testing::HasSubstr("gcompute.v1.UploadMatrixRequest"));
  }
}

}  // namespace
}  // namespace gcompute::wire
