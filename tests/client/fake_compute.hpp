// SPDX-License-Identifier: Apache-2.0
// An in-process fake of the Compute service for client tests: stores uploaded matrices,
// computes transpose and matmul with plain loops, can return results as stored matrices.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gcompute/v1/service.grpc.pb.h"

namespace gcompute::client::fake {

namespace pb = ::gcompute::v1;

class FakeCompute final : public pb::Compute::Service {
 public:
  std::mutex mu;
  std::map<std::string, pb::Matrix> stored;
  int uploads = 0;
  std::vector<std::size_t> upload_chunk_sizes;
  int downloads = 0;
  int deletes = 0;
  std::vector<std::string> operand_kinds;  // "inline" or "ref", per operand received
  std::size_t store_results_above = SIZE_MAX;
  std::vector<pb::OutputOptions::Placement> placements;  // asked for, per result
  /// Refuses results asked for as PLACEMENT_STORED as a full store does.
  bool refuse_stored_results = false;
  /// Prepended to the ids this fake issues (several fakes must not issue the same ids).
  std::string id_prefix;
  int transposes = 0;

  grpc::Status UploadMatrix(grpc::ServerContext*, grpc::ServerReader<pb::UploadMatrixRequest>* r,
                            pb::UploadMatrixResponse* response) override {
    pb::UploadMatrixRequest part;
    if (!r->Read(&part) || !part.has_header()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "first message must be a header");
    }
    pb::Matrix m;
    m.set_batch(part.header().shape().batch());
    m.set_rows(part.header().shape().rows());
    m.set_cols(part.header().shape().cols());
    m.set_dtype(part.header().shape().dtype());
    const std::size_t batch = m.batch() == 0 ? 1 : static_cast<std::size_t>(m.batch());
    m.mutable_data()->assign(batch * m.rows() * m.cols() * 4, '\0');
    std::size_t covered = 0;
    std::vector<std::size_t> sizes;
    while (r->Read(&part)) {
      const auto& c = part.chunk();
      if (c.offset() + c.data().size() > m.data().size()) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "chunk out of range");
      }
      std::memcpy(m.mutable_data()->data() + c.offset(), c.data().data(), c.data().size());
      covered += c.data().size();
      sizes.push_back(c.data().size());
    }
    if (covered != m.data().size()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "chunks do not cover the data");
    }
    std::lock_guard<std::mutex> lock(mu);
    const std::string id = id_prefix + "up" + std::to_string(++uploads);
    upload_chunk_sizes = sizes;
    fill_stored(id, m, response->mutable_matrix());
    stored[id] = std::move(m);
    return grpc::Status::OK;
  }

  grpc::Status DownloadMatrix(grpc::ServerContext*, const pb::DownloadMatrixRequest* request,
                              grpc::ServerWriter<pb::DownloadMatrixResponse>* w) override {
    pb::Matrix m;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = stored.find(request->ref().id());
      if (it == stored.end()) return not_found(request->ref().id());
      m = it->second;
      ++downloads;
    }
    pb::DownloadMatrixResponse header;
    fill_stored(request->ref().id(), m, header.mutable_header());
    w->Write(header);
    const std::size_t chunk = request->chunk_bytes() ? request->chunk_bytes() : 4 << 20;
    for (std::size_t off = 0; off < m.data().size(); off += chunk) {
      pb::DownloadMatrixResponse part;
      part.mutable_chunk()->set_offset(off);
      part.mutable_chunk()->set_data(m.data().substr(off, chunk));
      w->Write(part);
    }
    return grpc::Status::OK;
  }

  grpc::Status DeleteMatrix(grpc::ServerContext*, const pb::DeleteMatrixRequest* request,
                            pb::DeleteMatrixResponse*) override {
    std::lock_guard<std::mutex> lock(mu);
    if (stored.erase(request->ref().id()) == 0) return not_found(request->ref().id());
    ++deletes;
    return grpc::Status::OK;
  }

  grpc::Status Transpose(grpc::ServerContext*, const pb::TransposeRequest* request,
                         pb::TransposeResponse* response) override {
    pb::Matrix a;
    if (grpc::Status s = operand(request->a(), a); !s.ok()) return s;
    {
      std::lock_guard<std::mutex> lock(mu);
      ++transposes;
    }
    pb::Matrix t = a;
    t.set_rows(a.cols());
    t.set_cols(a.rows());
    for (int64_t i = 0; i < a.rows(); ++i) {
      for (int64_t j = 0; j < a.cols(); ++j) {
        std::memcpy(t.mutable_data()->data() + (j * a.rows() + i) * 4,
                    a.data().data() + (i * a.cols() + j) * 4, 4);
      }
    }
    if (grpc::Status s = put_result(std::move(t), request->output(), response->mutable_at());
        !s.ok()) {
      return s;
    }
    response->mutable_stats()->set_device("fake");
    return grpc::Status::OK;
  }

  grpc::Status MatMul(grpc::ServerContext*, const pb::MatMulRequest* request,
                      pb::MatMulResponse* response) override {
    pb::Matrix a, b;
    if (grpc::Status s = operand(request->a(), a); !s.ok()) return s;
    if (grpc::Status s = operand(request->b(), b); !s.ok()) return s;
    if (a.cols() != b.rows()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "A is " + std::to_string(a.rows()) + "x" + std::to_string(a.cols()) +
                              " but B is " + std::to_string(b.rows()) + "x" +
                              std::to_string(b.cols()));
    }
    pb::Matrix c;
    c.set_rows(a.rows());
    c.set_cols(b.cols());
    c.set_dtype(pb::DTYPE_F32);
    std::vector<float> av(a.rows() * a.cols()), bv(b.rows() * b.cols()), cv(a.rows() * b.cols());
    std::memcpy(av.data(), a.data().data(), a.data().size());
    std::memcpy(bv.data(), b.data().data(), b.data().size());
    for (int64_t i = 0; i < a.rows(); ++i) {
      for (int64_t j = 0; j < b.cols(); ++j) {
        float sum = 0;
        for (int64_t k = 0; k < a.cols(); ++k) sum += av[i * a.cols() + k] * bv[k * b.cols() + j];
        cv[i * b.cols() + j] = sum;
      }
    }
    c.set_data(std::string(reinterpret_cast<const char*>(cv.data()), cv.size() * 4));
    if (grpc::Status s = put_result(std::move(c), request->output(), response->mutable_c());
        !s.ok()) {
      return s;
    }
    return grpc::Status::OK;
  }

  // Sleeps past any short deadline, then answers; used to check client deadlines.
  grpc::Status Svd(grpc::ServerContext* context, const pb::SvdRequest*, pb::SvdResponse*) override {
    for (int i = 0; i < 200 && !context->IsCancelled(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return grpc::Status(grpc::StatusCode::INTERNAL, "the fake Svd should have been cut short");
  }

  grpc::Status GetGraph(grpc::ServerContext*, const pb::GetGraphRequest* request,
                        pb::GetGraphResponse*) override {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        "graph '" + request->graph_id() + "' not found");
  }

 private:
  static grpc::Status not_found(const std::string& id) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "matrix '" + id + "' not found");
  }
  static void fill_stored(const std::string& id, const pb::Matrix& m, pb::StoredMatrix* s) {
    s->mutable_ref()->set_id(id);
    s->mutable_shape()->set_batch(m.batch());
    s->mutable_shape()->set_rows(m.rows());
    s->mutable_shape()->set_cols(m.cols());
    s->mutable_shape()->set_dtype(m.dtype());
    s->set_size_bytes(m.data().size());
  }
  grpc::Status operand(const pb::Operand& o, pb::Matrix& out) {
    std::lock_guard<std::mutex> lock(mu);
    if (o.has_inline_()) {
      operand_kinds.push_back("inline");
      out = o.inline_();
      return grpc::Status::OK;
    }
    operand_kinds.push_back(o.ref().release() ? "released ref" : "ref");
    auto it = stored.find(o.ref().id());
    if (it == stored.end()) return not_found(o.ref().id());
    out = it->second;
    if (o.ref().release()) stored.erase(it);  // as the server does: gone as it is read
    return grpc::Status::OK;
  }
  grpc::Status put_result(pb::Matrix m, const pb::OutputOptions& output, pb::MatrixResult* result) {
    std::lock_guard<std::mutex> lock(mu);
    placements.push_back(output.placement());
    if (refuse_stored_results && output.placement() == pb::OutputOptions::PLACEMENT_STORED) {
      return grpc::Status(
          grpc::StatusCode::RESOURCE_EXHAUSTED,
          "stored-matrix quota exceeded: " + std::to_string(m.data().size()) + " bytes requested");
    }
    if (m.data().size() > store_results_above ||
        output.placement() == pb::OutputOptions::PLACEMENT_STORED) {
      const std::string id = id_prefix + "res" + std::to_string(stored.size() + 1000);
      fill_stored(id, m, result->mutable_stored());
      stored[id] = std::move(m);
    } else {
      *result->mutable_inline_() = std::move(m);
    }
    return grpc::Status::OK;
  }
};

}  // namespace gcompute::client::fake
