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
