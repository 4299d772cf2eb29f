// SPDX-License-Identifier: Apache-2.0
// Matrices in host memory as the engine sees them: a shape plus bytes held in a std::string,
// so protobuf `bytes` fields can be swapped in and out without copies.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "gcompute/kernels/dtype.hpp"

namespace gcompute::server {

using kernels::DType;

/// Shape and element type of a matrix or a batch of matrices (batch >= 1).
struct MatrixDesc {
  DType dtype = DType::kF32;
  std::int64_t batch = 1;
  std::int64_t rows = 0;
  std::int64_t cols = 0;

  std::uint64_t elements() const {
    return static_cast<std::uint64_t>(batch) * static_cast<std::uint64_t>(rows) *
           static_cast<std::uint64_t>(cols);
  }
  std::uint64_t bytes() const { return elements() * kernels::dtype_size(dtype); }
  std::uint64_t matrix_bytes() const {
    return static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(cols) *
           kernels::dtype_size(dtype);
  }
};

/// "3x4 f32" or "5 x 3x4 f64" for messages.
std::string describe(const MatrixDesc& d);

/// A matrix with its data. Inputs may share their bytes with the matrix store (hence
/// shared_ptr); results are uniquely owned until they are encoded into a response.
struct HostMatrix {
  MatrixDesc desc;
  std::shared_ptr<std::string> data;

  const std::byte* bytes() const { return reinterpret_cast<const std::byte*>(data->data()); }
  std::byte* mutable_bytes() { return reinterpret_cast<std::byte*>(data->data()); }
  template <typename T>
  const T* as() const {
    return reinterpret_cast<const T*>(data->data());
  }
  template <typename T>
  T* as_mutable() {
    return reinterpret_cast<T*>(data->data());
  }
};

/// A matrix of `desc` whose bytes are allocated but not initialised. RESOURCE_EXHAUSTED if
/// the host cannot allocate them.
absl::StatusOr<HostMatrix> allocate_matrix(const MatrixDesc& desc);

}  // namespace gcompute::server
