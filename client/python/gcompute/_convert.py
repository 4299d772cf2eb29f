# SPDX-License-Identifier: Apache-2.0
"""Conversions between the client's values (types.py) and the generated messages, and the
coercion of the graphs apsp / shortest_path accept (dense arrays, scipy.sparse matrices, edge
lists, stored matrices, graph ids) into an ApspRequest, and of those sssp accepts (edge lists,
scipy.sparse matrices, graph ids) into an SsspRequest."""
from __future__ import annotations

from typing import Tuple, Union

import numpy as np

from . import _arrays, _pb
from .errors import InvalidArgument
from .types import (AddEdge, AddVertex, DecomposeVertex, DeleteEdge, DeleteVertex, Device, Edit,
                    EditResult, EditsResult, EdgeList, ExecutionStats, GraphInfo, GraphSnapshot,
                    Hyperedge, Limits, Path, Ref, ServerInfo, SetWeight, SsspResult, StoredApsp)

I32_MAX = 2147483647
I32_MIN = -2147483648


def stats_from(s) -> ExecutionStats:
    return ExecutionStats(s.queue_seconds, s.h2d_seconds, s.compute_seconds, s.d2h_seconds,
                          s.total_seconds, s.device)


def path_from(r) -> Path:
    return Path(r.reachable, r.length, list(r.vertices), stats_from(r.stats))


def server_info_from(replica: str, r) -> ServerInfo:
    devices = [Device(d.index, d.name, d.memory_bytes, d.compute_capability) for d in r.devices]
    lim = r.limits
    limits = Limits(lim.max_message_bytes, lim.max_matrix_elements, lim.queue_depth,
                    lim.stored_matrix_quota_bytes, lim.default_ttl_seconds, lim.workers)
    return ServerInfo(replica, r.version, r.backend, r.backend_note, devices, limits)


def graph_info_from(g) -> GraphInfo:
    return GraphInfo(g.graph_id, g.version, g.num_vertices, g.num_edges)


def hyperedge_from(e) -> Hyperedge:
    return Hyperedge(tuple(e.tails), tuple(e.heads), e.weight, e.id)


def snapshot_from_pages(pages) -> GraphSnapshot:
    """One snapshot from the GetGraph pages of one version, in order."""
    return GraphSnapshot(graph_info_from(pages[-1].info), [v for p in pages for v in p.vertices],
                         [hyperedge_from(e) for p in pages for e in p.edges])


def edits_result_from(r) -> EditsResult:
    return EditsResult(r.version, [EditResult(e.vertex_id, e.edge_id, tuple(e.deleted_edge_ids))
                                   for e in r.results])


def hyperedge_to(e, out) -> None:
    """Fills gcompute.v1.Hyperedge from a Hyperedge or a (tails, heads, weight) triple."""
    if not isinstance(e, Hyperedge):
        try:
            tails, heads, weight = e
        except (TypeError, ValueError):
            raise InvalidArgument(f"an edge must be a Hyperedge or a (tails, heads, weight) triple; got {e!r}") from None
        e = Hyperedge(tails, heads, weight)
    out.tails.extend(e.tails)
    out.heads.extend(e.heads)
    out.weight = e.weight


def edit_to(edit: Edit, out) -> None:
    """Fills gcompute.v1.Edit."""
    if isinstance(edit, AddVertex):
        out.add_vertex.SetInParent()
    elif isinstance(edit, DeleteVertex):
        out.delete_vertex.vertex_id = edit.vertex_id
    elif isinstance(edit, AddEdge):
        out.add_edge.tails.extend(edit.tails)
        out.add_edge.heads.extend(edit.heads)
        out.add_edge.weight = edit.weight
    elif isinstance(edit, DeleteEdge):
        out.delete_edge.edge_id = edit.edge_id
    elif isinstance(edit, SetWeight):
        out.set_weight.edge_id = edit.edge_id
        out.set_weight.weight = edit.weight
    elif isinstance(edit, DecomposeVertex):
        out.decompose_vertex.vertex_id = edit.vertex_id
        out.decompose_vertex.move_edge_ids.extend(edit.move_edge_ids)
        out.decompose_vertex.joining_weight = edit.joining_weight
    else:
        raise InvalidArgument(f"not an edit: {edit!r} (AddVertex, DeleteVertex, AddEdge, DeleteEdge, "
                              f"SetWeight or DecomposeVertex)")


# --- graphs of apsp / shortest_path ----------------------------------------------------------

#: A coerced graph: ("graph_id", str), ("ref", Ref), ("edges", EdgeList) or
#: ("dense", (array, dtype name)).
GraphSource = Tuple[str, Union[str, Ref, EdgeList, Tuple[np.ndarray, str]]]


def _is_sparse(w) -> bool:
    try:
        import scipy.sparse  # optional dependency
    except ImportError:
        return False
    return scipy.sparse.issparse(w)


def _check_i32(values: np.ndarray, what: str) -> None:
    if values.size and (values.min() < I32_MIN or values.max() > I32_MAX):
        raise InvalidArgument(f"{what}: integer weights must fit in int32 (2147483647 = no edge); "
                              f"got values in [{values.min()}, {values.max()}]")


def sparse_to_edges(w) -> EdgeList:
    """A scipy.sparse matrix as an edge list: every stored entry (explicit zeros included) is
    an edge row -> col; duplicate entries are summed, as scipy does when converting."""
    rows, cols = w.shape
    if rows != cols:
        raise InvalidArgument(f"a sparse graph must be square; got shape {w.shape}")
    coo = w.tocoo(copy=True)
    coo.sum_duplicates()
    if np.issubdtype(coo.dtype, np.integer):
        _check_i32(coo.data, "sparse graph")
        dtype = "i32"
    elif np.issubdtype(coo.dtype, np.floating):
        dtype = "f32"
    else:
        raise InvalidArgument(f"a sparse graph needs integer or floating weights; got dtype {coo.dtype}")
    return EdgeList(src=coo.row, dst=coo.col, weight=coo.data.astype(np.float64), num_vertices=rows,
                    dtype=dtype)


def graph_source(w) -> GraphSource:
    """Coerces what apsp / shortest_path accept. Dense arrays: floating -> f32 (+inf = no
    edge), integer -> i32 (2147483647 = no edge)."""
    if isinstance(w, str):
        return ("graph_id", w)
    if isinstance(w, Ref):
        return ("ref", w)
    if isinstance(w, EdgeList):
        return ("edges", w)
    if _is_sparse(w):
        return ("edges", sparse_to_edges(w))
    a = np.asarray(w)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise InvalidArgument(f"a dense graph must be a square n x n weight matrix; got shape {a.shape}")
    if np.issubdtype(a.dtype, np.integer) and a.dtype != np.int32:
        _check_i32(a, "dense graph")
    return ("dense", _arrays.as_matrix_array(a, "dense graph", accept=("f32", "i32"), convert_ints_to="i32",
                                              convert_floats_to="f32", batched=False))


def edges_to(e: EdgeList, out) -> None:
    """Fills gcompute.v1.EdgeList."""
    if e.dtype == "i32":
        _check_i32(e.weight, "edge list")
    out.num_vertices = e.num_vertices
    out.src.extend(e.src.tolist())
    out.dst.extend(e.dst.tolist())
    out.weight.extend(e.weight.tolist())
    out.dtype = _arrays.wire_dtype(e.dtype)


def fill_apsp_graph(stager, source: GraphSource, request) -> None:
    """Writes the graph of an ApspRequest (dense operands through the stager)."""
    kind, value = source
    if kind == "graph_id":
        request.graph_id = value
    elif kind == "edges":
        edges_to(value, request.edges)
    else:  # "ref" or "dense": the stager writes dense or dense_ref
        stager.add(value, lambda: request.dense, lambda: request.dense_ref)


# --- graphs of sssp ---------------------------------------------------------------------------

def sssp_graph_source(g) -> GraphSource:
    """Coerces what sssp accepts: ("graph_id", str) or ("edges", EdgeList) with f32 weights.
    Dense matrices (arrays, Refs, StoredApsp) are refused here: Sssp takes no dense form, and
    an n x n matrix is what it exists to avoid."""
    if isinstance(g, str):
        if not g:
            raise InvalidArgument("sssp: graph id is empty")
        return ("graph_id", g)
    if isinstance(g, EdgeList):
        if g.dtype != "f32":
            raise InvalidArgument(f"sssp: the edge list has dtype {g.dtype!r}; Sssp weights are f32 "
                                  f"(build the EdgeList with dtype='f32')")
        return ("edges", g)
    if _is_sparse(g):
        if not np.issubdtype(g.dtype, np.floating):
            g = g.astype(np.float64)  # integer weights travel as f32 too
        return ("edges", sparse_to_edges(g))
    if isinstance(g, (Ref, StoredApsp)):
        what = "a stored dense matrix" if isinstance(g, Ref) else "stored APSP results"
    else:
        what = type(g).__name__
        if hasattr(g, "shape"):
            what += f" of shape {tuple(g.shape)}"
    raise InvalidArgument(f"sssp: graph must be an EdgeList, a scipy.sparse matrix or the id of a "
                          f"stored graph; got {what} (for a dense n x n weight matrix use apsp, "
                          f"or turn it into an EdgeList)")


def fill_sssp_graph(source: GraphSource, request) -> None:
    """Writes the graph of an SsspRequest."""
    kind, value = source
    if kind == "graph_id":
        request.graph_id = value
    else:
        edges_to(value, request.edges)


def sssp_result_from(r, distances, parents) -> SsspResult:
    """An SsspResult of a response and its taken distances / parents (rows of 1 x n arrays,
    or Refs)."""
    if isinstance(distances, np.ndarray):
        distances, parents = distances.reshape(-1), parents.reshape(-1)
    ids = np.array(r.vertex_ids, dtype=np.int64) if len(r.vertex_ids) else None
    return SsspResult(distances, parents, ids, int(r.reachable), stats_from(r.stats))


def precision_value(p) -> int:
    """A MatMul precision from "default", "f32", "f64", "tf32", "bf16", "f16" (any case)."""
    if isinstance(p, int):
        return p
    name = f"PRECISION_{str(p).upper()}"
    try:
        return _pb.ops.Precision.Value(name)
    except ValueError:
        raise InvalidArgument(f"precision {p!r} is not one of default, f32, f64, tf32, bf16, f16") from None
