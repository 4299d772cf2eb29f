# SPDX-License-Identifier: Apache-2.0
"""NumPy arrays <-> gcompute.v1.Matrix: raw little-endian row-major bytes, batch outermost."""
from __future__ import annotations

from typing import Iterable, Optional, Tuple

import numpy as np

from . import _pb
from .errors import Internal, InvalidArgument
from .types import DTYPES

_WIRE = {
    "f32": _pb.types.DTYPE_F32,
    "f64": _pb.types.DTYPE_F64,
    "f16": _pb.types.DTYPE_F16,
    "bf16": _pb.types.DTYPE_BF16,
    "i32": _pb.types.DTYPE_I32,
}
_NAMES = {v: k for k, v in _WIRE.items()}
_BY_NUMPY = {np.dtype("float32"): "f32", np.dtype("float64"): "f64", np.dtype("float16"): "f16",
             np.dtype("int32"): "i32"}


def wire_dtype(name: str) -> int:
    return _WIRE[name]


def dtype_name(wire: int) -> str:
    """"f32", ... for a wire DType ("" for DTYPE_UNSPECIFIED or unknown values)."""
    return _NAMES.get(wire, "")


def as_matrix_array(x, what: str, *, accept: Iterable[str], convert_ints_to: Optional[str] = None,
                    convert_floats_to: Optional[str] = None, batched: bool = True) -> Tuple[np.ndarray, str]:
    """`x` as a C-contiguous little-endian 2-D or (if batched) 3-D array of an accepted dtype.

    Integer and bool arrays become `convert_ints_to` (when given) and floating arrays of other
    widths `convert_floats_to` (when given); anything else not in `accept` is INVALID_ARGUMENT,
    as are other ranks. Returns the array and its wire dtype name.
    """
    a = np.asarray(x)
    if a.ndim != 2 and not (batched and a.ndim == 3):
        ranks = "2-D (rows x cols) or 3-D (batch x rows x cols)" if batched else "2-D (rows x cols)"
        raise InvalidArgument(f"{what} must be {ranks}; got shape {a.shape}")
    name = _BY_NUMPY.get(a.dtype.newbyteorder("=")) if a.dtype.byteorder != "|" else None
    if name is None or name not in accept:
        if convert_ints_to and (np.issubdtype(a.dtype, np.integer) or a.dtype == np.bool_):
            name = convert_ints_to
        elif convert_floats_to and np.issubdtype(a.dtype, np.floating):
            name = convert_floats_to
        else:
            raise InvalidArgument(f"{what} has dtype {a.dtype}; accepted: "
                                  + ", ".join(str(DTYPES[n]) + f" ({n})" for n in accept))
    return np.ascontiguousarray(a, dtype=DTYPES[name]), name


def shape3(a) -> Tuple[int, int, int]:
    """(batch, rows, cols) of anything with a 2-D or 3-D shape (an array, a Ref)."""
    shape = tuple(a.shape)
    return (1, *shape) if len(shape) == 2 else shape  # type: ignore[return-value]


def to_matrix(a: np.ndarray, name: str, out) -> None:
    """Fills gcompute.v1.Matrix `out` from a prepared array (see as_matrix_array)."""
    batch, rows, cols = shape3(a)
    out.batch = batch
    out.rows = rows
    out.cols = cols
    out.dtype = _WIRE[name]
    out.data = a.tobytes()


def shape_string(batch: int, rows: int, cols: int, dtype: str) -> str:
    return f"{batch}x{rows}x{cols} {dtype or 'unspecified'}"


def empty_for(batch: int, rows: int, cols: int, wire: int, what: str) -> np.ndarray:
    """An uninitialised array for a matrix the server describes (checked: Internal if invalid)."""
    name = dtype_name(wire)
    batch = batch or 1
    if batch < 0 or rows < 0 or cols < 0 or not name:
        raise Internal(f"server returned an invalid {what}: {shape_string(batch, rows, cols, name)}")
    return np.empty((batch, rows, cols), dtype=DTYPES[name])


def from_matrix(m, what: str) -> np.ndarray:
    """A writable (batch, rows, cols) array with the data of gcompute.v1.Matrix `m`."""
    out = empty_for(m.batch, m.rows, m.cols, m.dtype, what)
    if len(m.data) != out.nbytes:
        raise Internal(f"server returned {len(m.data)} bytes for {what} "
                       f"({shape_string(*out.shape, dtype_name(m.dtype))}); expected {out.nbytes}")
    out.reshape(-1).view(np.uint8)[:] = np.frombuffer(m.data, dtype=np.uint8)
    return out
