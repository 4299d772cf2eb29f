# SPDX-License-Identifier: Apache-2.0
"""Errors of the gcompute client: one class per gRPC status code, all subclasses of Error.

The server's message is kept unchanged (`str(e)` and `e.message`); `e.code` is the
grpc.StatusCode. A few classes also derive from the built-in exception a Python caller would
expect: InvalidArgument is a ValueError, NotFound a LookupError, DeadlineExceeded a
TimeoutError. Client-side checks of arguments (before anything is sent) raise the same classes
as the server would, with INVALID_ARGUMENT messages that name the argument.
"""
from __future__ import annotations

from typing import Dict, Optional, Type

import grpc
import numpy as np


class Error(Exception):
    """A failed gcompute call: the gRPC status code and the server's message."""

    #: The status code of this class (subclasses set it).
    code: grpc.StatusCode = grpc.StatusCode.UNKNOWN

    def __init__(self, message: str, *, code: Optional[grpc.StatusCode] = None,
                 replica: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        #: The replica ("HOST:PORT") that answered, when the client knows several.
        self.replica = replica

    @property
    def code_name(self) -> str:
        """The code as the gRPC documentation spells it, e.g. "INVALID_ARGUMENT"."""
        return self.code.name

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code_name}: {self.message!r})"


class Cancelled(Error):
    """The call was cancelled (CANCELLED)."""
    code = grpc.StatusCode.CANCELLED


class Unknown(Error):
    """UNKNOWN: an error without a more precise code."""
    code = grpc.StatusCode.UNKNOWN


class InvalidArgument(Error, ValueError):
    """INVALID_ARGUMENT: bad shape, dtype, byte length or option; the message names the field."""
    code = grpc.StatusCode.INVALID_ARGUMENT


class DeadlineExceeded(Error, TimeoutError):
    """DEADLINE_EXCEEDED: the call's timeout passed (before or during the work)."""
    code = grpc.StatusCode.DEADLINE_EXCEEDED


class NotFound(Error, LookupError):
    """NOT_FOUND: unknown matrix ref, graph, vertex or edge id."""
    code = grpc.StatusCode.NOT_FOUND


class AlreadyExists(Error):
    """ALREADY_EXISTS: create_graph with a graph id in use."""
    code = grpc.StatusCode.ALREADY_EXISTS


class PermissionDenied(Error):
    """PERMISSION_DENIED."""
    code = grpc.StatusCode.PERMISSION_DENIED


class ResourceExhausted(Error):
    """RESOURCE_EXHAUSTED: queue full, over a size limit or the stored-matrix quota, out of memory."""
    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class FailedPrecondition(Error):
    """FAILED_PRECONDITION: e.g. a negative cycle in APSP."""
    code = grpc.StatusCode.FAILED_PRECONDITION


class Aborted(Error):
    """ABORTED: apply_edits with an expected_version that is not the graph's version."""
    code = grpc.StatusCode.ABORTED


class OutOfRange(Error):
    """OUT_OF_RANGE."""
    code = grpc.StatusCode.OUT_OF_RANGE


class Unimplemented(Error):
    """UNIMPLEMENTED: the server does not offer the method."""
    code = grpc.StatusCode.UNIMPLEMENTED


class Internal(Error):
    """INTERNAL: a bug or a device error; the message names the failing call."""
    code = grpc.StatusCode.INTERNAL


class Unavailable(Error):
    """UNAVAILABLE: the server is unreachable, draining, or its device failed (retry elsewhere)."""
    code = grpc.StatusCode.UNAVAILABLE


class DataLoss(Error):
    """DATA_LOSS."""
    code = grpc.StatusCode.DATA_LOSS


class Unauthenticated(Error):
    """UNAUTHENTICATED: a missing or rejected token."""
    code = grpc.StatusCode.UNAUTHENTICATED


_BY_CODE: Dict[grpc.StatusCode, Type[Error]] = {
    cls.code: cls
    for cls in (Cancelled, Unknown, InvalidArgument, DeadlineExceeded, NotFound, AlreadyExists,
                PermissionDenied, ResourceExhausted, FailedPrecondition, Aborted, OutOfRange,
                Unimplemented, Internal, Unavailable, DataLoss, Unauthenticated)
}


def error_class(code: grpc.StatusCode) -> Type[Error]:
    """The Error subclass of a status code (Unknown for codes without one, such as OK)."""
    return _BY_CODE.get(code, Unknown)


def error_for(code: grpc.StatusCode, message: str, *, replica: Optional[str] = None) -> Error:
    """An instance of the class of `code`, carrying `message`."""
    cls = error_class(code)
    return cls(message, code=code, replica=replica)


def from_rpc_error(e: grpc.RpcError, *, replica: Optional[str] = None) -> Error:
    """The Error of a failed gRPC call (grpc.RpcError that is also a grpc.Call)."""
    code = e.code() if hasattr(e, "code") else grpc.StatusCode.UNKNOWN
    details = e.details() if hasattr(e, "details") else None
    return error_for(code, details if details is not None else str(e), replica=replica)


class SvdNotConverged(np.linalg.LinAlgError):
    """svd / batched_svd: the Jacobi sweeps ran out (max_sweeps) before convergence.

    numpy.linalg.svd raises LinAlgError in that case; so does this client. The server's
    result is kept in `result` (what the call would have returned) and `sweeps`.
    """

    def __init__(self, message: str, *, sweeps: int, result: object) -> None:
        super().__init__(message)
        self.sweeps = sweeps
        self.result = result
