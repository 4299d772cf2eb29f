// SPDX-License-Identifier: Apache-2.0
// Early returns for absl::Status and absl::StatusOr, used by every layer (kernels, server,
// client). They keep the error path one line long without hiding what is returned.
#pragma once

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define GC_STATUS_CONCAT_INNER_(a, b) a##b
#define GC_STATUS_CONCAT_(a, b) GC_STATUS_CONCAT_INNER_(a, b)

/// Evaluates the expression (an absl::Status) once and returns it from the enclosing function
/// when it is not OK. Variadic so that an expression with commas (a lambda) needs no parentheses.
#define GC_RETURN_IF_ERROR(...)                                        \
  do {                                                                 \
    if (::absl::Status gc_status_ = (__VA_ARGS__); !gc_status_.ok()) { \
      return gc_status_;                                               \
    }                                                                  \
  } while (0)

/// `GC_ASSIGN_OR_RETURN(auto x, f());` or `GC_ASSIGN_OR_RETURN(x, f());`: evaluates the
/// absl::StatusOr once; returns its status when not OK, else moves its value into the lhs.
/// The expression may contain commas (a lambda).
#define GC_ASSIGN_OR_RETURN(lhs, ...) \
  GC_ASSIGN_OR_RETURN_IMPL_(GC_STATUS_CONCAT_(gc_status_or_, __LINE__), lhs, (__VA_ARGS__))

#define GC_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr)     \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = *std::move(statusor)
