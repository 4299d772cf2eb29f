// SPDX-License-Identifier: Apache-2.0
#include "store/graphs/graph_codec.hpp"

#include <array>
#include <bit>
#include <cstring>
#include <type_traits>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "store/graphs/byte_codec.hpp"

namespace gcompute::server::codec {
namespace {

constexpr std::array<std::uint32_t, 256> make_crc_table() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<std::uint32_t, 256> kCrcTable = make_crc_table();

// Edit tags on disk. Never renumber: logs outlive releases.
enum Tag : std::uint8_t {
  kAddVertex = 1,
  kDeleteVertex = 2,
  kAddEdge = 3,
  kDeleteEdge = 4,
  kSetWeight = 5,
  kDecomposeVertex = 6,
};

/// Calls fields(tag, field...) with an edit's tag and its fields in their order on disk: the
/// one list that encode_edit and decode_edit both follow.
template <typename E, typename Fields>
auto with_fields(E& e, Fields&& fields) {
  using T = std::remove_const_t<E>;
  if constexpr (std::is_same_v<T, AddVertex>) {
    return fields(kAddVertex);
  } else if constexpr (std::is_same_v<T, DeleteVertex>) {
    return fields(kDeleteVertex, e.vertex_id);
  } else if constexpr (std::is_same_v<T, AddEdge>) {
    return fields(kAddEdge, e.tails, e.heads, e.weight);
  } else if constexpr (std::is_same_v<T, DeleteEdge>) {
    return fields(kDeleteEdge, e.edge_id);
  } else if constexpr (std::is_same_v<T, SetWeight>) {
    return fields(kSetWeight, e.edge_id, e.weight);
  } else {
    static_assert(std::is_same_v<T, DecomposeVertex>);
    return fields(kDecomposeVertex, e.vertex_id, e.move_edge_ids, e.joining_weight);
  }
}

// How each type of field is written and read.
void write_field(Writer& w, std::uint64_t v) {
  w.varint(v);
}
void write_field(Writer& w, const std::vector<std::uint64_t>& ids) {
  w.ids(ids);
}
void write_field(Writer& w, double v) {
  w.f64(v);
}
absl::Status read_field(Reader& r, std::uint64_t& v) {
  return r.varint(v);
}
absl::Status read_field(Reader& r, std::vector<std::uint64_t>& ids) {
  return r.ids(ids);
}
absl::Status read_field(Reader& r, double& v) {
  return r.f64(v);
}

/// The edit whose tag is `tag`, read from `r`: tried against Edit's alternatives from index I on.
template <std::size_t I = 0>
absl::StatusOr<Edit> decode_tagged(std::uint8_t tag, Reader& r) {
  if constexpr (I == std::variant_size_v<Edit>) {
    return absl::DataLossError(absl::StrCat("unknown edit tag ", tag, " at offset ", r.pos() - 1));
  } else {
    std::variant_alternative_t<I, Edit> e;
    absl::Status read;
    const bool matched = with_fields(e, [&](Tag t, auto&... field) {
      if (t != tag) return false;
      (void)((read = read_field(r, field)).ok() && ...);
      return true;
    });
    if (!matched) return decode_tagged<I + 1>(tag, r);
    if (!read.ok()) return read;
    return Edit{std::move(e)};
  }
}

}  // namespace

std::uint32_t crc32c(std::uint32_t crc, const void* data, std::size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (std::size_t i = 0; i < size; ++i) crc = kCrcTable[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

void Writer::u32_fixed(std::uint32_t v) {
  put_le(out_, v);
}

void Writer::u64_fixed(std::uint64_t v) {
  put_le(out_, v);
}

void Writer::varint(std::uint64_t v) {
  while (v >= 0x80) {
    u8(static_cast<std::uint8_t>(v | 0x80));
    v >>= 7;
  }
  u8(static_cast<std::uint8_t>(v));
}

void Writer::f64(double v) {
  u64_fixed(std::bit_cast<std::uint64_t>(v));
}

void Writer::bytes(std::string_view s) {
  varint(s.size());
  out_.append(s.data(), s.size());
}

void Writer::ids(const std::vector<std::uint64_t>& ids) {
  varint(ids.size());
  for (std::uint64_t id : ids) varint(id);
}

absl::Status Reader::need(std::size_t n, const char* what) const {
  if (n > left()) {
    return absl::DataLossError(absl::StrCat("truncated encoding: ", what, " needs ", n,
                                            " bytes at offset ", pos_, ", ", left(), " left"));
  }
  return absl::OkStatus();
}

absl::Status Reader::u8(std::uint8_t& v) {
  if (absl::Status s = need(1, "a byte"); !s.ok()) return s;
  v = static_cast<std::uint8_t>(in_[pos_++]);
  return absl::OkStatus();
}

absl::Status Reader::u32_fixed(std::uint32_t& v) {
  if (absl::Status s = need(4, "a u32"); !s.ok()) return s;
  v = load_le<std::uint32_t>(in_.data() + pos_);
  pos_ += 4;
  return absl::OkStatus();
}

absl::Status Reader::u64_fixed(std::uint64_t& v) {
  if (absl::Status s = need(8, "a u64"); !s.ok()) return s;
  v = load_le<std::uint64_t>(in_.data() + pos_);
  pos_ += 8;
  return absl::OkStatus();
}

absl::Status Reader::varint(std::uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    std::uint8_t b = 0;
    if (absl::Status s = u8(b); !s.ok()) return s;
    v |= std::uint64_t{b & 0x7Fu} << shift;
    if ((b & 0x80) == 0) return absl::OkStatus();
  }
  return absl::DataLossError(absl::StrCat("varint longer than 10 bytes at offset ", pos_));
}

absl::Status Reader::f64(double& v) {
  std::uint64_t bits = 0;
  if (absl::Status s = u64_fixed(bits); !s.ok()) return s;
  v = std::bit_cast<double>(bits);
  return absl::OkStatus();
}

absl::Status Reader::bytes(std::string& s) {
  std::uint64_t n = 0;
  if (absl::Status st = varint(n); !st.ok()) return st;
  if (absl::Status st = need(n, "a string"); !st.ok()) return st;
  s.assign(in_.data() + pos_, n);
  pos_ += n;
  return absl::OkStatus();
}

absl::Status Reader::ids(std::vector<std::uint64_t>& ids) {
  std::uint64_t n = 0;
  if (absl::Status s = varint(n); !s.ok()) return s;
  // Each id takes at least one byte: refuse counts the input cannot hold before reserving.
  if (absl::Status s = need(n, "an id list"); !s.ok()) return s;
  ids.resize(n);
  for (auto& id : ids) {
    if (absl::Status s = varint(id); !s.ok()) return s;
  }
  return absl::OkStatus();
}

void encode_edge_body(Writer& w, const Hyperedge& e) {
  w.ids(e.tails);
  w.ids(e.heads);
  w.f64(e.weight);
}

absl::Status decode_edge_body(Reader& r, Hyperedge& e) {
  if (absl::Status s = r.ids(e.tails); !s.ok()) return s;
  if (absl::Status s = r.ids(e.heads); !s.ok()) return s;
  return r.f64(e.weight);
}

void encode_edit(Writer& w, const Edit& edit) {
  std::visit(
      [&w](const auto& e) {
        with_fields(e, [&w](Tag tag, const auto&... field) {
          w.u8(tag);
          (write_field(w, field), ...);
        });
      },
      edit);
}

absl::StatusOr<Edit> decode_edit(Reader& r) {
  std::uint8_t tag = 0;
  if (absl::Status s = r.u8(tag); !s.ok()) return s;
  return decode_tagged(tag, r);
}

void encode_edits(Writer& w, std::span<const Edit> edits) {
  w.varint(edits.size());
  for (const Edit& e : edits) encode_edit(w, e);
}

absl::StatusOr<std::vector<Edit>> decode_edits(Reader& r) {
  std::uint64_t n = 0;
  if (absl::Status s = r.varint(n); !s.ok()) return s;
  if (n > r.left()) return absl::DataLossError(absl::StrCat("edit count ", n, " is corrupt"));
  std::vector<Edit> edits;
  edits.reserve(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    absl::StatusOr<Edit> e = decode_edit(r);
    if (!e.ok()) return e.status();
    edits.push_back(*std::move(e));
  }
  return edits;
}

void encode_image(Writer& w, const GraphImage& image) {
  const GraphSnapshot& g = image.graph;
  w.bytes(g.info.graph_id);
  w.varint(g.info.version);
  w.varint(image.next_vertex_id);
  w.varint(image.next_edge_id);
  // Ascending ids: deltas keep dense id ranges at one byte per vertex.
  w.varint(g.vertices.size());
  std::uint64_t prev = 0;
  for (std::uint64_t v : g.vertices) {
    w.varint(v - prev);
    prev = v;
  }
  w.varint(g.edges.size());
  for (const Hyperedge& e : g.edges) {
    w.varint(e.id);
    encode_edge_body(w, e);
  }
}

absl::StatusOr<GraphImage> decode_image(Reader& r) {
  GraphImage image;
  GraphSnapshot& g = image.graph;
  absl::Status s;
  if (s = r.bytes(g.info.graph_id); !s.ok()) return s;
  if (s = r.varint(g.info.version); !s.ok()) return s;
  if (s = r.varint(image.next_vertex_id); !s.ok()) return s;
  if (s = r.varint(image.next_edge_id); !s.ok()) return s;
  std::uint64_t n = 0;
  if (s = r.varint(n); !s.ok()) return s;
  if (n > r.left()) return absl::DataLossError(absl::StrCat("vertex count ", n, " is corrupt"));
  g.vertices.resize(n);
  std::uint64_t prev = 0;
  for (auto& v : g.vertices) {
    std::uint64_t delta = 0;
    if (s = r.varint(delta); !s.ok()) return s;
    v = prev + delta;
    prev = v;
  }
  std::uint64_t m = 0;
  if (s = r.varint(m); !s.ok()) return s;
  if (m > r.left()) return absl::DataLossError(absl::StrCat("edge count ", m, " is corrupt"));
  g.edges.resize(m);
  for (Hyperedge& e : g.edges) {
    if (s = r.varint(e.id); !s.ok()) return s;
    if (s = decode_edge_body(r, e); !s.ok()) return s;
  }
  g.info.num_vertices = g.vertices.size();
  g.info.num_edges = g.edges.size();
  return image;
}

}  // namespace gcompute::server::codec
