// SPDX-License-Identifier: Apache-2.0
// fuzz_requests' first input byte (modulo kRequestKinds): which request message follows.
// Shared with make_corpus.cc, which writes the seeds.
#pragma once

#include <cstdint>

namespace gcompute::fuzz {

enum RequestKind : std::uint8_t {
  kTranspose,
  kMatMul,
  kSvd,
  kBatchedSvd,
  kEigh,
  kApsp,
  kShortestPath,
  kUploadHeader,  ///< UploadMatrixRequest.Header, the stream's first message
  kDownloadMatrix,
  kDeleteMatrix,
  kCreateGraph,
  kGetGraph,
  kListGraphs,
  kDeleteGraph,
  kApplyEdits,
  kSubmitJob,
  kGetJob,
  kWatchJob,
  kCancelJob,
  kListJobs,
  kSssp,  ///< after the others: the seeds' first bytes keep their kinds
  kRequestKinds
};

inline const char* request_kind_name(RequestKind kind) {
  constexpr const char* kNames[kRequestKinds] = {
      "Transpose",   "MatMul",       "Svd",          "BatchedSvd",     "Eigh",
      "Apsp",        "ShortestPath", "UploadMatrix", "DownloadMatrix", "DeleteMatrix",
      "CreateGraph", "GetGraph",     "ListGraphs",   "DeleteGraph",    "ApplyEdits",
      "SubmitJob",   "GetJob",       "WatchJob",     "CancelJob",      "ListJobs",
      "Sssp"};
  return kind < kRequestKinds ? kNames[kind] : "?";
}

}  // namespace gcompute::fuzz
