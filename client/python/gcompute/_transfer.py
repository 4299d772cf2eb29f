# SPDX-License-Identifier: Apache-2.0
"""Matrices moved between the client and one replica: chunked UploadMatrix / DownloadMatrix
streams, deletion, results taken inline or downloaded, and operands placed inline or uploaded
(client/lib/matrix_transfer.cc and operand_stager.cc of the C++ client, in Python)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, List, Optional, Sequence, Tuple

import grpc
import numpy as np

from . import _arrays, _pb
from ._replicas import Deadline, Replica
from .errors import Internal
from .types import Ref

#: Progress of a transfer: (bytes done, bytes in total).
ProgressCallback = Callable[[int, int], None]

#: Deleting temporary server matrices must not fail because the call's own deadline passed;
#: the server's TTL is the backstop if this one runs out too.
CLEANUP_TIMEOUT_SECONDS = 30.0


@dataclass
class Transfer:
    """The replica, deadline, chunk size, metadata and progress callback of one call."""

    replica: Replica
    deadline: Deadline
    chunk_bytes: int
    metadata: Sequence[Tuple[str, str]]
    progress: Optional[ProgressCallback]
    multi_replica: bool

    def ref_from(self, stored) -> Ref:
        """A Ref for a gcompute.v1.StoredMatrix this replica returned."""
        s = stored.shape
        batch = s.batch or 1
        shape = (batch, s.rows, s.cols) if batch > 1 else (s.rows, s.cols)
        return Ref(stored.ref.id, shape, _arrays.dtype_name(s.dtype), stored.expires_at_unix_ms,
                   stored.size_bytes, self.replica.name if self.multi_replica else None)


def upload(t: Transfer, a: np.ndarray, name: str, ttl_seconds: int) -> Ref:
    """Uploads a prepared array (see _arrays.as_matrix_array) in chunks of t.chunk_bytes."""
    batch, rows, cols = _arrays.shape3(a)
    data = memoryview(a.reshape(-1).view(np.uint8))
    total = len(data)

    def requests() -> Iterator:
        header = _pb.matrices.UploadMatrixRequest()
        header.header.shape.batch = batch
        header.header.shape.rows = rows
        header.header.shape.cols = cols
        header.header.shape.dtype = _arrays.wire_dtype(name)
        header.header.ttl_seconds = int(ttl_seconds)
        yield header
        if t.progress:
            t.progress(0, total)
        for offset in range(0, total, t.chunk_bytes):
            chunk = _pb.matrices.UploadMatrixRequest()
            chunk.chunk.offset = offset
            chunk.chunk.data = bytes(data[offset:offset + t.chunk_bytes])
            yield chunk
            if t.progress:
                t.progress(min(offset + t.chunk_bytes, total), total)

    response = t.replica.stub.UploadMatrix(requests(), timeout=t.deadline.remaining(),
                                           metadata=t.metadata)
    return t.ref_from(response.matrix)


def download(t: Transfer, matrix_id: str) -> np.ndarray:
    """Downloads a stored matrix as a (batch, rows, cols) array, checking that the chunks
    follow each other and add up to the header's shape."""
    request = _pb.matrices.DownloadMatrixRequest(chunk_bytes=t.chunk_bytes)
    request.ref.id = matrix_id
    stream = t.replica.stub.DownloadMatrix(request, timeout=t.deadline.remaining(),
                                           metadata=t.metadata)
    out: Optional[np.ndarray] = None
    flat: Optional[np.ndarray] = None
    received = 0
    try:
        for part in stream:
            which = part.WhichOneof("part")
            if which == "header":
                if out is not None:
                    raise Internal("download stream sent a second header")
                s = part.header.shape
                out = _arrays.empty_for(s.batch, s.rows, s.cols, s.dtype, f"download header of {matrix_id}")
                flat = out.reshape(-1).view(np.uint8)
                if t.progress:
                    t.progress(0, flat.size)
            elif which == "chunk":
                c = part.chunk
                if flat is None or c.offset != received or len(c.data) > flat.size - received:
                    raise Internal(f"download chunk at offset {c.offset} of {len(c.data)} bytes does not "
                                   f"follow byte {received} of {0 if flat is None else flat.size}")
                flat[received:received + len(c.data)] = np.frombuffer(c.data, dtype=np.uint8)
                received += len(c.data)
                if t.progress:
                    t.progress(received, flat.size)
    except Internal:
        stream.cancel()
        raise
    if out is None or flat is None:
        raise Internal("download stream ended without a header")
    if received != flat.size:
        raise Internal(f"download stream ended after {received} of {flat.size} bytes")
    return out


def delete(replica: Replica, matrix_id: str, timeout: Optional[float],
           metadata: Sequence[Tuple[str, str]]) -> None:
    request = _pb.matrices.DeleteMatrixRequest()
    request.ref.id = matrix_id
    replica.stub.DeleteMatrix(request, timeout=timeout, metadata=metadata)


def delete_quietly(t: Transfer, matrix_id: str) -> None:
    """Best effort: temporary matrices have a TTL on the server anyway."""
    try:
        delete(t.replica, matrix_id, CLEANUP_TIMEOUT_SECONDS, t.metadata)
    except grpc.RpcError:
        pass


def take_result(t: Transfer, result, what: str) -> np.ndarray:
    """The (batch, rows, cols) array of a gcompute.v1.MatrixResult: inline, or stored
    (downloaded, then deleted)."""
    which = result.WhichOneof("value")
    if which == "inline":
        return _arrays.from_matrix(result.inline, what)
    if which == "stored":
        matrix_id = result.stored.ref.id
        try:
            return download(t, matrix_id)
        finally:
            delete_quietly(t, matrix_id)
    raise Internal(f"server response has no {what}")


def take_results(t: Transfer, *results) -> List[np.ndarray]:
    """take_result of each (MatrixResult, what) pair, in order; every stored one is deleted,
    also those after one that failed."""
    pending = [r.stored.ref.id for r, _ in results if r.WhichOneof("value") == "stored"]
    try:
        taken = []
        for result, what in results:
            taken.append(take_result(t, result, what))  # deletes its own stored matrix
            if result.WhichOneof("value") == "stored":
                pending.remove(result.stored.ref.id)
        return taken
    finally:
        for matrix_id in pending:
            delete_quietly(t, matrix_id)


def take_stored(t: Transfer, result, what: str) -> Ref:
    """The Ref of a result requested with PLACEMENT_STORED."""
    if result.WhichOneof("value") != "stored":
        raise Internal(f"server returned {what} inline despite PLACEMENT_STORED")
    return t.ref_from(result.stored)


def refused_stored_results(error: grpc.RpcError) -> bool:
    """Whether a call was refused for the stored-matrix quota (the server's or the tenant's)."""
    return (error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            and "stored-matrix quota" in (error.details() or ""))


class OperandStager:
    """Places the operands of one request on one replica: inline, or uploaded as a chunk stream
    and referenced with MatrixRef.release (the server drops them as it reads them) when an
    operand is larger than one chunk or while the inline bytes exceed the limit (largest
    first). A protobuf message carrying a large matrix is coded and copied whole on both sides;
    a stream moves it chunk by chunk. The uploads served this request only: when the call did
    not succeed, closing the stager deletes them. With stream_results, results expected above
    one chunk are asked for as stored matrices (downloaded as streams, then deleted); where
    the store's quota refuses them, the call is made again with the results in the response
    (refused_stored_results)."""

    def __init__(self, t: Transfer, inline_limit_bytes: int, stream_results: bool = True) -> None:
        self._t = t
        self._limit = inline_limit_bytes
        self._stream_results = stream_results
        self.stores_results = False  # whether expect_result asked for a stored result
        self._slots: List[Tuple[object, Callable, Callable]] = []
        self._uploaded: List[str] = []

    def add(self, operand, as_matrix: Callable, as_ref: Callable) -> None:
        """Registers an operand: a Ref, or a prepared (array, dtype name) pair. as_matrix() /
        as_ref() return the proto field to fill; only the one of the chosen form is called."""
        self._slots.append((operand, as_matrix, as_ref))

    def add_operand(self, operand, field) -> None:
        """Registers an operand for a gcompute.v1.Operand field."""
        self.add(operand, lambda: field.inline, lambda: field.ref)

    def expect_result(self, output, nbytes: int) -> None:
        """Results of about `nbytes` go to gcompute.v1.OutputOptions `output` (left AUTO by the
        caller): above one chunk they are stored, for take_result to download and delete."""
        if (self._stream_results and nbytes > self._t.chunk_bytes
                and output.placement == _pb.types.OutputOptions.PLACEMENT_AUTO):
            output.placement = _pb.types.OutputOptions.PLACEMENT_STORED
            self.stores_results = True

    def place(self) -> None:
        host = []
        inline_bytes = 0
        for operand, as_matrix, as_ref in self._slots:
            if isinstance(operand, Ref):
                as_ref().id = operand.id
            else:
                inline_bytes += operand[0].nbytes
                host.append((operand, as_matrix, as_ref))
        host.sort(key=lambda s: s[0][0].nbytes, reverse=True)
        for (array, name), as_matrix, as_ref in host:
            if inline_bytes > self._limit or array.nbytes > self._t.chunk_bytes:
                ref = upload(self._t, array, name, 0)
                self._uploaded.append(ref.id)
                field = as_ref()
                field.id = ref.id
                field.release = True
                inline_bytes -= array.nbytes
            else:
                _arrays.to_matrix(array, name, as_matrix())

    def close(self) -> None:
        for matrix_id in self._uploaded:
            delete_quietly(self._t, matrix_id)
        self._uploaded.clear()

    def __enter__(self) -> "OperandStager":
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is None:  # the call succeeded: the server has read, and released, them
            self._uploaded.clear()
        self.close()
