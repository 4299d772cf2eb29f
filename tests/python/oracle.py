# SPDX-License-Identifier: Apache-2.0
"""Reference results that the Python client tests compare against (imported by the test files;
pytest puts this directory on sys.path)."""
import numpy as np


def floyd_warshall(w):
    """Float64 Floyd-Warshall; +inf = no edge; the diagonal starts at min(0, w_ii)."""
    d = np.array(w, dtype=np.float64)
    np.fill_diagonal(d, np.minimum(np.diag(d), 0))
    for k in range(d.shape[0]):
        d = np.minimum(d, d[:, k, None] + d[None, k, :])
    return d


def bellman_ford(n, src, dst, weight, source):
    """Float64 Bellman-Ford from `source` over edges src[e] -> dst[e] (parallel edges: the
    least weight counts; +inf = no edge): the distances (+inf unreachable). Raises
    ValueError on a negative cycle reachable from the source."""
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    weight = np.asarray(weight, dtype=np.float64)
    d = np.full(n, np.inf)
    d[source] = 0.0
    for _ in range(n):
        new = d.copy()
        np.minimum.at(new, dst, d[src] + weight)
        if np.array_equal(new, d):
            return d
        d = new
    raise ValueError("negative cycle reachable from the source")
