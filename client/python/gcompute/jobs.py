# SPDX-License-Identifier: Apache-2.0
"""Jobs: an operation submitted with Client.submit runs on the server whether or not this
process stays connected; a Job follows it (status, watch, cancel) and collects its result.
See docs/jobs.md of the repository."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

import grpc

from . import _pb
from ._replicas import Deadline, Route
from .errors import Error, FailedPrecondition, error_for

if TYPE_CHECKING:  # pragma: no cover
    from .client import Client

# SubmitJobRequest's field and JobResult's field of each operation's unary method.
SUBMIT_FIELDS = {"Transpose": "transpose", "MatMul": "matmul", "Svd": "svd",
                 "BatchedSvd": "batched_svd", "Eigh": "eigh", "Apsp": "apsp",
                 "ShortestPath": "shortest_path", "Sssp": "sssp"}
RESULT_FIELDS = {"Transpose": "transpose", "MatMul": "matmul", "Svd": "svd", "BatchedSvd": "svd",
                 "Eigh": "eigh", "Apsp": "apsp", "ShortestPath": "shortest_path", "Sssp": "sssp"}
FINAL_STATES = ("SUCCEEDED", "FAILED", "CANCELLED")


@dataclass(frozen=True)
class JobStatus:
    """A job as the server reports it. state: QUEUED, RUNNING, SUCCEEDED, FAILED or CANCELLED;
    fraction (0..1), phase and detail ("round 12 of 128") describe its progress; error is the
    operation's error when it FAILED or was CANCELLED. Times are Unix milliseconds (0: not yet)."""

    job_id: str
    method: str
    state: str
    fraction: float
    phase: str
    detail: str
    created_unix_ms: int
    started_unix_ms: int
    finished_unix_ms: int
    expires_unix_ms: int
    error: Optional[Error]

    @property
    def done(self) -> bool:
        return self.state in FINAL_STATES


def _status_code(number: int) -> grpc.StatusCode:
    for code in grpc.StatusCode:
        if code.value[0] == number:
            return code
    return grpc.StatusCode.UNKNOWN


def status_from(job) -> JobStatus:
    state = _pb.jobs.JobState.Name(job.state).replace("JOB_STATE_", "")
    error = error_for(_status_code(job.error_code), job.error_message) if job.error_code else None
    return JobStatus(job.job_id, job.method, state, job.progress.fraction, job.progress.phase,
                     job.progress.detail, job.created_unix_ms, job.started_unix_ms,
                     job.finished_unix_ms, job.expires_unix_ms, error)


class Job:
    """A submitted job on one replica. Methods take timeout= (seconds; default: the client's)."""

    def __init__(self, client: "Client", job_id: str, replica: int, method: str,
                 convert: Callable[[Any, Any], Any]) -> None:
        self.id = job_id
        self.method = method
        self._client = client
        self._replica = replica
        self._convert = convert

    def __repr__(self) -> str:
        return f"Job({self.id!r}, {self.method})"

    def status(self, *, timeout: Optional[float] = None) -> JobStatus:
        return status_from(self._call("GetJob", _pb.jobs.GetJobRequest(job_id=self.id), timeout))

    @property
    def progress(self) -> float:
        """The fraction done now (0..1), asked from the server."""
        return self.status().fraction

    def cancel(self, *, timeout: Optional[float] = None) -> JobStatus:
        """Cancels the job: a queued one at once, a running one at its kernel's next step."""
        return status_from(self._call("CancelJob", _pb.jobs.CancelJobRequest(job_id=self.id),
                                      timeout).job)

    def watch(self, *, timeout: Optional[float] = None) -> Iterator[JobStatus]:
        """The job now and after each change of state or progress, ending with a final state."""
        deadline = self._client._deadline(timeout)
        replica = self._client._replicas.replicas[self._replica]
        request = _pb.jobs.WatchJobRequest(job_id=self.id)
        try:
            for job in replica.stub.WatchJob(request, timeout=deadline.remaining(),
                                             metadata=self._client._metadata):
                yield status_from(job)
        except grpc.RpcError as e:
            raise error_for(e.code(), e.details() or "", replica=replica.name) from None

    def result(self, *, timeout: Optional[float] = None):
        """Waits until the job is final and returns what the operation's method returns (arrays,
        Refs with store=True, ...); raises the operation's error when it FAILED or was
        CANCELLED."""
        last = None
        for last in self.watch(timeout=timeout):
            pass
        if last is None or not last.done:
            raise FailedPrecondition(f"job {self.id} ended its watch without a final state")
        if last.error is not None:
            raise last.error
        deadline = self._client._deadline(timeout)
        job = self._call("GetJob", _pb.jobs.GetJobRequest(job_id=self.id), timeout)
        replica = self._client._replicas.replicas[self._replica]
        response = getattr(job.result, RESULT_FIELDS[self.method])
        return self._convert(response, self._client._transfer(replica, deadline))

    def _call(self, method: str, request, timeout: Optional[float]):
        deadline: Deadline = self._client._deadline(timeout)
        return self._client._replicas.run(
            Route(self._replica), deadline,
            lambda r: getattr(r.stub, method)(request, timeout=deadline.remaining(),
                                              metadata=self._client._metadata))
