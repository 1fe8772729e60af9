"""The long command running (firmware/rig/job.c): its progress for STATUS, its abort flag, its end; and how
a command reaches the host meanwhile (the server answers the link through ``RigIO``)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nandrig import protocol as P
from nandrig.boards.sim.rig import Reject
from nandrig.protocol import Err, Frame


@dataclass
class RigIO:
    """How a long command reaches the host while it runs."""

    poll: Callable[[], list[Frame]] = lambda: []
    send: Callable[[Frame], None] = lambda frame: None


@dataclass
class Job:
    op: int
    seq: int
    done: int = 0
    total: int = 0
    running: bool = False
    abort: bool = False
    target: int = 0


class JobControl:
    """job_start, job_end and job_status of the firmware, on the rig's ``job`` and ``boot``."""

    job: Job
    boot: int
    abort_at_start: set[tuple[int, int]]

    def _start(self, req: Frame, total: int) -> Job:
        self.job = Job(req.op, req.seq, 0, total, True, target=req.target if req.op in P.TARGETED else 0)
        if (self.job.target, req.seq) in self.abort_at_start:  # a kept CYCLE aborted while it waited to start
            self.abort_at_start.discard((self.job.target, req.seq))
            self.job.abort = True
        return self.job

    def _end_job(self, body: bytes) -> bytes:
        """A long command ends: its reply, or an ABORTED refusal carrying it as the partial result."""
        self.job.running = False
        if self.job.abort:
            raise Reject(Err.ABORTED, body)
        return body

    def _status_payload(self) -> bytes:
        j = self.job
        return P.STATUS_REPLY.pack(P.JobState.BUSY if j.running else P.JobState.IDLE, j.op, j.seq, j.done, j.total,
                                   self.boot)
