// SPDX-License-Identifier: Apache-2.0
#include "store/graphs/snapshot.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "store/graphs/byte_codec.hpp"
#include "store/graphs/graph_codec.hpp"

namespace gcompute::server {

namespace fileio {

absl::Status write_all(int fd, const char* data, std::size_t size, const std::string& path) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::InternalError(
          absl::StrCat("write to ", path, " failed: ", std::strerror(errno)));
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status sync_fd(int fd, const std::string& path) {
  if (::fsync(fd) != 0) {
    return absl::InternalError(absl::StrCat("fsync of ", path, " failed: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status sync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot open directory ", dir, ": ", std::strerror(errno)));
  }
  absl::Status s = sync_fd(fd, dir);
  ::close(fd);
  return s;
}

absl::StatusOr<std::string> read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const std::string msg = absl::StrCat("cannot open ", path, ": ", std::strerror(errno));
    return errno == ENOENT ? absl::NotFoundError(msg) : absl::InternalError(msg);
  }
  std::string out;
  char buf[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string msg = absl::StrCat("read of ", path, " failed: ", std::strerror(errno));
      ::close(fd);
      return absl::InternalError(msg);
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

std::string numbered_path(const std::string& dir, const char* prefix, std::uint64_t lsn,
                          const char* suffix) {
  return absl::StrFormat("%s/%s%020u%s", dir, prefix, lsn, suffix);
}

}  // namespace fileio

namespace {

constexpr char kMagic[8] = {'G', 'C', 'S', 'N', 'A', 'P', '0', '1'};
constexpr std::uint32_t kEndMarker = 0xFFFFFFFFu;
constexpr std::size_t kFlushBytes = 1 << 20;

}  // namespace

absl::StatusOr<std::unique_ptr<SnapshotWriter>> SnapshotWriter::create(const std::string& dir,
                                                                       std::uint64_t lsn) {
  std::unique_ptr<SnapshotWriter> w(new SnapshotWriter());
  w->dir_ = dir;
  w->lsn_ = lsn;
  w->final_path_ = fileio::numbered_path(dir, "snap-", lsn, ".snap");
  w->tmp_path_ = w->final_path_ + ".tmp";
  w->fd_ = ::open(w->tmp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (w->fd_ < 0) {
    return absl::InternalError(
        absl::StrCat("cannot create ", w->tmp_path_, ": ", std::strerror(errno)));
  }
  w->buffer_.append(kMagic, sizeof(kMagic));
  codec::put_le<std::uint64_t>(w->buffer_, lsn);
  return w;
}

SnapshotWriter::~SnapshotWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!finished_) ::unlink(tmp_path_.c_str());
}

absl::Status SnapshotWriter::flush() {
  absl::Status s = fileio::write_all(fd_, buffer_.data(), buffer_.size(), tmp_path_);
  buffer_.clear();
  return s;
}

absl::Status SnapshotWriter::add(const GraphImage& image) {
  codec::Writer w;
  codec::encode_image(w, image);
  const std::string& payload = w.out();
  if (payload.size() >= kEndMarker) {
    return absl::ResourceExhaustedError(
        absl::StrCat("graph ", image.graph.info.graph_id, " encodes to ", payload.size(),
                     " bytes, more than a snapshot record holds (4 GiB)"));
  }
  codec::put_le<std::uint32_t>(buffer_, static_cast<std::uint32_t>(payload.size()));
  codec::put_le<std::uint32_t>(buffer_, codec::crc32c(0, payload.data(), payload.size()));
  buffer_ += payload;
  ++count_;
  if (buffer_.size() >= kFlushBytes) return flush();
  return absl::OkStatus();
}

absl::Status SnapshotWriter::finish() {
  std::string trailer;
  codec::put_le<std::uint32_t>(trailer, kEndMarker);
  codec::put_le<std::uint64_t>(trailer, count_);
  std::string covered(kMagic, sizeof(kMagic));
  codec::put_le<std::uint64_t>(covered, lsn_);
  codec::put_le<std::uint64_t>(covered, count_);
  codec::put_le<std::uint32_t>(trailer, codec::crc32c(0, covered.data(), covered.size()));
  buffer_ += trailer;
  if (absl::Status s = flush(); !s.ok()) return s;
  if (absl::Status s = fileio::sync_fd(fd_, tmp_path_); !s.ok()) return s;
  ::close(fd_);
  fd_ = -1;
  if (::rename(tmp_path_.c_str(), final_path_.c_str()) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot rename ", tmp_path_, " to ", final_path_, ": ", std::strerror(errno)));
  }
  finished_ = true;
  return fileio::sync_dir(dir_);
}

absl::StatusOr<std::uint64_t> read_snapshot(const std::string& path,
                                            const std::function<absl::Status(GraphImage)>& graph) {
  absl::StatusOr<std::string> data = fileio::read_file(path);
  if (!data.ok()) return data.status();
  const std::string& d = *data;
  auto damaged = [&](std::size_t offset, const std::string& what) {
    return absl::DataLossError(absl::StrCat("snapshot ", path, " is damaged at offset ", offset,
                                            ": ", what, "; refusing to start from it"));
  };
  if (d.size() < 16 || std::memcmp(d.data(), kMagic, sizeof(kMagic)) != 0) {
    return damaged(0, "no snapshot header");
  }
  const std::uint64_t lsn = codec::load_le<std::uint64_t>(d.data() + 8);
  std::size_t off = 16;
  std::uint64_t count = 0;
  while (true) {
    if (d.size() - off < 4) return damaged(off, "truncated");
    const std::uint32_t len = codec::load_le<std::uint32_t>(d.data() + off);
    if (len == kEndMarker) {
      if (d.size() - off != 16) return damaged(off, "bad trailer length");
      const std::uint64_t stored_count = codec::load_le<std::uint64_t>(d.data() + off + 4);
      std::string covered(d.data(), 16);
      codec::put_le<std::uint64_t>(covered, stored_count);
      if (stored_count != count || codec::load_le<std::uint32_t>(d.data() + off + 12) !=
                                       codec::crc32c(0, covered.data(), covered.size())) {
        return damaged(off, absl::StrCat("trailer says ", stored_count, " graphs, read ", count));
      }
      return lsn;
    }
    if (d.size() - off < 8 || d.size() - off - 8 < len) return damaged(off, "truncated record");
    const char* payload = d.data() + off + 8;
    if (codec::crc32c(0, payload, len) != codec::load_le<std::uint32_t>(d.data() + off + 4)) {
      return damaged(off, "checksum mismatch");
    }
    codec::Reader r(std::string_view(payload, len));
    absl::StatusOr<GraphImage> image = codec::decode_image(r);
    if (!image.ok()) return damaged(off, std::string(image.status().message()));
    if (r.left() != 0) return damaged(off, "trailing bytes in a graph record");
    if (absl::Status s = graph(*std::move(image)); !s.ok()) {
      return absl::Status(s.code(),
                          absl::StrCat("snapshot ", path, " at offset ", off, ": ", s.message()));
    }
    ++count;
    off += 8 + len;
  }
}

}  // namespace gcompute::server
