# SPDX-License-Identifier: Apache-2.0
"""gcompute: the Python client of the gcompute service (SVD, matmul, transpose, all-pairs
shortest paths and a versioned graph store on GPUs, over gRPC), NumPy in and out.

    import numpy as np, gcompute
    with gcompute.Client("127.0.0.1:50051") as gc:
        u, s, vt = gc.svd(np.random.rand(300, 200), full_matrices=False)

See docs/python.md of the repository for a walkthrough.
"""
from .client import Client
from .errors import (Aborted, AlreadyExists, Cancelled, DataLoss, DeadlineExceeded, Error,
                     FailedPrecondition, Internal, InvalidArgument, NotFound, OutOfRange,
                     PermissionDenied, ResourceExhausted, SvdNotConverged, Unauthenticated,
                     Unavailable, Unimplemented, Unknown)
from .jobs import Job, JobStatus
from .routing import expand_target, graph_owner, rendezvous_score
from .types import (AddEdge, AddVertex, DecomposeVertex, DeleteEdge, DeleteVertex, Device,
                    EdgeList, EditResult, EditsResult, ExecutionStats, GraphInfo, GraphSnapshot,
                    Hyperedge, Limits, Path, Ref, ServerInfo, SetWeight, SsspResult, StoredApsp)

__version__ = "0.1.0"

__all__ = [
    "Client", "Job", "JobStatus", "Ref", "StoredApsp", "EdgeList", "Path", "SsspResult", "ServerInfo",
    "Device", "Limits",
    "ExecutionStats", "Hyperedge", "GraphInfo", "GraphSnapshot", "EditResult", "EditsResult",
    "AddVertex", "DeleteVertex", "AddEdge", "DeleteEdge", "SetWeight", "DecomposeVertex",
    "Error", "Cancelled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound",
    "AlreadyExists", "PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted",
    "OutOfRange", "Unimplemented", "Internal", "Unavailable", "DataLoss", "Unauthenticated",
    "SvdNotConverged", "expand_target", "graph_owner", "rendezvous_score", "__version__",
]
