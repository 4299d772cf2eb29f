// SPDX-License-Identifier: Apache-2.0
// The input of fuzz_graph_log: the files of a graph data directory (graph_wal.hpp) packed into
// one byte string, so that the fuzzer mutates real snapshots and log segments.
//   u8 flags (bit 0: a snapshot is present; bits 1-2: number of segments - 1; bit 3: repair
//            the checksums, so that mutations get past them to the decoders)
//   [u32 length | snapshot bytes]  [u32 length | segment bytes] per segment but the last
//   the last segment: the rest
// Lengths past the end are cut to what is left. Files are named as the server names them,
// from their contents: snap-<the LSN in its header>.snap, wal-<its first record's LSN>.log.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/graphs/graph_codec.hpp"

namespace gcompute::fuzz {

struct DataDir {
  std::optional<std::string> snapshot;
  std::vector<std::string> segments;  ///< 1 to 4
  bool repair_checksums = true;
};

inline void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

inline std::uint64_t le_at(std::string_view s, std::size_t off, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= std::uint64_t{static_cast<unsigned char>(s[off + i])} << (8 * i);
  return v;
}

inline std::string pack(const DataDir& dir) {
  std::string out(1, static_cast<char>((dir.snapshot ? 1 : 0) | ((dir.segments.size() - 1) << 1) |
                                       (dir.repair_checksums ? 8 : 0)));
  if (dir.snapshot) {
    put_u32(out, static_cast<std::uint32_t>(dir.snapshot->size()));
    out += *dir.snapshot;
  }
  for (std::size_t i = 0; i + 1 < dir.segments.size(); ++i) {
    put_u32(out, static_cast<std::uint32_t>(dir.segments[i].size()));
    out += dir.segments[i];
  }
  out += dir.segments.back();
  return out;
}

inline DataDir unpack(std::string_view in) {
  DataDir dir;
  if (in.empty()) {
    dir.segments.emplace_back();
    return dir;
  }
  const auto flags = static_cast<unsigned char>(in[0]);
  in.remove_prefix(1);
  dir.repair_checksums = (flags & 8) != 0;
  auto take = [&in]() {
    std::size_t len = in.size() >= 4 ? static_cast<std::size_t>(le_at(in, 0, 4)) : 0;
    in.remove_prefix(std::min<std::size_t>(4, in.size()));
    len = std::min(len, in.size());
    std::string part(in.substr(0, len));
    in.remove_prefix(len);
    return part;
  };
  if (flags & 1) dir.snapshot = take();
  const int segments = 1 + ((flags >> 1) & 3);
  for (int i = 0; i + 1 < segments; ++i) dir.segments.push_back(take());
  dir.segments.emplace_back(in);
  return dir;
}

inline void store_u32(std::string& s, std::size_t off, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) s[off + i] = static_cast<char>(v >> (8 * i));
}

/// Rewrites the CRC-32C of every whole frame (u32 length | u32 crc | payload) from `off` on,
/// up to the first frame that does not fit or whose length is `end_marker`.
inline std::size_t repair_frames(std::string& s, std::size_t off, std::uint32_t end_marker) {
  while (s.size() - off >= 8) {
    const auto len = static_cast<std::uint32_t>(le_at(s, off, 4));
    if (len == end_marker || s.size() - off - 8 < len) break;
    store_u32(s, off + 4, server::codec::crc32c(0, s.data() + off + 8, len));
    off += 8 + len;
  }
  return off;
}

/// Log segment: every record's checksum.
inline void repair_segment(std::string& segment) {
  repair_frames(segment, 0, 0);
}

/// Snapshot: every graph record's checksum, and the trailer's (header and count).
inline void repair_snapshot(std::string& snap) {
  if (snap.size() < 16) return;
  const std::size_t end = repair_frames(snap, 16, 0xFFFFFFFFu);
  if (snap.size() - end == 16 && le_at(snap, end, 4) == 0xFFFFFFFFu) {
    std::string covered = snap.substr(0, 16) + snap.substr(end + 4, 8);
    store_u32(snap, end + 12, server::codec::crc32c(0, covered.data(), covered.size()));
  }
}

/// "snap-<20 digits>.snap" for a snapshot: the LSN of its header, 1 if it has none.
inline std::uint64_t snapshot_lsn(const std::string& snapshot) {
  return snapshot.size() >= 16 ? le_at(snapshot, 8, 8) : 1;
}

/// The LSN of a segment's first record (u32 length, u32 crc, u8 type, u64 LSN), or `fallback`.
inline std::uint64_t segment_lsn(const std::string& segment, std::uint64_t fallback) {
  return segment.size() >= 17 ? le_at(segment, 9, 8) : fallback;
}

}  // namespace gcompute::fuzz
