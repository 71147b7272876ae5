"""Lockstep timing: two measuring processes take turns, one timed round at a time.

An A/B runs BASE and HEAD in two processes at once; a controller lets only
one of them run a timed round while the other waits at a round boundary, so
base round i and head round i are milliseconds apart and whatever slows the
machine (another tenant, a frequency change) hits both sides alike instead of
one whole process.  The processes' untimed work (imports, compiling,
counting) also runs one side at a time, never under the other's round.

The protocol, over one socket pair per process (the child's end passed as an
inherited file descriptor named by ``KERASPERF_LOCKSTEP_FD``):

- child, before each round (pytest-benchmark's ``setup``): send ``r``, wait
  for ``g``;
- child, after each round (``teardown``): send ``d``;
- controller: waits until both children are at a boundary (or gone), then
  alternates ``g`` between them, waiting for each round's ``d`` and the next
  ``r`` before the other side's turn.  A child that exits closes its end; the
  other then runs alone.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Sequence
from typing import Any

LOCKSTEP_FD = "KERASPERF_LOCKSTEP_FD"
READY, GO, DONE = b"r", b"g", b"d"


class LockstepError(Exception):
    """A side did not reach its next boundary in time."""


# --------------------------------------------------------------------------- the child's side


class Turn:
    """A measuring process's end: ``ready`` before a timed round, ``done`` after it."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def ready(self) -> None:
        self._sock.sendall(READY)
        if self._sock.recv(1) != GO:
            raise RuntimeError("kerasperf lockstep: the controller went away")

    def done(self, *args: Any, **kwargs: Any) -> None:
        self._sock.sendall(DONE)


_TURN: list[Turn] = []


def child_turn() -> Turn | None:
    """This process's ``Turn`` when a controller started it in lockstep, else None."""
    if _TURN:
        return _TURN[0]
    fd = os.environ.pop(LOCKSTEP_FD, None)  # not for this process's own children
    if not fd:
        return None
    sock = socket.socket(fileno=int(fd))
    sock.set_inheritable(False)  # a compile worker must not keep the controller waiting
    _TURN.append(Turn(sock))
    return _TURN[0]


# --------------------------------------------------------------------------- the controller


class Controller:
    """Socket pairs for ``sides`` processes and the loop that makes them take turns."""

    def __init__(self, sides: Sequence[str]) -> None:
        self._ours: dict[str, socket.socket] = {}
        self._theirs: dict[str, socket.socket] = {}
        for side in sides:
            ours, theirs = socket.socketpair()
            self._ours[side], self._theirs[side] = ours, theirs
        self.rounds: dict[str, int] = dict.fromkeys(sides, 0)

    def child_fd(self, side: str) -> int:
        """The descriptor to pass to ``side``'s process (``pass_fds``, ``LOCKSTEP_FD``)."""
        return self._theirs[side].fileno()

    def started(self) -> None:
        """Every process is started: close the children's ends here, so an exit reads as EOF."""
        for sock in self._theirs.values():
            sock.close()

    def close(self) -> None:
        for sock in (*self._ours.values(), *self._theirs.values()):
            sock.close()

    def _recv(self, side: str, deadline: float) -> bytes:
        sock = self._ours[side]
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        try:
            return sock.recv(1)
        except TimeoutError:
            raise LockstepError(f"the {side} process reached no round boundary in time") from None
        except ConnectionResetError:
            return b""

    def serve(self, timeout_s: float) -> None:
        """Alternate the timed rounds until every process has exited (closed its end)."""
        deadline = time.monotonic() + timeout_s
        alive: dict[str, bool] = {}
        for side in self._ours:  # every side at a boundary (or gone) before any round
            alive[side] = self._recv(side, deadline) == READY
        while any(alive.values()):
            for side in self._ours:
                if not alive[side]:
                    continue
                try:
                    self._ours[side].sendall(GO)
                except (BrokenPipeError, ConnectionResetError):
                    alive[side] = False
                    continue
                message = self._recv(side, deadline)
                if message == DONE:
                    self.rounds[side] += 1
                    message = self._recv(side, deadline)  # its untimed work runs alone
                alive[side] = message == READY
