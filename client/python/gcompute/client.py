# SPDX-License-Identifier: Apache-2.0
"""gcompute.Client: the operations of a gcompute server with NumPy arrays in and out.

Routing, chunked transfers and deadlines follow the C++ client (client/include/gcompute/
client/client.hpp); docs/python.md walks through the API.
"""
from __future__ import annotations

import os
import secrets
import threading
from typing import (Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union)

import grpc
import numpy as np

from . import _arrays, _convert, _pb, _transfer, jobs
from ._replicas import Deadline, Replica, ReplicaSet, Route
from ._transfer import OperandStager, ProgressCallback, Transfer
from .errors import Aborted, Internal, InvalidArgument, NotFound, SvdNotConverged
from .types import (Edit, EditsResult, GraphInfo, GraphSnapshot, Path, Ref, ServerInfo,
                    SsspResult, StoredApsp)

MiB = 1 << 20

#: An operand: an array-like (converted to a NumPy array) or a matrix stored on the server.
ArrayOrRef = Union[np.ndarray, Ref, Any]

_HEALTH_STATES = {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}
_SVD_METHODS = {"auto": 0, "jacobi": 1, "polar": 2}  # proto SvdMethod


# The operations Client.submit runs as jobs (the methods of these names).
_JOB_OPERATIONS = ("transpose", "matmul", "svd", "batched_svd", "eigh", "apsp", "shortest_path",
                   "sssp")


class Client:
    """A connection to one gcompute server or to several replicas.

    target: "HOST:PORT"; several as "a:1,b:2"; or "dns:///NAME:PORT" (resolved once, here, to
      every address of NAME). Stateless calls are spread round robin and fail over to the next
      replica on UNAVAILABLE; graph calls go to the graph id's owner (gcompute.routing);
      calls with a Ref go to the replica that created it (docs/deployment.md).
    tls_ca: None for plaintext; a PEM file path or PEM bytes of the CA that signed the server's
      certificate; True for the system's root CAs.
    tls_server_name: the name the server's certificate is checked against, when it is not the
      target's host (e.g. a list of IP addresses).
    tls_cert, tls_key: the client certificate and its key (PEM file paths or PEM bytes), for
      servers that require mutual TLS (--tls-client-ca); both or neither, with tls_ca.
    token: sent as "authorization: Bearer TOKEN" metadata on every call.
    timeout: seconds each call may take in all (uploads and downloads included); None: no
      deadline. Every method takes timeout= to override it.
    max_message_bytes: the largest message; should match the server's --max-message-bytes.
    inline_limit_bytes: requests whose inline matrices exceed it upload the largest operands
      first (chunked UploadMatrix streams, deleted after the call); None selects
      min(max_message_bytes / 2, 64 MiB).
    chunk_bytes: bytes per chunk of uploads and downloads (at most max_message_bytes / 2).
    progress: called as progress(done_bytes, total_bytes) during transfers (for uploads, from
      the gRPC thread that sends the chunks).
    interceptors: grpc client interceptors applied to every channel.

    Thread-safe. Use as a context manager, or call close().
    """

    def __init__(self, target: str = "127.0.0.1:50051", *,
                 tls_ca: Union[None, bool, str, bytes, "os.PathLike[str]"] = None,
                 tls_server_name: Optional[str] = None,
                 tls_cert: Union[None, str, bytes, "os.PathLike[str]"] = None,
                 tls_key: Union[None, str, bytes, "os.PathLike[str]"] = None,
                 token: Optional[str] = None,
                 timeout: Optional[float] = None, max_message_bytes: int = 256 * MiB,
                 inline_limit_bytes: Optional[int] = None, chunk_bytes: int = 4 * MiB,
                 progress: Optional[ProgressCallback] = None,
                 interceptors: Sequence[object] = ()) -> None:
        if max_message_bytes < 2:
            raise InvalidArgument(f"max_message_bytes must be at least 2; got {max_message_bytes}")
        self._timeout = timeout
        self._max_message_bytes = int(max_message_bytes)
        self._inline_limit = (min(self._max_message_bytes // 2, 64 * MiB) if inline_limit_bytes is None
                              else int(inline_limit_bytes))
        # A chunk plus its framing must fit in one message on both sides.
        self._chunk_bytes = max(1, min(int(chunk_bytes) or 4 * MiB, self._max_message_bytes // 2))
        self._progress = progress
        self._metadata: Tuple[Tuple[str, str], ...] = ()
        if token is not None:
            if not token or any(c.isspace() or not c.isprintable() or ord(c) > 126 for c in token):
                raise InvalidArgument("token must be non-empty printable ASCII without spaces")
            self._metadata = (("authorization", f"Bearer {token}"),)
        options: List[Tuple[str, object]] = [
            ("grpc.max_send_message_length", min(self._max_message_bytes, 2**31 - 1)),
            ("grpc.max_receive_message_length", min(self._max_message_bytes, 2**31 - 1)),
            # Connections of its own: a server authenticates one credential per connection,
            # and gRPC would share one among the clients of a process (docs/security.md).
            ("grpc.use_local_subchannel_pool", 1),
        ]
        credentials = None
        if (tls_cert is None) != (tls_key is None):
            raise InvalidArgument("tls_cert and tls_key go together: give both or neither")
        if tls_cert is not None and (tls_ca is None or tls_ca is False):
            raise InvalidArgument("tls_cert needs tls_ca (True for the system's root CAs)")
        if tls_ca is not None and tls_ca is not False:
            credentials = grpc.ssl_channel_credentials(
                root_certificates=_read_pem(tls_ca),
                private_key=None if tls_key is None else _read_pem(tls_key),
                certificate_chain=None if tls_cert is None else _read_pem(tls_cert))
            if tls_server_name:
                options.append(("grpc.ssl_target_name_override", tls_server_name))
        elif tls_server_name:
            raise InvalidArgument("tls_server_name needs tls_ca")
        self._replicas = ReplicaSet(target, credentials=credentials, options=options,
                                    interceptors=interceptors)
        self._local = threading.local()  # submit(): the job options of this thread's call

    # --- lifetime and replicas ---------------------------------------------------------------

    def close(self) -> None:
        """Closes every channel."""
        self._replicas.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def replicas(self) -> List[str]:
        """The replica names the target expanded to (one for a single server)."""
        return list(self._replicas.names)

    def replica_for_graph(self, graph_id: str) -> str:
        """The replica that graph calls for `graph_id` go to."""
        return self._replicas.names[self._replicas.route_for_graph(graph_id).fixed or 0]

    # --- the server ---------------------------------------------------------------------------

    def info(self, replica: Optional[int] = None, *, timeout: Optional[float] = None) -> ServerInfo:
        """GetServerInfo of one replica: `replica` (an index into .replicas) or the next in turn."""
        route = Route(self._replica_index(replica)) if replica is not None else Route()
        deadline = self._deadline(timeout)
        return self._replicas.run(route, deadline, lambda r: _convert.server_info_from(
            r.name, r.stub.GetServerInfo(_pb.service.GetServerInfoRequest(),
                                         timeout=deadline.remaining(), metadata=self._metadata)))

    def health(self, replica: Optional[int] = None, service: str = "", *,
               timeout: Optional[float] = None) -> Dict[str, str]:
        """grpc.health.v1 Check of each replica (or of `replica`): name -> "SERVING",
        "NOT_SERVING", "SERVICE_UNKNOWN" or "UNKNOWN". An unreachable replica raises."""
        indices = range(len(self._replicas)) if replica is None else [self._replica_index(replica)]
        deadline = self._deadline(timeout)
        out = {}
        for i in indices:
            out[self._replicas.names[i]] = self._replicas.run(
                Route(i), deadline, lambda r: _health_check(r, service, deadline, self._metadata))
        return out

    # --- operations ---------------------------------------------------------------------------

    def transpose(self, a: ArrayOrRef, *, store: bool = False, ttl_seconds: int = 0,
                  timeout: Optional[float] = None) -> Union[np.ndarray, Ref]:
        """a.T of a 2-D array, or of every matrix of a 3-D batch (any of float32, float64,
        float16, int32). store=True keeps the result on the server and returns its Ref."""
        op = self._operand(a, "a", accept=("f32", "f64", "f16", "i32"))
        batched = _is_batched(op)

        fill = _one_operand_fill(op, store, ttl_seconds, _pb.ops.TransposeRequest,
                                 result_bytes=_nbytes(op))

        def convert(response, t: Transfer):
            return self._result(t, response.at, "at", store, batched)

        return self._operation(self._route_refs(op), timeout, "Transpose", fill, convert)

    def matmul(self, a: ArrayOrRef, b: ArrayOrRef, *, transpose_a: bool = False,
               transpose_b: bool = False, precision: Union[str, int] = "default",
               alpha: Optional[float] = None, beta: Optional[float] = None,
               c: Optional[ArrayOrRef] = None, store: bool = False, ttl_seconds: int = 0,
               timeout: Optional[float] = None) -> Union[np.ndarray, Ref]:
        """alpha * op(a) @ op(b) + beta * c, op(x) = x or x.T (transpose_x).

        float32, float64 or float16 operands (integers are sent as float64), 2-D, or 3-D
        batches of equal size (or one of batch 1, broadcast). precision: "default" (the
        operands'), "f32", "f64", "tf32", "bf16", "f16" (see proto/gcompute/v1/operations.proto).
        c is read only when beta is non-zero.
        """
        conv = dict(accept=("f32", "f64", "f16"), convert_ints_to="f64")
        ops = [self._operand(a, "a", **conv), self._operand(b, "b", **conv)]
        if c is not None:
            ops.append(self._operand(c, "c", **conv))
        batched = any(_is_batched(o) for o in ops)
        prec = _convert.precision_value(precision)

        def fill(stager: OperandStager) -> Any:
            request = _pb.ops.MatMulRequest(transpose_a=transpose_a, transpose_b=transpose_b,
                                            precision=prec)
            stager.add_operand(ops[0], request.a)
            stager.add_operand(ops[1], request.b)
            if c is not None:
                stager.add_operand(ops[2], request.c)
            if alpha is not None:
                request.alpha = float(alpha)
            if beta is not None:
                request.beta = float(beta)
            _output(request.output, store, ttl_seconds)
            stager.expect_result(request.output, _matmul_result_bytes(ops[0], ops[1], transpose_a,
                                                                      transpose_b))
            return request

        def convert(response, t: Transfer):
            return self._result(t, response.c, "c", store, batched)

        return self._operation(self._route_refs(*ops), timeout, "MatMul", fill, convert)

    def svd(self, a: ArrayOrRef, full_matrices: bool = True, compute_uv: bool = True, *,
            method: str = "auto", tolerance: float = 0.0, max_sweeps: int = 0, store: bool = False,
            ttl_seconds: int = 0, timeout: Optional[float] = None):
        """Singular value decomposition with numpy.linalg.svd's conventions: returns
        (u, s, vt) with a == u @ np.diag(s) @ vt (s descending), or s alone when
        compute_uv=False. full_matrices=True: u is m x m and vt n x n; False: m x k and k x n,
        k = min(m, n). A 3-D array is a batch (see batched_svd). float32 or float64 (integers
        are sent as float64).

        method: "auto" (the backend's fastest), "jacobi" (small singular values keep their
        relative accuracy on graded matrices) or "polar" (QDWH polar decomposition, then an
        eigensolver). tolerance / max_sweeps tune the GPU Jacobi iteration and bound QDWH's
        iterations (0: the server's defaults); if the method does not converge,
        SvdNotConverged (a numpy.linalg.LinAlgError) is raised.
        store=True returns Refs instead of arrays (s then has shape 1 x k per matrix).
        """
        op = self._operand(a, "a", accept=("f32", "f64"), convert_ints_to="f64")
        return self._svd("BatchedSvd" if _is_batched(op) else "Svd", op, full_matrices, compute_uv,
                         method, tolerance, max_sweeps, store, ttl_seconds, timeout)

    def batched_svd(self, a: ArrayOrRef, full_matrices: bool = True, compute_uv: bool = True, *,
                    method: str = "auto", tolerance: float = 0.0, max_sweeps: int = 0, store: bool = False,
                    ttl_seconds: int = 0, timeout: Optional[float] = None):
        """SVD of every matrix of a batch (batch x m x n): u (batch x m x .), s (batch x k),
        vt (batch x . x n), as numpy.linalg.svd returns for a stack."""
        op = self._operand(a, "a", accept=("f32", "f64"), convert_ints_to="f64")
        if isinstance(op, tuple) and op[0].ndim != 3:
            raise InvalidArgument(f"batched_svd needs a 3-D batch x rows x cols array; got shape {op[0].shape}")
        return self._svd("BatchedSvd", op, full_matrices, compute_uv, method, tolerance, max_sweeps,
                         store, ttl_seconds, timeout)

    def eigh(self, a: ArrayOrRef, *, compute_vectors: bool = True, symmetry_tolerance: float = 0.0,
             store: bool = False, ttl_seconds: int = 0, timeout: Optional[float] = None):
        """Eigendecomposition of a symmetric matrix with numpy.linalg.eigh's conventions:
        returns (w, v), w ascending and v's columns the eigenvectors, or w alone when
        compute_vectors=False. Reads the lower triangle; a matrix that is not symmetric to
        symmetry_tolerance x max|a| (0: n x machine epsilon) raises InvalidArgument naming the
        pair. A 3-D array is a stack: w is (batch, n), v (batch, n, n). float32 or float64.
        store=True returns Refs instead of arrays."""
        op = self._operand(a, "a", accept=("f32", "f64"), convert_ints_to="f64")
        batched = _is_batched(op)

        fill = _one_operand_fill(
            op, store, ttl_seconds,
            lambda: _pb.ops.EighRequest(compute_vectors=compute_vectors,
                                        symmetry_tolerance=symmetry_tolerance),
            result_bytes=_nbytes(op) if compute_vectors else 0)

        def convert(response, t: Transfer):
            if store:
                w = self._result(t, response.w, "w", True, batched)
                return (w, self._result(t, response.v, "v", True, batched)) if compute_vectors else w
            if not compute_vectors:
                (w,) = _transfer.take_results(t, (response.w, "w"))
                return w[:, 0, :] if batched else w[0, 0, :]
            w, v = _transfer.take_results(t, (response.w, "w"), (response.v, "v"))
            w = w[:, 0, :] if batched else w[0, 0, :]
            return (w, v if batched else v[0])

        return self._operation(self._route_refs(op), timeout, "Eigh", fill, convert)

    def apsp(self, w, *, next_hop: bool = False, store: bool = False, ttl_seconds: int = 0,
             timeout: Optional[float] = None):
        """All-pairs shortest paths (Floyd-Warshall).

        w: a dense n x n weight matrix (floating: sent as float32, +inf = no edge; integer:
        int32, 2147483647 = no edge; W[i, j] is the weight of i -> j), a scipy.sparse matrix
        (each stored entry an edge), an EdgeList, a Ref to a stored dense matrix, or the id of
        a stored graph. Negative weights are allowed; a negative cycle raises
        FailedPrecondition.

        Returns the n x n distances (float32 with +inf, or int32 with 2147483647, for
        unreachable), or (distances, next_hop) when next_hop=True, where next_hop[i, j] is the
        vertex after i on a shortest path to j (-1: unreachable). store=True returns a
        StoredApsp of Refs instead, for shortest_path calls without recomputation.
        """
        source = _convert.graph_source(w)

        def fill(stager: OperandStager) -> Any:
            request = _pb.ops.ApspRequest(next_hop=next_hop)
            _convert.fill_apsp_graph(stager, source, request)
            _output(request.output, store, ttl_seconds)
            return request

        def convert(response, t: Transfer):
            if store:
                nh = _transfer.take_stored(t, response.next_hop, "next_hop") if next_hop else None
                out = StoredApsp(_transfer.take_stored(t, response.distances, "distances"), nh)
                self._remember(t, out.distances, nh)
                return out
            d = _transfer.take_result(t, response.distances, "distances")[0]
            if not next_hop:
                return d
            return d, _transfer.take_result(t, response.next_hop, "next_hop")[0]

        return self._operation(self._route_graph(source), timeout, "Apsp", fill, convert)

    def shortest_path(self, graph, source: int, target: int, *,
                      timeout: Optional[float] = None) -> Path:
        """One shortest path from `source` to `target` (0-based). `graph` is anything apsp
        takes (the server runs APSP with next hops first), or a StoredApsp from
        apsp(..., next_hop=True, store=True) (read without recomputation)."""
        if isinstance(graph, StoredApsp):
            if graph.next_hop is None:
                raise InvalidArgument("shortest_path needs a StoredApsp with next_hop (apsp(..., next_hop=True, store=True))")
            stored = graph

            def fill_stored(stager: OperandStager) -> Any:
                request = _pb.ops.ShortestPathRequest(source=source, target=target)
                request.stored.distances.id = stored.distances.id
                request.stored.next_hop.id = stored.next_hop.id
                return request

            return self._operation(self._route_refs(stored.distances, stored.next_hop), timeout,
                                   "ShortestPath", fill_stored, lambda r, t: _convert.path_from(r))
        src = _convert.graph_source(graph)

        def fill(stager: OperandStager) -> Any:
            request = _pb.ops.ShortestPathRequest(source=source, target=target)
            _convert.fill_apsp_graph(stager, src, request.graph)
            return request

        return self._operation(self._route_graph(src), timeout, "ShortestPath", fill,
                               lambda r, t: _convert.path_from(r))

    def sssp(self, graph, source: int, *, store: bool = False, ttl_seconds: int = 0,
             timeout: Optional[float] = None) -> SsspResult:
        """Shortest paths from `source` to every vertex, without APSP: memory grows with the
        edges, not with n^2, so it answers graphs far too large for apsp.

        graph: an EdgeList (f32 weights; vertices 0 .. n-1, `source` an index), a scipy.sparse
        matrix (each stored entry an edge, weights sent as float32), or the id of a stored graph
        (`source` a vertex id). Dense matrices are refused (use apsp). Negative weights are
        allowed; a negative cycle the source reaches raises FailedPrecondition, others do not
        matter.

        Returns an SsspResult: distances (n,) float32 (+inf: unreachable), parents (n,) int32
        (the previous row; -1: unreachable), vertex_ids (a stored graph whose vertices are not
        0 .. n-1: row i is vertex vertex_ids[i]; else None), reachable, stats, and
        path_to(v). store=True keeps distances and parents on the server (Refs, 1 x n).
        """
        src = _convert.sssp_graph_source(graph)

        def fill(stager: OperandStager) -> Any:
            request = _pb.ops.SsspRequest(source=source)
            _convert.fill_sssp_graph(src, request)
            _output(request.output, store, ttl_seconds)
            return request

        def convert(response, t: Transfer) -> SsspResult:
            if store:
                d = _transfer.take_stored(t, response.distances, "distances")
                p = _transfer.take_stored(t, response.parents, "parents")
                self._remember(t, d, p)
            else:
                d = _transfer.take_result(t, response.distances, "distances")[0]
                p = _transfer.take_result(t, response.parents, "parents")[0]
            return _convert.sssp_result_from(response, d, p)

        return self._operation(self._route_graph(src), timeout, "Sssp", fill, convert)

    # --- jobs ----------------------------------------------------------------------------------

    def submit(self, op_name: str, *args, priority: str = "normal", client_job_key: str = "",
               job_ttl_seconds: int = 0, timeout: Optional[float] = None, **kwargs) -> "jobs.Job":
        """Submits the operation `op_name` (transpose, matmul, svd, batched_svd, eigh, apsp,
        shortest_path or sssp, with the arguments of the method of that name) as a job and
        returns a Job at once; the server runs it whether or not this process stays connected.

        priority: "normal" or "high" (ahead of queued normal jobs). client_job_key: a resubmit
        with the same key returns the same job. job_ttl_seconds: how long the finished job and
        its results stay on the server (0: the server's default). Validation errors of the
        operation are raised here, as its method would raise them."""
        if op_name not in _JOB_OPERATIONS:
            raise InvalidArgument(f"submit: {op_name!r} is not one of {', '.join(_JOB_OPERATIONS)}")
        if priority not in ("normal", "high"):
            raise InvalidArgument(f"submit: priority must be 'normal' or 'high', not {priority!r}")
        self._local.job = dict(priority=_pb.jobs.JOB_PRIORITY_HIGH if priority == "high"
                               else _pb.jobs.JOB_PRIORITY_NORMAL,
                               client_job_key=client_job_key, ttl_seconds=int(job_ttl_seconds))
        try:
            return getattr(self, op_name)(*args, timeout=timeout, **kwargs)
        finally:
            self._local.job = None

    def job(self, job_id: str, *, timeout: Optional[float] = None) -> "jobs.JobStatus":
        """The status of any job of this caller by id (one submitted elsewhere included)."""
        deadline = self._deadline(timeout)
        request = _pb.jobs.GetJobRequest(job_id=job_id)
        return jobs.status_from(self._replicas.run(Route(0), deadline, lambda r: r.stub.GetJob(
            request, timeout=deadline.remaining(), metadata=self._metadata)))

    # --- stored matrices ----------------------------------------------------------------------

    def upload(self, a, *, ttl_seconds: int = 0, timeout: Optional[float] = None,
               progress: Optional[ProgressCallback] = None) -> Ref:
        """Stores a 2-D or 3-D array (float32, float64, float16, int32) on a server, in chunks,
        and returns its Ref. ttl_seconds=0: the server's default lifetime."""
        array, name = _arrays.as_matrix_array(a, "a", accept=("f32", "f64", "f16", "i32"))
        deadline = self._deadline(timeout)

        def attempt(replica: Replica) -> Ref:
            t = self._transfer(replica, deadline, progress)
            ref = _transfer.upload(t, array, name, ttl_seconds)
            self._remember(t, ref)
            return ref

        return self._replicas.run(Route(), deadline, attempt)

    def download(self, ref: Union[Ref, str], *, timeout: Optional[float] = None,
                 progress: Optional[ProgressCallback] = None) -> np.ndarray:
        """The data of a stored matrix: 2-D, or 3-D for a batch of more than one matrix."""
        ref = _as_ref(ref)
        deadline = self._deadline(timeout)

        def attempt(replica: Replica) -> np.ndarray:
            out = _transfer.download(self._transfer(replica, deadline, progress), ref.id)
            return out if out.shape[0] > 1 else out[0]

        return self._replicas.run(self._route_refs(ref), deadline, attempt)

    def delete(self, ref: Union[Ref, str], *, timeout: Optional[float] = None) -> None:
        """Deletes a stored matrix (NotFound if it does not exist or expired)."""
        ref = _as_ref(ref)
        deadline = self._deadline(timeout)
        try:
            self._replicas.run(self._route_refs(ref), deadline, lambda r: _transfer.delete(
                r, ref.id, deadline.remaining(), self._metadata))
        except NotFound:
            self._replicas.forget_matrix(ref.id)
            raise
        self._replicas.forget_matrix(ref.id)

    # --- graph store --------------------------------------------------------------------------

    def create_graph(self, num_vertices: int, edges: Iterable = (), *,
                     graph_id: Optional[str] = None, timeout: Optional[float] = None) -> GraphInfo:
        """Creates a stored graph with vertices 0 .. num_vertices-1 and `edges` (Hyperedge
        objects or (tails, heads, weight) triples, tails/heads an int or a sequence; edge ids
        0 .. len(edges)-1 in order). graph_id: 1-128 of [A-Za-z0-9._-]; None: the server picks
        one (with several replicas the client picks "g-" + 16 hex digits, to know the owner).
        AlreadyExists if taken."""
        if not graph_id and len(self._replicas) > 1:
            graph_id = f"g-{secrets.randbits(64):016x}"
        request = _pb.graphs.CreateGraphRequest(graph_id=graph_id or "", num_vertices=num_vertices)
        for e in edges:
            _convert.hyperedge_to(e, request.edges.add())
        return self._unary(self._replicas.route_for_graph(request.graph_id), timeout, "CreateGraph",
                           request, lambda r: _convert.graph_info_from(r.info))

    def graph(self, graph_id: str, *, timeout: Optional[float] = None) -> GraphSnapshot:
        """A consistent snapshot of a stored graph (vertices ascending, edges by id), read in
        pages; a change between pages (Aborted) starts over, up to three times."""
        deadline = self._deadline(timeout)
        route = self._replicas.route_for_graph(graph_id)
        for attempt in range(3):
            pages = []
            request = _pb.graphs.GetGraphRequest(graph_id=graph_id)
            try:
                while True:
                    page = self._replicas.run(route, deadline, lambda r: r.stub.GetGraph(
                        request, timeout=deadline.remaining(), metadata=self._metadata))
                    pages.append(page)
                    if not page.next_page_token:
                        return _convert.snapshot_from_pages(pages)
                    request = _pb.graphs.GetGraphRequest(graph_id=graph_id,
                                                         page_token=page.next_page_token)
            except Aborted:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def list_graphs(self, *, timeout: Optional[float] = None) -> List[GraphInfo]:
        """Every replica's graphs, merged and sorted by id (fails if any replica fails)."""
        deadline = self._deadline(timeout)
        out: List[GraphInfo] = []
        for i in range(len(self._replicas)):
            response = self._replicas.run(Route(i), deadline, lambda r: r.stub.ListGraphs(
                _pb.graphs.ListGraphsRequest(), timeout=deadline.remaining(), metadata=self._metadata))
            out.extend(_convert.graph_info_from(g) for g in response.graphs)
        return sorted(out, key=lambda g: g.graph_id)

    def delete_graph(self, graph_id: str, *, timeout: Optional[float] = None) -> None:
        """Deletes a stored graph (NotFound if there is none of that id)."""
        self._unary(self._replicas.route_for_graph(graph_id), timeout, "DeleteGraph",
                    _pb.graphs.DeleteGraphRequest(graph_id=graph_id), lambda r: None)

    def apply_edits(self, graph_id: str, edits: Iterable[Edit], *,
                    expected_version: Optional[int] = None,
                    timeout: Optional[float] = None) -> EditsResult:
        """Applies a batch of edits atomically (all or none). Ids refer to the graph as left by
        the edits before it in the batch. expected_version, when given, must equal the
        graph's version (else Aborted). Returns the new version and one EditResult per edit."""
        request = _pb.graphs.ApplyEditsRequest(graph_id=graph_id)
        if expected_version is not None:
            request.expected_version = expected_version
        for edit in edits:
            _convert.edit_to(edit, request.edits.add())
        return self._unary(self._replicas.route_for_graph(graph_id), timeout, "ApplyEdits", request,
                           _convert.edits_result_from)

    # Jobs (submit() returning a Job with result(), progress, cancel(), watch()) and
    # shared-memory transfers belong here once the server offers them (issue 14 names both);
    # until then the client has no such methods rather than ones that cannot work.

    # --- internals ----------------------------------------------------------------------------

    def _deadline(self, timeout: Optional[float]) -> Deadline:
        return Deadline(self._timeout if timeout is None else timeout)

    def _replica_index(self, replica: int) -> int:
        if not 0 <= replica < len(self._replicas):
            raise InvalidArgument(f"replica {replica} of {len(self._replicas)}")
        return replica

    def _transfer(self, replica: Replica, deadline: Deadline,
                  progress: Optional[ProgressCallback] = None) -> Transfer:
        return Transfer(replica, deadline, self._chunk_bytes, self._metadata,
                        progress or self._progress, len(self._replicas) > 1)

    def _operand(self, x, what: str, **conversions):
        """A Ref, or a prepared (array, dtype name) pair."""
        if isinstance(x, Ref):
            return x
        return _arrays.as_matrix_array(x, what, **conversions)

    def _route_refs(self, *operands) -> Route:
        refs = [(o.id, o.replica) for o in operands if isinstance(o, Ref)]
        return self._replicas.route_for_refs(refs) if refs else Route()

    def _route_graph(self, source) -> Route:
        kind, value = source
        if kind == "graph_id":
            return self._replicas.route_for_graph(value)
        return self._route_refs(value) if kind == "ref" else Route()

    def _remember(self, t: Transfer, *refs: Optional[Ref]) -> None:
        for ref in refs:
            if ref is not None:
                self._replicas.remember_matrix(ref.id, t.replica.index, ref.expires_at_unix_ms)

    def _result(self, t: Transfer, result, what: str, store: bool, batched: bool):
        if store:
            ref = _transfer.take_stored(t, result, what)
            self._remember(t, ref)
            return ref
        out = _transfer.take_result(t, result, what)
        return out if batched else out[0]

    def _operation(self, route: Route, timeout: Optional[float], method: str,
                   fill: Callable[[OperandStager], Any], convert: Callable[[Any, Transfer], Any]):
        """One call with operands: on each replica tried, fill(stager) builds the request, its
        operands are placed inline or uploaded, the call runs, convert(response, transfer)
        takes the results (downloading stored ones); uploads are deleted afterwards. Inside
        submit() the request goes out as a SubmitJob instead and a Job is returned, which
        applies convert when its result is collected."""
        deadline = self._deadline(timeout)
        job = getattr(self._local, "job", None)

        def attempt(replica: Replica):
            t = self._transfer(replica, deadline)
            stream_results = job is None
            while True:
                with OperandStager(t, self._inline_limit, stream_results=stream_results) as stager:
                    request = fill(stager)
                    stager.place()
                    if job is not None:
                        submit = _pb.jobs.SubmitJobRequest(**job)
                        getattr(submit, jobs.SUBMIT_FIELDS[method]).CopyFrom(request)
                        response = replica.stub.SubmitJob(submit, timeout=deadline.remaining(),
                                                          metadata=self._metadata)
                        return jobs.Job(self, response.job_id, replica.index, method, convert)
                    try:
                        response = getattr(replica.stub, method)(
                            request, timeout=deadline.remaining(), metadata=self._metadata)
                    except grpc.RpcError as error:
                        # Results this client chose to store, refused by the store's quota:
                        # asked for again in the response, as the caller left them.
                        if stager.stores_results and _transfer.refused_stored_results(error):
                            stager.close()  # this attempt's uploads go, as for any failure
                            stream_results = False
                            continue
                        raise
                    return convert(response, t)

        return self._replicas.run(route, deadline, attempt)

    def _unary(self, route: Route, timeout: Optional[float], method: str, request,
               convert: Callable[[Any], Any]):
        deadline = self._deadline(timeout)
        return self._replicas.run(route, deadline, lambda r: convert(getattr(r.stub, method)(
            request, timeout=deadline.remaining(), metadata=self._metadata)))

    def _svd(self, rpc: str, op, full_matrices: bool, compute_uv: bool, method: str,
             tolerance: float, max_sweeps: int, store: bool, ttl_seconds: int,
             timeout: Optional[float]):
        batched = rpc == "BatchedSvd"
        if method not in _SVD_METHODS:
            raise InvalidArgument(f"method must be one of {sorted(_SVD_METHODS)}; got {method!r}")

        fill = _one_operand_fill(
            op, store, ttl_seconds,
            lambda: _pb.ops.SvdRequest(compute_uv=compute_uv, full_matrices=full_matrices,
                                       tolerance=tolerance, max_sweeps=max_sweeps,
                                       method=_SVD_METHODS[method]),
            result_bytes=_nbytes(op) if compute_uv else 0)

        def convert(response, t: Transfer):
            if store:
                s = self._result(t, response.s, "s", True, batched)
                result = (self._result(t, response.u, "u", True, batched), s,
                          self._result(t, response.vt, "vt", True, batched)) if compute_uv else s
            else:
                if compute_uv:
                    s, u, vt = _transfer.take_results(t, (response.s, "s"), (response.u, "u"),
                                                      (response.vt, "vt"))
                    s = s[:, 0, :] if batched else s[0, 0, :]
                    result = (u, s, vt) if batched else (u[0], s, vt[0])
                else:
                    (s,) = _transfer.take_results(t, (response.s, "s"))
                    result = s[:, 0, :] if batched else s[0, 0, :]
            if not response.converged:
                raise SvdNotConverged(
                    f"SVD ({method}) did not converge: {response.sweeps} sweeps or iterations "
                    f"(max_sweeps={max_sweeps or 'server default'})", sweeps=response.sweeps, result=result)
            return result

        return self._operation(self._route_refs(op), timeout, rpc, fill, convert)


def _read_pem(tls_ca) -> Optional[bytes]:
    if tls_ca is True:
        return None  # grpc's default roots
    if isinstance(tls_ca, bytes):
        return tls_ca
    with open(os.fspath(tls_ca), "rb") as f:
        return f.read()


def _as_ref(ref: Union[Ref, str]) -> Ref:
    if isinstance(ref, Ref):
        return ref
    if isinstance(ref, str) and ref:
        return Ref(ref)
    raise InvalidArgument(f"expected a Ref or a stored matrix id; got {ref!r}")


def _nbytes(op) -> int:
    """The bytes of an operand: a Ref's stored size or a prepared array's."""
    return op.size_bytes if isinstance(op, Ref) else op[0].nbytes


def _shape3(op) -> Tuple[int, int, int]:
    """(batch, rows, cols) of an operand: a Ref or a prepared array."""
    return _arrays.shape3(op if isinstance(op, Ref) else op[0])


def _matmul_result_bytes(a, b, transpose_a: bool, transpose_b: bool) -> int:
    """The bytes of op(a) @ op(b) in the wider of the operands' element types."""
    batch_a, rows_a, cols_a = _shape3(a)
    batch_b, rows_b, cols_b = _shape3(b)
    itemsize = max(_nbytes(a) // max(1, batch_a * rows_a * cols_a),
                   _nbytes(b) // max(1, batch_b * rows_b * cols_b))
    rows = cols_a if transpose_a else rows_a
    cols = rows_b if transpose_b else cols_b
    return max(batch_a, batch_b) * rows * cols * itemsize


def _is_batched(op) -> bool:
    """Whether an operand is a 3-D batch (results then keep the batch dimension)."""
    if isinstance(op, Ref):
        return len(op.shape) == 3
    return op[0].ndim == 3


def _output(output, store: bool, ttl_seconds: int) -> None:
    if store:
        output.placement = _pb.types.OutputOptions.PLACEMENT_STORED
        output.ttl_seconds = int(ttl_seconds)


def _one_operand_fill(op, store: bool, ttl_seconds: int, new_request: Callable[[], Any],
                      result_bytes: int = 0) -> Callable[[OperandStager], Any]:
    """The fill of an operation whose one operand is `a`: a new request with op staged, its
    results (about result_bytes) streamed back when above one chunk."""
    def fill(stager: OperandStager) -> Any:
        request = new_request()
        stager.add_operand(op, request.a)
        _output(request.output, store, ttl_seconds)
        stager.expect_result(request.output, result_bytes)
        return request
    return fill


def _encode_health_request(service: str) -> bytes:
    """grpc.health.v1.HealthCheckRequest{string service = 1}, encoded by hand (the health
    proto is not part of gcompute's, and Debian has no grpcio-health-checking)."""
    data = service.encode("utf-8")
    if not data:
        return b""
    n, length = len(data), bytearray()
    while n >= 0x80:
        length.append((n & 0x7F) | 0x80)
        n >>= 7
    length.append(n)
    return b"\x0a" + bytes(length) + data


def _decode_health_status(data: bytes) -> int:
    """HealthCheckResponse{ServingStatus status = 1} -> the status value (0 if absent)."""
    i, status = 0, 0

    def varint() -> int:
        nonlocal i
        v, shift = 0, 0
        while i < len(data):
            c = data[i]
            i += 1
            v |= (c & 0x7F) << shift
            if not c & 0x80:
                return v
            shift += 7
        raise Internal("undecodable HealthCheckResponse")

    while i < len(data):
        tag = varint()
        if tag & 7 == 0:
            value = varint()
            if tag >> 3 == 1:
                status = value
        elif tag & 7 == 2:
            i += varint()
        else:
            raise Internal("undecodable HealthCheckResponse")
    return status


def _health_check(replica: Replica, service: str, deadline: Deadline, metadata) -> str:
    check = replica.channel.unary_unary("/grpc.health.v1.Health/Check",
                                        request_serializer=None, response_deserializer=None)
    try:
        response = check(_encode_health_request(service), timeout=deadline.remaining(),
                         metadata=metadata)
    except grpc.RpcError as e:
        if e.code() == grpc.StatusCode.NOT_FOUND:
            return "SERVICE_UNKNOWN"
        raise
    return _HEALTH_STATES.get(_decode_health_status(response), "UNKNOWN")
