// SPDX-License-Identifier: Apache-2.0
// A small binary encoding of the graph domain types for the write-ahead log and snapshots
// (graph_wal.hpp), and CRC-32C. No protobuf: the store stays proto-free.
//
// Integers are LEB128 varints (ids are small and dense), doubles are their 8 IEEE-754 bytes
// little-endian (bit-exact round trip, NaN payloads included), strings and id lists are a
// varint count followed by the elements. The decoder checks every length against what is
// left, so a corrupt input yields an error, never a huge allocation or an out-of-bounds read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "store/graphs/graph_model.hpp"

namespace gcompute::server::codec {

/// CRC-32C (Castagnoli, as iSCSI/ext4/LevelDB use), continuing from `crc` (0 to start).
std::uint32_t crc32c(std::uint32_t crc, const void* data, std::size_t size);

/// Appends encoded values to a string.
class Writer {
 public:
  void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32_fixed(std::uint32_t v);
  void u64_fixed(std::uint64_t v);
  void varint(std::uint64_t v);
  void f64(double v);
  void bytes(std::string_view s);  ///< varint length + bytes
  void ids(const std::vector<std::uint64_t>& ids);

  std::string& out() { return out_; }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

/// Reads encoded values from a byte range; every call fails cleanly past the end.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  absl::Status u8(std::uint8_t& v);
  absl::Status u32_fixed(std::uint32_t& v);
  absl::Status u64_fixed(std::uint64_t& v);
  absl::Status varint(std::uint64_t& v);
  absl::Status f64(double& v);
  absl::Status bytes(std::string& s);
  absl::Status ids(std::vector<std::uint64_t>& ids);
  std::size_t left() const { return in_.size() - pos_; }
  std::size_t pos() const { return pos_; }

 private:
  absl::Status need(std::size_t n, const char* what) const;
  std::string_view in_;
  std::size_t pos_ = 0;
};

void encode_edit(Writer& w, const Edit& edit);
absl::StatusOr<Edit> decode_edit(Reader& r);

void encode_edits(Writer& w, std::span<const Edit> edits);
absl::StatusOr<std::vector<Edit>> decode_edits(Reader& r);

/// tails, heads, weight (the id is not written: the caller knows or does not need it).
void encode_edge_body(Writer& w, const Hyperedge& e);
absl::Status decode_edge_body(Reader& r, Hyperedge& e);

/// A whole graph: id, version, counters, vertices (delta-coded), edges with ids.
void encode_image(Writer& w, const GraphImage& image);
absl::StatusOr<GraphImage> decode_image(Reader& r);

}  // namespace gcompute::server::codec
