// SPDX-License-Identifier: Apache-2.0
// Shared by the matmul tests (cpu::matmul and the backend contract): a MatmulShape put together
// from the parts their case tables vary one at a time.
#pragma once

#include <cstdint>

#include "gcompute/kernels/matmul_types.hpp"

namespace gcompute::kernels::matmul_test {

struct Dims {
  std::int64_t m, n, k;
};
struct Batch {
  std::int64_t batch, a_batch, b_batch;
};
struct Scale {
  double alpha, beta;
};

inline MatmulShape make_shape(const Dims& d, const Batch& b, bool ta, bool tb, const Scale& sc,
                              DType dtype, Precision p) {
  return {.batch = b.batch,
          .a_batch = b.a_batch,
          .b_batch = b.b_batch,
          .m = d.m,
          .n = d.n,
          .k = d.k,
          .transpose_a = ta,
          .transpose_b = tb,
          .dtype = dtype,
          .precision = p,
          .alpha = sc.alpha,
          .beta = sc.beta};
}

}  // namespace gcompute::kernels::matmul_test
