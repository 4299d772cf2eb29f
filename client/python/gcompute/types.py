# SPDX-License-Identifier: Apache-2.0
"""Plain values of the gcompute client: stored-matrix references, server description, call
results and the graph store's types. No gRPC types appear here."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np

from .errors import Internal, InvalidArgument

#: Wire dtype names and their NumPy dtypes (little-endian). bf16 has no NumPy dtype: such
#: matrices are returned as uint16 bit patterns.
DTYPES = {
    "f32": np.dtype("<f4"),
    "f64": np.dtype("<f8"),
    "f16": np.dtype("<f2"),
    "bf16": np.dtype("<u2"),
    "i32": np.dtype("<i4"),
}


@dataclass(frozen=True)
class Ref:
    """A matrix stored on a server (upload(), or a result of a call with store=True).

    Accepted wherever an array is. The client sends calls that use it to the replica that
    created it (`replica`); a Ref built by hand from an id alone is routed by the client's
    memory of the refs it created, or, if it created none of that id, to one replica in turn.
    """

    id: str
    #: (rows, cols), or (batch, rows, cols) for a batch of more than one matrix.
    shape: Tuple[int, ...] = ()
    #: "f32", "f64", "f16", "bf16" or "i32" ("" when unknown).
    dtype: str = ""
    #: When the server deletes it unless it is deleted earlier (Unix time, milliseconds).
    expires_at_unix_ms: int = 0
    size_bytes: int = 0
    #: The replica ("HOST:PORT") that holds it, when known.
    replica: Optional[str] = None

    @property
    def numpy_dtype(self) -> Optional[np.dtype]:
        """The NumPy dtype of the data (None when unknown)."""
        return DTYPES.get(self.dtype)


@dataclass(frozen=True)
class StoredApsp:
    """APSP results kept on the server (apsp(..., store=True)), for shortest_path calls."""

    distances: Ref
    next_hop: Optional[Ref]


@dataclass(frozen=True)
class ExecutionStats:
    """Where the time of a call went, as measured by the server (seconds)."""

    queue_seconds: float = 0.0
    h2d_seconds: float = 0.0
    compute_seconds: float = 0.0
    d2h_seconds: float = 0.0
    total_seconds: float = 0.0
    device: str = ""


@dataclass(frozen=True)
class Path:
    """One shortest path: the vertices from source to target (empty when unreachable)."""

    reachable: bool
    length: float
    vertices: List[int]
    stats: ExecutionStats = field(default_factory=ExecutionStats)


@dataclass(frozen=True, eq=False)  # arrays have no truth value: == is identity
class SsspResult:
    """Shortest paths from one source to every vertex (Client.sssp).

    Row i is vertex i of an edge list, or vertex vertex_ids[i] of a stored graph (vertex_ids
    is None when those are 0 .. n-1 anyway). distances: (n,) float32, +inf where unreachable;
    parents: (n,) int32, the row before row i on a shortest path (the source's own row for the
    source, -1 where unreachable). With store=True both are Refs (1 x n) instead of arrays.
    reachable counts the rows with a finite distance, the source included.
    """

    distances: Union[np.ndarray, Ref]
    parents: Union[np.ndarray, Ref]
    vertex_ids: Optional[np.ndarray]
    reachable: int
    stats: ExecutionStats = field(default_factory=ExecutionStats)

    def row_of(self, v: int) -> int:
        """The row of vertex v (an index of the edge list, or a vertex id of the stored
        graph); InvalidArgument if there is no such vertex."""
        v = int(v)
        if self.vertex_ids is None:
            d = self.distances
            n = len(d) if isinstance(d, np.ndarray) else d.shape[-1]
            if not 0 <= v < n:
                raise InvalidArgument(f"vertex {v} is outside 0..{n - 1}")
            return v
        row = int(np.searchsorted(self.vertex_ids, v))
        if row >= len(self.vertex_ids) or self.vertex_ids[row] != v:
            raise InvalidArgument(f"vertex {v} is not a vertex of the graph")
        return row

    def path_to(self, v: int) -> Optional[List[int]]:
        """The vertices of a shortest path from the source to v (vertex ids of a stored graph,
        indices of an edge list), source first; None if v is unreachable."""
        if not isinstance(self.parents, np.ndarray):
            raise InvalidArgument("path_to needs the parents as an array (sssp without store=True)")
        row = self.row_of(v)
        if self.parents[row] < 0:
            return None
        rows = [row]
        while self.parents[rows[-1]] != rows[-1]:
            rows.append(int(self.parents[rows[-1]]))
            if len(rows) > len(self.parents):
                raise Internal(f"the parents of vertex {v} form a cycle: {rows[-8:]}")
        rows.reverse()
        if self.vertex_ids is None:
            return rows
        return [int(self.vertex_ids[r]) for r in rows]


@dataclass(frozen=True)
class Device:
    index: int
    name: str
    memory_bytes: int
    compute_capability: str


@dataclass(frozen=True)
class Limits:
    max_message_bytes: int
    max_matrix_elements: int
    queue_depth: int
    stored_matrix_quota_bytes: int
    default_ttl_seconds: int
    workers: int


@dataclass(frozen=True)
class ServerInfo:
    """GetServerInfo of one replica."""

    replica: str
    version: str
    backend: str
    backend_note: str
    devices: List[Device]
    limits: Limits


# --- The graph store -------------------------------------------------------------------------

VertexIds = Union[int, Sequence[int]]


@dataclass(frozen=True)
class Hyperedge:
    """A directed hyperedge from every tail to every head. An ordinary edge u -> v is
    Hyperedge(u, v, w); `id` is assigned by the server (ignored when creating)."""

    tails: Tuple[int, ...]
    heads: Tuple[int, ...]
    weight: float
    id: int = 0

    def __init__(self, tails: VertexIds, heads: VertexIds, weight: float, id: int = 0) -> None:
        object.__setattr__(self, "tails", _ids(tails))
        object.__setattr__(self, "heads", _ids(heads))
        object.__setattr__(self, "weight", float(weight))
        object.__setattr__(self, "id", int(id))


def _ids(v: VertexIds) -> Tuple[int, ...]:
    if isinstance(v, (int, np.integer)):
        return (int(v),)
    return tuple(int(x) for x in v)


@dataclass(frozen=True)
class GraphInfo:
    """Summary of a stored graph; version is 1 after creation, +1 per batch of edits."""

    graph_id: str
    version: int
    num_vertices: int
    num_edges: int


@dataclass(frozen=True)
class GraphSnapshot:
    """A consistent snapshot of one version of a stored graph."""

    info: GraphInfo
    vertices: List[int]
    edges: List[Hyperedge]


@dataclass(frozen=True)
class AddVertex:
    """Adds a vertex; its id is in the EditResult."""


@dataclass(frozen=True)
class DeleteVertex:
    """Removes a vertex from every incident edge; edges left without tails or heads go too."""

    vertex_id: int


@dataclass(frozen=True)
class AddEdge:
    """Adds a hyperedge; its id is in the EditResult."""

    tails: Tuple[int, ...]
    heads: Tuple[int, ...]
    weight: float

    def __init__(self, tails: VertexIds, heads: VertexIds, weight: float) -> None:
        object.__setattr__(self, "tails", _ids(tails))
        object.__setattr__(self, "heads", _ids(heads))
        object.__setattr__(self, "weight", float(weight))


@dataclass(frozen=True)
class DeleteEdge:
    edge_id: int


@dataclass(frozen=True)
class SetWeight:
    edge_id: int
    weight: float


@dataclass(frozen=True)
class DecomposeVertex:
    """Splits vertex v into v and a new vertex w joined by an edge v -> w of joining_weight;
    the edges in move_edge_ids have v replaced by w."""

    vertex_id: int
    move_edge_ids: Tuple[int, ...] = ()
    joining_weight: float = 0.0


Edit = Union[AddVertex, DeleteVertex, AddEdge, DeleteEdge, SetWeight, DecomposeVertex]


@dataclass(frozen=True)
class EditResult:
    """What one edit created or removed (fields that do not apply are 0 / empty)."""

    vertex_id: int = 0
    edge_id: int = 0
    deleted_edge_ids: Tuple[int, ...] = ()


@dataclass(frozen=True)
class EditsResult:
    """The graph's version after a batch of edits, and one EditResult per edit."""

    version: int
    results: List[EditResult]


class EdgeList:
    """A graph as an edge list for apsp / shortest_path / sssp: edge e goes src[e] -> dst[e] with
    weight[e], vertices are 0 .. num_vertices - 1, parallel edges keep the smallest weight.

    Either `edges`, an iterable of (src, dst, weight) triples or an (m, 3) array, or the three
    arrays `src`, `dst`, `weight`. num_vertices defaults to 1 + the largest vertex id (0 for no
    edges). Weights travel as f32 (default; +inf is no edge) or i32 (`dtype="i32"`; distances
    come back as int32 with 2147483647 for unreachable; apsp and shortest_path only).
    """

    __slots__ = ("src", "dst", "weight", "num_vertices", "dtype")

    def __init__(self, edges=None, *, src=None, dst=None, weight=None,
                 num_vertices: Optional[int] = None, dtype: str = "f32") -> None:
        if edges is not None:
            if src is not None or dst is not None or weight is not None:
                raise InvalidArgument("EdgeList: give either edges or src/dst/weight, not both")
            rows = np.asarray(list(edges) if not isinstance(edges, np.ndarray) else edges,
                              dtype=np.float64)
            if rows.size == 0:
                rows = rows.reshape(0, 3)
            if rows.ndim != 2 or rows.shape[1] != 3:
                raise InvalidArgument(f"EdgeList: edges must be (src, dst, weight) triples; got shape {rows.shape}")
            src, dst, weight = rows[:, 0], rows[:, 1], rows[:, 2]
        src = np.asarray(src if src is not None else [], dtype=np.float64).ravel()
        dst = np.asarray(dst if dst is not None else [], dtype=np.float64).ravel()
        weight = np.asarray(weight if weight is not None else [], dtype=np.float64).ravel()
        if not (len(src) == len(dst) == len(weight)):
            raise InvalidArgument(f"EdgeList: src, dst and weight have lengths {len(src)}, {len(dst)}, {len(weight)}")
        for name, ids in (("src", src), ("dst", dst)):
            if len(ids) and not np.all(ids == np.floor(ids)):
                raise InvalidArgument(f"EdgeList: {name} holds non-integer vertex ids")
        if dtype not in ("f32", "i32"):
            raise InvalidArgument(f"EdgeList: dtype must be 'f32' or 'i32', not {dtype!r}")
        if dtype == "i32" and not np.all(weight == np.floor(weight)):
            raise InvalidArgument("EdgeList: dtype 'i32' needs integer weights")
        self.src = src.astype(np.int64)
        self.dst = dst.astype(np.int64)
        self.weight = weight
        if num_vertices is None:
            num_vertices = int(max(self.src.max(initial=-1), self.dst.max(initial=-1))) + 1
        self.num_vertices = int(num_vertices)
        self.dtype = dtype

    def __len__(self) -> int:
        return len(self.src)

    def __repr__(self) -> str:
        return f"EdgeList({len(self)} edges, num_vertices={self.num_vertices}, dtype={self.dtype!r})"
