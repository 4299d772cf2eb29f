// SPDX-License-Identifier: Apache-2.0
#include "cli/npy.hpp"

#include <bit>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gcompute::cli {
namespace {

static_assert(std::endian::native == std::endian::little,
              ".npy data is read in place: the host must be little-endian");

using client::DType;

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;

// A tiny reader for the Python dict literal of the header, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& name) : text_(text), name_(name) {}

  absl::Status parse(std::string& descr, bool& fortran, std::vector<int64_t>& shape) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    skip();
    if (!eat('{')) return error("expected '{'");
    while (true) {
      skip();
      if (eat('}')) break;
      std::string key;
      if (absl::Status s = string_literal(key); !s.ok()) return s;
      skip();
      if (!eat(':')) return error("expected ':' after a key");
      skip();
      if (key == "descr") {
        if (absl::Status s = string_literal(descr); !s.ok()) return s;
        have_descr = true;
      } else if (key == "fortran_order") {
        if (text_.compare(pos_, 4, "True") == 0) {
          fortran = true;
          pos_ += 4;
        } else if (text_.compare(pos_, 5, "False") == 0) {
          fortran = false;
          pos_ += 5;
        } else {
          return error("fortran_order is neither True nor False");
        }
        have_fortran = true;
      } else if (key == "shape") {
        if (absl::Status s = tuple(shape); !s.ok()) return s;
        have_shape = true;
      } else {
        return error(absl::StrCat("unexpected key '", key, "'"));
      }
      skip();
      if (eat(',')) continue;
      skip();
      if (eat('}')) break;
      return error("expected ',' or '}'");
    }
    if (!have_descr || !have_fortran || !have_shape) {
      return error("the header lacks descr, fortran_order or shape");
    }
    return absl::OkStatus();
  }

 private:
  void skip() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  absl::Status error(const std::string& what) const {
    return absl::InvalidArgumentError(
        absl::StrCat(name_, ": malformed .npy header (", what, " at offset ", pos_, ")"));
  }
  absl::Status string_literal(std::string& out) {
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) {
      return error("expected a quoted string");
    }
    const char quote = text_[pos_++];
    const std::size_t end = text_.find(quote, pos_);
    if (end == std::string::npos) return error("unterminated string");
    out = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return absl::OkStatus();
  }
  absl::Status tuple(std::vector<int64_t>& out) {
    if (!eat('(')) return error("shape is not a tuple");
    while (true) {
      skip();
      if (eat(')')) return absl::OkStatus();
      if (pos_ >= text_.size() || !std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        return error("shape holds something other than non-negative integers");
      }
      int64_t v = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        const int digit = text_[pos_++] - '0';
        if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) {
          return error("a dimension overflows int64");
        }
        v = v * 10 + digit;
      }
      // Python 2 wrote longs as "3L".
      eat('L');
      out.push_back(v);
      skip();
      if (eat(',')) continue;
      skip();
      if (eat(')')) return absl::OkStatus();
      return error("expected ',' or ')' in shape");
    }
  }

  const std::string& text_;
  const std::string& name_;
  std::size_t pos_ = 0;
};

std::string describe_shape(const std::vector<int64_t>& shape) {
  return absl::StrCat("(", absl::StrJoin(shape, ", "), shape.size() == 1 ? ",)" : ")");
}

}  // namespace

absl::StatusOr<NpyArray> parse_npy(const std::string& bytes, const std::string& name) {
  if (bytes.size() < kMagicLen + 2 || bytes.compare(0, kMagicLen, kMagic, kMagicLen) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": not a .npy file (no \\x93NUMPY magic at the start)"));
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  const int minor = static_cast<unsigned char>(bytes[7]);
  std::size_t header_len = 0, header_start = 0;
  if (major == 1) {
    if (bytes.size() < 10) return absl::InvalidArgumentError(absl::StrCat(name, ": truncated"));
    header_len = static_cast<unsigned char>(bytes[8]) |
                 (static_cast<std::size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return absl::InvalidArgumentError(absl::StrCat(name, ": truncated"));
    for (int i = 3; i >= 0; --i) {
      header_len = (header_len << 8) | static_cast<unsigned char>(bytes[8 + i]);
    }
    header_start = 12;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(name, ": unsupported .npy format version ",
                                                   major, ".", minor, " (1.0, 2.0, 3.0 are)"));
  }
  if (bytes.size() < header_start + header_len) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": truncated .npy header (", header_len,
                                                   " bytes announced, ",
                                                   bytes.size() - header_start, " present)"));
  }
  const std::string header = bytes.substr(header_start, header_len);
  std::string descr;
  bool fortran = false;
  NpyArray out;
  if (absl::Status s = HeaderParser(header, name).parse(descr, fortran, out.shape); !s.ok()) {
    return s;
  }
  if (descr == "<f4") {
    out.dtype = DType::kF32;
  } else if (descr == "<f8") {
    out.dtype = DType::kF64;
  } else if (descr == "<i4") {
    out.dtype = DType::kI32;
  } else if (!descr.empty() && descr[0] == '>') {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": big-endian data (dtype '", descr,
                     "') is not supported; convert with a.astype(a.dtype.newbyteorder('<'))"));
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": dtype '", descr, "' is not supported (use '<f4', '<f8' or '<i4')"));
  }
  if (fortran) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": fortran_order is True; only C order is supported (use np.ascontiguousarray)"));
  }
  if (out.shape.empty() || out.shape.size() > 3) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": ", out.shape.size(),
                                                   "-D array of shape ", describe_shape(out.shape),
                                                   "; only 1-D, 2-D and 3-D arrays are supported"));
  }
  uint64_t elements = 1;
  for (int64_t d : out.shape) {
    if (d != 0 && elements > std::numeric_limits<uint64_t>::max() / 8 / static_cast<uint64_t>(d)) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": shape ", describe_shape(out.shape), " is too large"));
    }
    elements *= static_cast<uint64_t>(d);
  }
  const uint64_t data_bytes = elements * client::dtype_size(out.dtype);
  const uint64_t present = bytes.size() - header_start - header_len;
  if (present != data_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": shape ", describe_shape(out.shape),
                                                   " of '", descr, "' needs ", data_bytes,
                                                   " data bytes but the file has ", present));
  }
  out.data = bytes.substr(header_start + header_len);
  return out;
}

absl::StatusOr<std::string> serialize_npy(const NpyArray& array) {
  const char* descr = nullptr;
  switch (array.dtype) {
    case DType::kF32:
      descr = "<f4";
      break;
    case DType::kF64:
      descr = "<f8";
      break;
    case DType::kI32:
      descr = "<i4";
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("cannot write dtype ", client::dtype_name(array.dtype), " to .npy"));
  }
  std::string dict =
      absl::StrCat("{'descr': '", descr,
                   "', 'fortran_order': False, 'shape': ", describe_shape(array.shape), ", }");
  // NumPy pads magic + length + header to a multiple of 64 bytes, ending in '\n'.
  std::size_t prefix = kMagicLen + 2 + 2;
  int major = 1;
  std::size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  if (total - prefix > 65535) {
    major = 2;
    prefix = kMagicLen + 2 + 4;
    total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  }
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict.push_back('\n');
  std::string out(kMagic, kMagicLen);
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  const std::size_t len = dict.size();
  out.push_back(static_cast<char>(len & 0xff));
  out.push_back(static_cast<char>((len >> 8) & 0xff));
  if (major == 2) {
    out.push_back(static_cast<char>((len >> 16) & 0xff));
    out.push_back(static_cast<char>((len >> 24) & 0xff));
  }
  out += dict;
  out += array.data;
  return out;
}

absl::StatusOr<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat(path, ": read error"));
  return std::move(buffer).str();
}

absl::Status write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    return absl::PermissionDeniedError(
        absl::StrCat(path, ": cannot open for writing: ", std::strerror(errno)));
  }
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return absl::DataLossError(absl::StrCat(path, ": write error"));
  return absl::OkStatus();
}

absl::StatusOr<NpyArray> read_npy(const std::string& path) {
  absl::StatusOr<std::string> bytes = read_file(path);
  if (!bytes.ok()) return bytes.status();
  return parse_npy(*bytes, path);
}

absl::Status write_npy(const std::string& path, const NpyArray& array) {
  absl::StatusOr<std::string> bytes = serialize_npy(array);
  if (!bytes.ok()) return bytes.status();
  return write_file(path, *bytes);
}

client::HostMatrix to_host_matrix(NpyArray array) {
  client::HostMatrix m;
  m.dtype = array.dtype;
  if (array.shape.size() == 1) {
    m.rows = 1;
    m.cols = array.shape[0];
  } else if (array.shape.size() == 2) {
    m.rows = array.shape[0];
    m.cols = array.shape[1];
  } else {
    m.batch = array.shape[0];
    m.rows = array.shape[1];
    m.cols = array.shape[2];
  }
  m.data = std::move(array.data);
  return m;
}

NpyArray to_npy(client::HostMatrix matrix, bool as_vector) {
  NpyArray a;
  a.dtype = matrix.dtype;
  if (matrix.batch != 1) {
    a.shape = {matrix.batch, matrix.rows, matrix.cols};
  } else if (as_vector && matrix.rows == 1) {
    a.shape = {matrix.cols};
  } else {
    a.shape = {matrix.rows, matrix.cols};
  }
  a.data = std::move(matrix.data);
  return a;
}

}  // namespace gcompute::cli
