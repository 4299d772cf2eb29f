// SPDX-License-Identifier: Apache-2.0
// Kept here so the CUDA kernels library always has one translation unit; see cuda/*.cu.
#include "gcompute/kernels/cuda/check.hpp"
