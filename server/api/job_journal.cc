// SPDX-License-Identifier: Apache-2.0
#include "api/job_journal.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "api/convert.hpp"
#include "gcompute/internal/job_record.pb.h"
#include "store/graphs/snapshot.hpp"

namespace gcompute::server {
namespace {

constexpr std::uint32_t kFormat = 1;
constexpr char kSuffix[] = ".job";
constexpr char kTmpSuffix[] = ".job.tmp";

std::int64_t unix_us_or_zero(absl::Time t) {
  return t == absl::InfinitePast() ? 0 : absl::ToUnixMicros(t);
}

absl::Time time_or_past(std::int64_t us) {
  return us == 0 ? absl::InfinitePast() : absl::FromUnixMicros(us);
}

/// Names the damaged file and what to do about it.
absl::Status damaged(const std::string& path, const std::string& what) {
  return absl::DataLossError(absl::StrCat("job record ", path, " is damaged: ", what,
                                          "; refusing to start (move the file away to start "
                                          "without that job)"));
}

absl::StatusOr<std::vector<std::string>> names_in(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    return absl::InternalError(absl::StrCat("cannot list ", dir, ": ", std::strerror(errno)));
  }
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) names.emplace_back(e->d_name);
  ::closedir(d);
  return names;
}

}  // namespace

absl::StatusOr<std::unique_ptr<FileJobJournal>> FileJobJournal::open(
    const std::string& data_dir, bool fsync, std::uint64_t max_result_bytes) {
  const std::string dir = data_dir + "/jobs";
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", std::strerror(errno)));
  }
  auto names = names_in(dir);
  if (!names.ok()) return names.status();
  for (const std::string& name : *names) {
    if (!absl::EndsWith(name, kTmpSuffix)) continue;
    const std::string path = dir + "/" + name;
    if (::unlink(path.c_str()) != 0) {
      return absl::InternalError(absl::StrCat("cannot remove ", path, ": ", std::strerror(errno)));
    }
  }
  return std::unique_ptr<FileJobJournal>(new FileJobJournal(dir, fsync, max_result_bytes));
}

std::string FileJobJournal::path_of(const std::string& id) const {
  return absl::StrCat(dir_, "/", id, kSuffix);
}

absl::StatusOr<std::vector<ops::RestoredJob>> FileJobJournal::load() const {
  auto names = names_in(dir_);
  if (!names.ok()) return names.status();
  std::vector<ops::RestoredJob> jobs;
  for (const std::string& name : *names) {
    if (!absl::EndsWith(name, kSuffix)) continue;
    const std::string path = dir_ + "/" + name;
    absl::StatusOr<std::string> bytes = fileio::read_file(path);
    if (!bytes.ok()) return bytes.status();
    internal::JobRecord rec;
    if (!rec.ParseFromString(*bytes)) return damaged(path, "not a job record");
    if (rec.format() != kFormat) {
      return damaged(path, absl::StrCat("format ", rec.format(), ", this server reads ", kFormat));
    }
    if (absl::StrCat(rec.job_id(), kSuffix) != name) {
      return damaged(path, absl::StrCat("it holds job \"", rec.job_id(), "\""));
    }
    const std::optional<ops::JobState> state = decode_job_state(rec.state());
    if (!state) return damaged(path, absl::StrCat("state ", rec.state()));
    ops::RestoredJob job;
    ops::JobRecord& r = job.record;
    r.id = rec.job_id();
    r.tenant = rec.tenant();
    r.seq = rec.seq();
    r.method = rec.method();
    r.priority = rec.priority() == v1::JOB_PRIORITY_HIGH ? Priority::kHigh : Priority::kNormal;
    r.client_job_key = rec.client_job_key();
    r.state = *state;
    r.created = absl::FromUnixMicros(rec.created_unix_us());
    r.started = time_or_past(rec.started_unix_us());
    r.finished = time_or_past(rec.finished_unix_us());
    r.ttl = absl::Milliseconds(rec.ttl_ms());
    if (rec.error_code() != 0) {
      r.status = absl::Status(static_cast<absl::StatusCode>(rec.error_code()), rec.error_message());
    }
    if (rec.has_result()) r.result = std::make_shared<const std::string>(rec.result());
    if (r.state == ops::JobState::kQueued) {
      v1::SubmitJobRequest request;
      if (!request.ParseFromString(rec.submission())) {
        return damaged(path, "its request is not a SubmitJobRequest");
      }
      // Checked again as at submit: a request this server no longer takes fails the job.
      absl::StatusOr<JobSubmission> decoded = decode(request);
      if (decoded.ok()) {
        job.request = std::move(decoded->op);
      } else {
        job.request = decoded.status();
      }
    }
    jobs.push_back(std::move(job));
  }
  return jobs;
}

std::shared_ptr<const std::string> FileJobJournal::encode_result(const ops::JobView& view) {
  v1::Job job;
  encode(view, &job);
  if (!job.has_result() || job.result().ByteSizeLong() > max_result_bytes_) return nullptr;
  return std::make_shared<const std::string>(job.result().SerializeAsString());
}

absl::Status FileJobJournal::save(const ops::JobRecord& r) {
  internal::JobRecord rec;
  rec.set_format(kFormat);
  rec.set_job_id(r.id);
  rec.set_tenant(r.tenant);
  rec.set_seq(r.seq);
  rec.set_method(r.method);
  rec.set_state(encode_job_state(r.state));
  rec.set_priority(r.priority == Priority::kHigh ? v1::JOB_PRIORITY_HIGH : v1::JOB_PRIORITY_NORMAL);
  rec.set_client_job_key(r.client_job_key);
  rec.set_ttl_ms(absl::ToInt64Milliseconds(r.ttl));
  rec.set_created_unix_us(absl::ToUnixMicros(r.created));
  rec.set_started_unix_us(unix_us_or_zero(r.started));
  rec.set_finished_unix_us(unix_us_or_zero(r.finished));
  if (!r.status.ok()) {
    rec.set_error_code(static_cast<int>(r.status.code()));
    rec.set_error_message(std::string(r.status.message()));
  }
  if (r.submission) rec.set_submission(*r.submission);
  if (r.result) {
    rec.set_result(*r.result);
    rec.set_has_result(true);
  }
  const std::string bytes = rec.SerializeAsString();
  const std::string path = path_of(r.id);
  const std::string tmp = absl::StrCat(dir_, "/", r.id, kTmpSuffix);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("cannot create ", tmp, ": ", std::strerror(errno)));
  }
  absl::Status st = fileio::write_all(fd, bytes.data(), bytes.size(), tmp);
  if (st.ok() && fsync_) st = fileio::sync_fd(fd, tmp);
  ::close(fd);
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    st = absl::InternalError(
        absl::StrCat("cannot rename ", tmp, " to ", path, ": ", std::strerror(errno)));
  }
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  return fsync_ ? fileio::sync_dir(dir_) : absl::OkStatus();
}

absl::Status FileJobJournal::erase(const std::string& id) {
  const std::string path = path_of(id);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::InternalError(absl::StrCat("cannot remove ", path, ": ", std::strerror(errno)));
  }
  return fsync_ ? fileio::sync_dir(dir_) : absl::OkStatus();
}

}  // namespace gcompute::server
