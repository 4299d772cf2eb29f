// SPDX-License-Identifier: Apache-2.0
// A POSIX shared-memory object for tests: created with a fresh name and mode 0600, mapped, and
// unlinked when the test is done.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace gcompute::testing {

class ShmObject {
 public:
  explicit ShmObject(std::uint64_t bytes) : bytes_(bytes) {
    static std::atomic<int> counter{0};
    name_ = "/gcompute-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
    fd_ = shm_open(name_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd_ < 0) throw std::runtime_error("shm_open " + name_ + ": " + std::strerror(errno));
    // fchmod: the creation mode is masked by the umask, and the server wants exactly 0600.
    if (fchmod(fd_, 0600) != 0 || ftruncate(fd_, static_cast<off_t>(bytes)) != 0) {
      throw std::runtime_error("ftruncate " + name_ + ": " + std::strerror(errno));
    }
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap " + name_ + ": " + std::strerror(errno));
    data_ = static_cast<std::byte*>(p);
  }
  ~ShmObject() {
    munmap(data_, bytes_);
    close(fd_);
    shm_unlink(name_.c_str());
  }
  ShmObject(const ShmObject&) = delete;
  ShmObject& operator=(const ShmObject&) = delete;

  const std::string& name() const { return name_; }
  std::byte* data() const { return data_; }
  std::uint64_t bytes() const { return bytes_; }
  int fd() const { return fd_; }
  template <typename T>
  T* at(std::uint64_t offset) const {
    return reinterpret_cast<T*>(data_ + offset);
  }

 private:
  std::string name_;
  std::uint64_t bytes_;
  int fd_ = -1;
  std::byte* data_ = nullptr;
};

}  // namespace gcompute::testing
