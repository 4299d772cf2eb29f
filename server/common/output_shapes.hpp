// SPDX-License-Identifier: Apache-2.0
// The shapes of operation results, derived from validated kernel shapes. The ops layer plans
// placement with them and the backends allocate with them, so both agree by construction.
#pragma once

#include <algorithm>

#include "common/matrix.hpp"
#include "gcompute/kernels/eigh_types.hpp"
#include "gcompute/kernels/matmul_types.hpp"
#include "gcompute/kernels/svd_types.hpp"

namespace gcompute::server {

inline MatrixDesc transpose_output(const MatrixDesc& a) {
  return MatrixDesc{a.dtype, a.batch, a.cols, a.rows};
}

inline MatrixDesc matmul_output(const kernels::MatmulShape& s) {
  return MatrixDesc{s.dtype, s.batch, s.m, s.n};
}

struct SvdOutputDescs {
  MatrixDesc s, u, vt;
};

inline SvdOutputDescs svd_outputs(const kernels::SvdShape& s) {
  const std::int64_t p = std::min(s.m, s.n);
  return SvdOutputDescs{MatrixDesc{s.dtype, s.batch, 1, p},
                        MatrixDesc{s.dtype, s.batch, s.m, kernels::svd_u_cols(s)},
                        MatrixDesc{s.dtype, s.batch, kernels::svd_vt_rows(s), s.n}};
}

struct EighOutputDescs {
  MatrixDesc w, v;
};

inline EighOutputDescs eigh_outputs(const kernels::EighShape& s) {
  return EighOutputDescs{MatrixDesc{s.dtype, s.batch, 1, s.n},
                         MatrixDesc{s.dtype, s.batch, s.n, s.n}};
}

}  // namespace gcompute::server
