// SPDX-License-Identifier: Apache-2.0
// placeholder (replaced by the CPU kernels work)
