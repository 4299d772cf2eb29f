// SPDX-License-Identifier: Apache-2.0
// The other process of the CUDA IPC tests (a GPU client): allocates device memory, fills its
// start with DIR/in.bin, exports it (DIR/handle.bin: cudaIpcGetMemHandle), waits for DIR/done,
// then writes the whole allocation back to DIR/out.bin. A process cannot open its own IPC
// handle, so the server under test needs this second one.
//
//   cuda_ipc_exporter DIR BYTES
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace {

int fail(const char* what, cudaError_t err) {
  std::fprintf(stderr, "cuda_ipc_exporter: %s: %s\n", what, cudaGetErrorString(err));
  return 1;
}

/// Writes `bytes` to `path` whole: a temporary file renamed into place.
bool publish(const std::filesystem::path& path, const void* bytes, std::size_t size) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(static_cast<const char*>(bytes), static_cast<std::streamsize>(size));
    if (!out) return false;
  }
  std::filesystem::rename(tmp, path);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: cuda_ipc_exporter DIR BYTES\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  const std::size_t bytes = std::strtoull(argv[2], nullptr, 10);
  std::ifstream in_file(dir / "in.bin", std::ios::binary);
  const std::vector<char> in((std::istreambuf_iterator<char>(in_file)),
                             std::istreambuf_iterator<char>());
  if (in.size() > bytes) return fail("in.bin is larger than the allocation", cudaSuccess);
  void* d = nullptr;
  if (cudaError_t e = cudaMalloc(&d, bytes); e != cudaSuccess) return fail("cudaMalloc", e);
  if (cudaError_t e = cudaMemset(d, 0x5a, bytes); e != cudaSuccess) return fail("cudaMemset", e);
  if (cudaError_t e = cudaMemcpy(d, in.data(), in.size(), cudaMemcpyHostToDevice);
      e != cudaSuccess) {
    return fail("cudaMemcpy to the device", e);
  }
  cudaIpcMemHandle_t handle;
  if (cudaError_t e = cudaIpcGetMemHandle(&handle, d); e != cudaSuccess) {
    return fail("cudaIpcGetMemHandle", e);
  }
  if (!publish(dir / "handle.bin", &handle, sizeof handle)) return fail("handle.bin", cudaSuccess);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!std::filesystem::exists(dir / "done")) {
    if (std::chrono::steady_clock::now() > give_up)
      return fail("no DIR/done in 120 s", cudaSuccess);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::vector<char> out(bytes);
  if (cudaError_t e = cudaMemcpy(out.data(), d, bytes, cudaMemcpyDeviceToHost); e != cudaSuccess) {
    return fail("cudaMemcpy to the host", e);
  }
  if (!publish(dir / "out.bin", out.data(), out.size())) return fail("out.bin", cudaSuccess);
  cudaFree(d);
  return 0;
}
