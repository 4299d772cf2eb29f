// SPDX-License-Identifier: Apache-2.0
// Command-line arguments the GPU benchmarks share (`bench [CSV] [SIZES] ...`, or
// `bench [CSV] [MAX_N] [SECTIONS]` for the solvers) and the CSV file they write.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace gcompute::bench {

/// argv[1] unless empty (an empty one lets later arguments follow), else `file_name` in $OUT
/// (the device machine's result folder), else in the working directory.
inline std::string csv_path_arg(int argc, char** argv, const char* file_name) {
  if (argc > 1 && argv[1][0] != '\0') return argv[1];
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

/// The solver benchmarks' arguments, `bench [CSV] [MAX_N] [SECTIONS]`: the CSV path as
/// csv_path_arg() finds it, the largest matrix order to run, and words that pick what runs
/// (such as "square,batched" or "f32,noref"; each is looked up as a substring).
struct SolverArgs {
  SolverArgs(int argc, char** argv, const char* csv_name, int default_max_n,
             std::string default_sections)
      : csv(csv_path_arg(argc, argv, csv_name)),
        max_n(argc > 2 ? std::atoi(argv[2]) : default_max_n),
        sections(argc > 3 ? argv[3] : std::move(default_sections)) {}

  bool has(const char* word) const { return sections.find(word) != std::string::npos; }
  /// Both element types, unless exactly one of "f32" and "f64" is named.
  bool wants_f32() const { return has("f32") || !has("f64"); }
  bool wants_f64() const { return has("f64") || !has("f32"); }

  std::string csv;
  int max_n;
  std::string sections;
};

/// A benchmark's CSV output: `header`, then one line() a row. Where `path` cannot be opened
/// nothing is written and is_open() says so; the table on stdout has the same results.
class CsvFile {
 public:
  CsvFile(const std::string& path, const char* header) : file_(std::fopen(path.c_str(), "w")) {
    if (file_ != nullptr) std::fputs(header, file_);
  }
  ~CsvFile() {
    if (file_ != nullptr) std::fclose(file_);
  }
  CsvFile(const CsvFile&) = delete;
  CsvFile& operator=(const CsvFile&) = delete;

  bool is_open() const { return file_ != nullptr; }

  /// printf-style; the format ends the line itself.
  __attribute__((format(printf, 2, 3))) void line(const char* format, ...) {
    if (file_ == nullptr) return;
    va_list args;
    va_start(args, format);
    std::vfprintf(file_, format, args);
    va_end(args);
  }

 private:
  std::FILE* file_;
};

}  // namespace gcompute::bench
