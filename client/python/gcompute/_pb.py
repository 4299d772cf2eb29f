# SPDX-License-Identifier: Apache-2.0
"""The generated modules of proto/gcompute/v1 (gcompute.v1), imported in one place so that a
source tree without them fails with a message that says how to get them."""
from __future__ import annotations

try:
    from .v1 import graphs_pb2 as graphs  # noqa: F401
    from .v1 import jobs_pb2 as jobs  # noqa: F401
    from .v1 import matrices_pb2 as matrices  # noqa: F401
    from .v1 import operations_pb2 as ops  # noqa: F401
    from .v1 import service_pb2 as service  # noqa: F401
    from .v1 import service_pb2_grpc as service_grpc  # noqa: F401
    from .v1 import types_pb2 as types  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on how the package was obtained
    raise ImportError(
        "gcompute's generated gRPC stubs (gcompute.v1) are missing: install the package with "
        "pip (see docs/python.md) or build the CMake target gcompute_python and put "
        f"BUILD/client/python on PYTHONPATH ({e})") from e
