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
- child, after each round (``teardown``): send ``d``, wait for ``c``;
- controller: waits until both children are at a boundary (or gone); then,
  cycle after cycle, gives ``g`` to each side in turn, in an order drawn at
  random (seeded) for the cycle, and waits for its ``d``; once every side has
  run its round of the cycle it sends each ``c`` and waits for each one's
  next ``r`` (or its exit) before the next cycle.  So the two rounds of a
  cycle follow each other with nothing in between: a side's untimed work
  after its round (the next test's counting, its interpreter's shutdown)
  runs after the cycle, never between its round and the other side's (a
  last round that waited on the other side's exit ran slow: docs/history.md,
  "The last round"), and the drawn order keeps a position's cost off one
  side.  A child that exits closes its end; the controller waits
  for the process itself to be gone before the next cycle, and the other
  side then runs alone.
"""

from __future__ import annotations

import functools
import os
import random
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

LOCKSTEP_FD = "KERASPERF_LOCKSTEP_FD"
READY, GO, DONE, CONTINUE = b"r", b"g", b"d", b"c"


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
        if self._sock.recv(1) != CONTINUE:
            raise RuntimeError("kerasperf lockstep: the controller went away")


@functools.cache
def child_turn() -> Turn | None:
    """This process's ``Turn`` when a controller started it in lockstep, else None."""
    fd = os.environ.pop(LOCKSTEP_FD, None)  # not for this process's own children
    if not fd:
        return None
    sock = socket.socket(fileno=int(fd))
    sock.set_inheritable(False)  # a compile worker must not keep the controller waiting
    return Turn(sock)


# --------------------------------------------------------------------------- the controller


class Controller:
    """Socket pairs for ``sides`` processes and the loop that makes them take turns."""

    def __init__(self, sides: Sequence[str], seed: int | None = None) -> None:
        pairs = {side: socket.socketpair() for side in sides}
        self._ours = {side: ours for side, (ours, _) in pairs.items()}
        self._theirs = {side: theirs for side, (_, theirs) in pairs.items()}
        self.rounds: dict[str, int] = dict.fromkeys(sides, 0)
        #: the order of the sides' turns in each cycle (a cycle: one turn of each live side)
        self.orders: list[tuple[str, ...]] = []
        self._random = random.Random(seed)

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

    def serve(
        self,
        timeout_s: float,
        exited: Mapping[str, Callable[[float], object]] | None = None,
    ) -> None:
        """Run the cycles (one round of each live side, in a random order) until every process
        has exited (closed its end).  ``exited[side](seconds)`` waits for that side's process
        to be gone: called when its end closes, before the next cycle."""
        deadline = time.monotonic() + timeout_s
        alive = dict.fromkeys(self._ours, True)

        def gone(side: str) -> None:
            alive[side] = False
            if exited is not None and side in exited:
                exited[side](max(deadline - time.monotonic(), 0.001))

        for side in self._ours:  # every side at a boundary (or gone) before any round
            if self._recv(side, deadline) != READY:
                gone(side)
        while any(alive.values()):
            order = [side for side in self._ours if alive[side]]
            self._random.shuffle(order)
            self.orders.append(tuple(order))
            ran = []
            for side in order:
                try:
                    self._ours[side].sendall(GO)
                except (BrokenPipeError, ConnectionResetError):
                    gone(side)
                    continue
                if self._recv(side, deadline) == DONE:
                    self.rounds[side] += 1
                    ran.append(side)
                else:  # gone during its round
                    gone(side)
            for side in ran:  # the cycle is over: every side's untimed work may run
                try:
                    self._ours[side].sendall(CONTINUE)
                except (BrokenPipeError, ConnectionResetError):
                    alive[side] = False
            for side in ran:
                if not alive[side] or self._recv(side, deadline) != READY:
                    gone(side)
