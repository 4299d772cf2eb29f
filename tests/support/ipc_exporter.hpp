// SPDX-License-Identifier: Apache-2.0
// The GPU client of the CUDA IPC tests and benchmark: runs tests/service/cuda_ipc_exporter in a
// process of its own (a process cannot open its own IPC handle) and talks to it through files.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace gcompute::testing {

/// cuda_ipc_exporter beside the running program (a device bundle's bin/), else `built`.
inline std::filesystem::path ipc_exporter_path(const std::filesystem::path& built) {
  const std::filesystem::path beside =
      std::filesystem::read_symlink("/proc/self/exe").parent_path() / "cuda_ipc_exporter";
  return std::filesystem::exists(beside) ? beside : built;
}

/// A second process that owns GPU memory and exports it (tests/service/cuda_ipc_exporter.cc).
class IpcExporter {
 public:
  /// Starts `exe` (ipc_exporter_path) with `in` as the start of an allocation of `bytes`.
  IpcExporter(const std::filesystem::path& exe, const std::vector<std::byte>& in,
              std::uint64_t bytes) {
    dir_ = std::filesystem::temp_directory_path() /
           ("gcompute-ipc-" + std::to_string(getpid()) + "-" + std::to_string(counter_++));
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "in.bin", std::ios::binary)
        .write(reinterpret_cast<const char*>(in.data()), static_cast<std::streamsize>(in.size()));
    const std::string dir = dir_.string(), size = std::to_string(bytes);
    pid_ = fork();
    if (pid_ == 0) {
      execl(exe.c_str(), exe.c_str(), dir.c_str(), size.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  ~IpcExporter() {
    std::ofstream(dir_ / "done").put('x');
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
    std::filesystem::remove_all(dir_);
  }
  /// The exported handle (empty after 60 s without one).
  std::string handle() { return wait_for("handle.bin"); }
  /// Lets the exporter finish and returns its allocation's bytes.
  std::string finish() {
    std::ofstream(dir_ / "done").put('x');
    return wait_for("out.bin");
  }

 private:
  std::string wait_for(const char* name) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!std::filesystem::exists(dir_ / name) && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::ifstream in(dir_ / name, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  static inline std::atomic<int> counter_{0};
  std::filesystem::path dir_;
  pid_t pid_ = -1;
};

}  // namespace gcompute::testing
