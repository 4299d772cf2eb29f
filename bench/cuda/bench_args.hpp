// SPDX-License-Identifier: Apache-2.0
// Command-line arguments the GPU benchmarks share: `bench [CSV] [SIZES] ...`.
#pragma once

#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

namespace gcompute::bench {

/// argv[1], else `file_name` in $OUT (the device machine's result folder), else in the
/// working directory.
inline std::string csv_path_arg(int argc, char** argv, const char* file_name) {
  if (argc > 1) return argv[1];
  const char* out_dir = std::getenv("OUT");
  return std::string(out_dir != nullptr ? out_dir : ".") + "/" + file_name;
}

/// argv[2] as a comma-separated list of integers, else `defaults`.
template <typename Int>
std::vector<Int> sizes_arg(int argc, char** argv, std::vector<Int> defaults) {
  static_assert(std::is_integral_v<Int>);
  if (argc <= 2) return defaults;
  std::vector<Int> sizes;
  const std::string list = argv[2];
  for (std::size_t p = 0; p < list.size();) {
    std::size_t q = list.find(',', p);
    if (q == std::string::npos) q = list.size();
    const std::string item = list.substr(p, q - p);
    if constexpr (std::is_signed_v<Int>) {
      sizes.push_back(static_cast<Int>(std::strtoll(item.c_str(), nullptr, 10)));
    } else {
      sizes.push_back(static_cast<Int>(std::strtoull(item.c_str(), nullptr, 10)));
    }
    p = q + 1;
  }
  return sizes;
}

}  // namespace gcompute::bench
