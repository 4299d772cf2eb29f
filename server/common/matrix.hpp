// SPDX-License-Identifier: Apache-2.0
// Matrices as the engine sees them: a shape plus bytes in host memory (a std::string, so
// protobuf `bytes` fields swap in and out without copies) and/or a copy on a GPU. Stored
// results of the CUDA backend stay on the device until someone needs their bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
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
};

/// "3x4 f32" or "5 x 3x4 f64" for messages.
std::string describe(const MatrixDesc& d);

/// Device memory holding a matrix's bytes. A DeviceCopy only describes the memory: whoever
/// made the shared_ptr that holds it owns the memory through that shared_ptr (the CUDA backend
/// allocates the two together and frees the memory when the last reference goes).
struct DeviceCopy {
  int device = 0;
  void* ptr = nullptr;
  std::uint64_t bytes = 0;
  DeviceCopy() = default;
  DeviceCopy(const DeviceCopy&) = delete;
  DeviceCopy& operator=(const DeviceCopy&) = delete;
};

/// A matrix with its data: host bytes, a device copy, or both. Inputs may share their bytes
/// with the matrix store (hence shared_ptr); results are uniquely owned until encoded. An input
/// may instead be a read-only view of host memory the server does not own (a client's
/// shared-memory region), kept mapped by `view`.
struct Matrix {
  MatrixDesc desc;
  std::shared_ptr<std::string> data;      ///< host bytes; null when only on a device or a view
  std::shared_ptr<DeviceCopy> device;     ///< null when only on the host
  std::shared_ptr<const std::byte> view;  ///< host bytes owned elsewhere; null unless a view
  bool view_pinned = false;  ///< the view is page-locked: device copies may go straight from it

  bool on_host() const { return data != nullptr || view != nullptr; }
  const std::byte* bytes() const {
    return view ? view.get() : reinterpret_cast<const std::byte*>(data->data());
  }
  std::byte* mutable_bytes() { return reinterpret_cast<std::byte*>(data->data()); }
  template <typename T>
  const T* as() const {
    return reinterpret_cast<const T*>(bytes());
  }
  template <typename T>
  T* as_mutable() {
    return reinterpret_cast<T*>(data->data());
  }
};

/// Turns a view into host bytes of its own (a copy); anything else is left as it is. For
/// results that must outlive the view (inline or stored).
absl::Status own_host_bytes(Matrix& m);

/// A host matrix of `desc` (bytes zero-filled). RESOURCE_EXHAUSTED if the host cannot
/// allocate them.
absl::StatusOr<Matrix> allocate_matrix(const MatrixDesc& desc);
/// allocate_matrix(desc) where `wanted`, else no matrix: an optional output not asked for.
absl::StatusOr<std::optional<Matrix>> allocate_matrix_if(bool wanted, const MatrixDesc& desc);
/// The host bytes of an optional output, or null where there is none.
inline std::byte* mutable_bytes_or_null(std::optional<Matrix>& m) {
  return m ? m->mutable_bytes() : nullptr;
}

}  // namespace gcompute::server
