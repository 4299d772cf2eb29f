// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the graph store's binary codec (store/graph_codec.hpp), which decodes the
// bodies of log records and the graph images of snapshots. The first input byte picks the
// decoder (edits, image, edge body); the rest is its input.
//
// Properties: decoding never crashes, reads out of bounds or allocates more than the input
// justifies (ASan, the rss limit); and whatever decodes round-trips through the encoder: its
// encoding decodes again, consuming every byte, and re-encodes to the same bytes.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "store/graphs/graph_codec.hpp"

namespace {

namespace codec = gcompute::server::codec;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_graph_codec: %s\n", what);
  std::abort();
}

/// decode(encode(value)) consumes the encoding and encodes to it again.
template <typename T, typename Encode, typename Decode>
void check_round_trip(const T& value, Encode encode, Decode decode) {
  codec::Writer w;
  encode(w, value);
  const std::string bytes = w.take();
  codec::Reader r(bytes);
  auto back = decode(r);
  if (!back.ok()) fail("an encoding does not decode");
  if (r.left() != 0) fail("decoding an encoding leaves bytes");
  codec::Writer again;
  encode(again, *back);
  if (again.out() != bytes) fail("a decoded encoding encodes differently");
}

/// Whatever `decode` makes of the input must round-trip.
template <typename Encode, typename Decode>
void check_decoded(codec::Reader& input, Encode encode, Decode decode) {
  auto value = decode(input);
  if (value.ok()) check_round_trip(*value, encode, decode);
}

/// decode_edge_body in the shape of the other decoders.
absl::StatusOr<gcompute::server::Hyperedge> decode_edge(codec::Reader& r) {
  gcompute::server::Hyperedge e;
  if (absl::Status s = codec::decode_edge_body(r, e); !s.ok()) return s;
  return e;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  codec::Reader r(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
  switch (data[0] % 3) {
    case 0:
      check_decoded(r, codec::encode_edits, codec::decode_edits);
      break;
    case 1:
      check_decoded(r, codec::encode_image, codec::decode_image);
      break;
    default:
      check_decoded(r, codec::encode_edge_body, decode_edge);
      break;
  }
  return 0;
}
