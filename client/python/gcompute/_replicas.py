# SPDX-License-Identifier: Apache-2.0
"""The servers of one Client and which of them a call goes to: round robin with failover for
stateless calls, the creating replica for stored matrices, the owner for graph ids (the same
rules as the C++ client's client/lib/replicas.cc)."""
from __future__ import annotations

import itertools
import random
import threading
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple, TypeVar

import grpc

from . import _pb
from .errors import DeadlineExceeded, Error, InvalidArgument, Unavailable, from_rpc_error
from .routing import expand_target, graph_owner

T = TypeVar("T")


class Deadline:
    """The deadline of one Client call: it covers the whole call, automatic uploads and
    downloads included. None: no deadline."""

    __slots__ = ("_end",)

    def __init__(self, timeout: Optional[float]) -> None:
        self._end = None if timeout is None else time.monotonic() + float(timeout)

    def remaining(self) -> Optional[float]:
        """Seconds left for the next RPC (None: unbounded); DeadlineExceeded when none are."""
        if self._end is None:
            return None
        left = self._end - time.monotonic()
        if left <= 0:
            raise DeadlineExceeded("deadline exceeded before the call could be (re)sent")
        return left

    def passed(self) -> bool:
        return self._end is not None and time.monotonic() >= self._end


@dataclass
class Replica:
    """One server: its name as written in the target (or resolved), channel and stub."""

    index: int
    name: str
    channel: grpc.Channel
    stub: "_pb.service_grpc.ComputeStub"


@dataclass(frozen=True)
class Route:
    """Where a call goes: `fixed` (state lives there; never retried elsewhere) or any replica
    (round robin, failing over while replicas answer UNAVAILABLE)."""

    fixed: Optional[int] = None


class ReplicaSet:
    """The channels of a target and the routing state (thread-safe)."""

    def __init__(self, target: str, *, credentials: Optional[grpc.ChannelCredentials],
                 options: Sequence[Tuple[str, object]],
                 interceptors: Sequence[object] = ()) -> None:
        self.names: List[str] = expand_target(target)
        self.replicas: List[Replica] = []
        for i, name in enumerate(self.names):
            if credentials is None:
                channel = grpc.insecure_channel(name, options=list(options))
            else:
                channel = grpc.secure_channel(name, credentials, options=list(options))
            if interceptors:
                channel = grpc.intercept_channel(channel, *interceptors)
            self.replicas.append(Replica(i, name, channel, _pb.service_grpc.ComputeStub(channel)))
        # Many short-lived clients would all start at replica 0: start at a random one.
        self._next = itertools.count(random.randrange(len(self.names)))
        self._lock = threading.Lock()
        self._matrix_owners: Dict[str, Tuple[int, int]] = {}  # id -> (replica, expires_at_unix_ms)

    def __len__(self) -> int:
        return len(self.replicas)

    def close(self) -> None:
        for r in self.replicas:
            r.channel.close()

    def next_round_robin(self) -> int:
        with self._lock:
            return next(self._next) % len(self.replicas)

    # --- routing ------------------------------------------------------------------------------

    def route_for_graph(self, graph_id: str) -> Route:
        return Route(graph_owner(self.names, graph_id))

    def remember_matrix(self, matrix_id: str, replica: int, expires_at_unix_ms: int) -> None:
        if len(self.replicas) == 1:
            return
        with self._lock:
            # Forget expired matrices now and then, so a long-lived client does not grow.
            if len(self._matrix_owners) >= 4096 and len(self._matrix_owners) % 1024 == 0:
                now_ms = int(time.time() * 1000)
                self._matrix_owners = {k: v for k, v in self._matrix_owners.items()
                                       if v[1] == 0 or v[1] >= now_ms}
            self._matrix_owners[matrix_id] = (replica, expires_at_unix_ms)

    def forget_matrix(self, matrix_id: str) -> None:
        with self._lock:
            self._matrix_owners.pop(matrix_id, None)

    def matrix_owner(self, matrix_id: str, replica_name: Optional[str] = None) -> Optional[int]:
        """The replica holding a stored matrix: the one named by its Ref, else the one this
        client remembers creating it, else None (unknown)."""
        if len(self.replicas) == 1:
            return 0
        if replica_name is not None and replica_name in self.names:
            return self.names.index(replica_name)
        with self._lock:
            owner = self._matrix_owners.get(matrix_id)
        return owner[0] if owner else None

    def route_for_refs(self, refs: Sequence[Tuple[str, Optional[str]]]) -> Route:
        """The route of a call whose stored operands are `refs` ((id, replica name) pairs)."""
        fixed: Optional[int] = None
        unknown = False
        for matrix_id, replica_name in refs:
            owner = self.matrix_owner(matrix_id, replica_name)
            if owner is None:
                unknown = True
                continue
            if fixed is not None and fixed != owner:
                raise InvalidArgument(
                    f"the stored operands of one call live on different servers "
                    f"({self.names[fixed]} and {self.names[owner]}): download one and pass it "
                    f"inline, or upload both through one server")
            fixed = owner
        # A ref this client did not create may be on any replica: one is chosen in turn
        # (NOT_FOUND if it is elsewhere), never retried as if the call were stateless.
        if fixed is None and unknown:
            fixed = self.next_round_robin()
        return Route(fixed)

    # --- running ------------------------------------------------------------------------------

    def run(self, route: Route, deadline: Deadline, fn: Callable[[Replica], T]) -> T:
        """fn(replica) on the route: a fixed replica once, or replicas in turn from the next
        round-robin one while they answer UNAVAILABLE and the deadline has not passed.
        grpc.RpcError raised by fn becomes the matching gcompute Error."""
        if route.fixed is not None:
            return self._attempt(self.replicas[route.fixed], fn)
        n = len(self.replicas)
        first = self.next_round_robin()
        for i in range(n):
            replica = self.replicas[(first + i) % n]
            try:
                return self._attempt(replica, fn)
            except Unavailable:
                if i + 1 >= n or deadline.passed():
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _attempt(self, replica: Replica, fn: Callable[[Replica], T]) -> T:
        try:
            return fn(replica)
        except grpc.RpcError as e:
            raise from_rpc_error(e, replica=replica.name if len(self.replicas) > 1 else None) from None
        except Error as e:
            if e.replica is None and len(self.replicas) > 1:
                e.replica = replica.name
            raise
