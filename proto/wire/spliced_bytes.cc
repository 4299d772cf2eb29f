// SPDX-License-Identifier: Apache-2.0
#include "wire/spliced_bytes.hpp"

#include <grpcpp/support/slice.h>

#include <array>
#include <cassert>

#include "wire/varint.hpp"

namespace gcompute::wire {
namespace {

void delete_string(void* owned) {
  delete static_cast<std::string*>(owned);
}

}  // namespace

grpc::ByteBuffer encode_with_spliced_bytes(const std::vector<MessageLevel>& levels,
                                           std::uint32_t bytes_field, std::string data) {
  assert(!levels.empty());
  const std::uint64_t n = data.size();
  const std::uint32_t data_tag = field_tag(bytes_field, kLengthDelimited);
  // Each submessage's length covers its other fields and everything below it.
  std::vector<std::uint64_t> content(levels.size());
  std::uint64_t below = n == 0 ? 0 : varint_size(data_tag) + varint_size(n) + n;
  for (std::size_t i = levels.size(); i-- > 1;) {
    content[i] = levels[i].other_fields.size() + below;
    below = varint_size(field_tag(levels[i].field_number, kLengthDelimited)) +
            varint_size(content[i]) + content[i];
  }
  std::string head = levels[0].other_fields;
  std::array<char, 32> scratch{};
  const auto append_header = [&](std::uint32_t tag, std::uint64_t length) {
    char* end = put_varint(put_varint(scratch.data(), tag), length);
    head.append(scratch.data(), static_cast<std::size_t>(end - scratch.data()));
  };
  for (std::size_t i = 1; i < levels.size(); ++i) {
    append_header(field_tag(levels[i].field_number, kLengthDelimited), content[i]);
    head += levels[i].other_fields;
  }
  if (n == 0) {
    grpc::Slice only(head);
    return grpc::ByteBuffer(&only, 1);
  }
  append_header(data_tag, n);
  auto* owned = new std::string(std::move(data));
  std::array<grpc::Slice, 2> slices = {
      grpc::Slice(head), grpc::Slice(owned->data(), owned->size(), &delete_string, owned)};
  return grpc::ByteBuffer(slices.data(), slices.size());
}

}  // namespace gcompute::wire
