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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  codec::Reader r(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
  switch (data[0] % 3) {
    case 0: {
      auto edits = codec::decode_edits(r);
      if (edits.ok()) {
        check_round_trip(
            *edits, [](codec::Writer& w, const auto& e) { codec::encode_edits(w, e); },
            [](codec::Reader& rd) { return codec::decode_edits(rd); });
      }
      break;
    }
    case 1: {
      auto image = codec::decode_image(r);
      if (image.ok()) {
        check_round_trip(
            *image, [](codec::Writer& w, const auto& i) { codec::encode_image(w, i); },
            [](codec::Reader& rd) { return codec::decode_image(rd); });
      }
      break;
    }
    default: {
      gcompute::server::Hyperedge edge;
      if (codec::decode_edge_body(r, edge).ok()) {
        check_round_trip(
            edge, [](codec::Writer& w, const auto& e) { codec::encode_edge_body(w, e); },
            [](codec::Reader& rd) -> absl::StatusOr<gcompute::server::Hyperedge> {
              gcompute::server::Hyperedge e;
              if (absl::Status s = codec::decode_edge_body(rd, e); !s.ok()) return s;
              return e;
            });
      }
      break;
    }
  }
  return 0;
}
