// SPDX-License-Identifier: Apache-2.0
#include "common/matrix.hpp"

#include <new>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace gcompute::server {

std::string describe(const MatrixDesc& d) {
  if (d.batch == 1) return absl::StrCat(d.rows, "x", d.cols, " ", kernels::dtype_name(d.dtype));
  return absl::StrCat(d.batch, " x ", d.rows, "x", d.cols, " ", kernels::dtype_name(d.dtype));
}

absl::StatusOr<Matrix> allocate_matrix(const MatrixDesc& desc) {
  Matrix m{desc, nullptr, nullptr};
  try {
    // resize_and_overwrite would skip the zero fill, but libstdc++ 12 lacks it; zeroing is
    // a single memset pass, cheap next to any operation we run.
    m.data = std::make_shared<std::string>(desc.bytes(), '\0');
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat("out of host memory allocating ", desc.bytes(),
                                                     " bytes for ", describe(desc)));
  } catch (const std::length_error&) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate ", desc.bytes(), " bytes for ", describe(desc)));
  }
  return m;
}

absl::StatusOr<std::optional<Matrix>> allocate_matrix_if(bool wanted, const MatrixDesc& desc) {
  if (!wanted) return std::nullopt;
  return allocate_matrix(desc);
}

absl::Status own_host_bytes(Matrix& m) {
  if (m.data != nullptr || m.view == nullptr) return absl::OkStatus();
  try {
    m.data =
        std::make_shared<std::string>(reinterpret_cast<const char*>(m.view.get()), m.desc.bytes());
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat("out of host memory copying ", m.desc.bytes(),
                                                     " bytes of ", describe(m.desc)));
  }
  m.view.reset();
  m.view_pinned = false;
  return absl::OkStatus();
}

}  // namespace gcompute::server
