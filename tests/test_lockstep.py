"""Lockstep timing: two real processes take turns, one round at a time, never both at once."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_kerasperf.measure import lockstep

CHILD = textwrap.dedent(
    """
    import json, sys, time
    from pytest_kerasperf.measure import lockstep

    rounds, out, busy_first = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    time.sleep(busy_first)  # untimed work before the first round (an import, a compile)
    turn = lockstep.child_turn()
    spans = []
    for _ in range(rounds):
        turn.ready()
        start = time.monotonic()
        time.sleep(0.02)  # the "round"
        spans.append((start, time.monotonic()))
        turn.done()
    json.dump(spans, open(out, "w"))
    """
)


def _start(
    controller: lockstep.Controller, side: str, rounds: int, out: Path, busy: float
) -> subprocess.Popen[bytes]:
    fd = controller.child_fd(side)
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(rounds), str(out), str(busy)],
        env={**os.environ, lockstep.LOCKSTEP_FD: str(fd)},
        pass_fds=(fd,),
    )


def test_two_processes_alternate_rounds_and_never_overlap(tmp_path: Path) -> None:
    controller = lockstep.Controller(["base", "head"])
    outs = {side: tmp_path / f"{side}.json" for side in ("base", "head")}
    # head starts its rounds later (a slower import) and has more of them.
    procs = {
        "base": _start(controller, "base", 4, outs["base"], 0.0),
        "head": _start(controller, "head", 6, outs["head"], 0.3),
    }
    controller.started()
    controller.serve(timeout_s=60)
    assert all(p.wait(timeout=60) == 0 for p in procs.values())
    controller.close()
    assert controller.rounds == {"base": 4, "head": 6}
    spans = {side: json.loads(out.read_text()) for side, out in outs.items()}
    timeline = sorted((start, end, side) for side, s in spans.items() for start, end in s)
    for (_, end, _), (start, _, _) in itertools.pairwise(timeline):
        assert start >= end  # one round at a time
    order = [side for _, _, side in timeline]
    # base's first round waited for head to reach its first boundary; then each cycle has
    # one round of each, in the cycle's drawn order, and head runs its last two rounds alone
    # after base has exited.
    assert [tuple(order[i : i + 2]) for i in range(0, 8, 2)] == controller.orders[:4]
    assert all(sorted(cycle) == ["base", "head"] for cycle in controller.orders[:4])
    assert order[8:] == ["head", "head"]
    assert controller.orders[4:] == [("head",), ("head",)]


def test_the_order_within_a_cycle_is_drawn_and_repeatable(tmp_path: Path) -> None:
    """A side that always went first would carry that position's cost: the order of each
    cycle is drawn at random, both orders occur, and a seed repeats the draw."""
    orders = []
    for run in range(2):
        controller = lockstep.Controller(["base", "head"], seed=7)
        outs = {side: tmp_path / f"{side}-{run}.json" for side in ("base", "head")}
        procs = [_start(controller, side, 12, outs[side], 0.0) for side in ("base", "head")]
        controller.started()
        controller.serve(timeout_s=60)
        assert [p.wait(timeout=60) for p in procs] == [0, 0]
        controller.close()
        orders.append(controller.orders)
    assert orders[0] == orders[1]
    firsts = [cycle[0] for cycle in orders[0]]
    assert 2 <= firsts.count("base") <= 10  # 12 cycles: both orders, not a fixed one


EXITS_SLOWLY = textwrap.dedent(
    """
    import json, sys, time
    from pytest_kerasperf.measure import lockstep

    turn = lockstep.child_turn()
    for _ in range(2):
        turn.ready()
        turn.done()
    turn._sock.close()  # the end closes first, the process goes on (an interpreter's shutdown)
    time.sleep(0.5)
    json.dump(time.monotonic(), open(sys.argv[1], "w"))
    """
)


def test_a_side_that_closes_its_end_runs_no_round_until_its_process_is_gone(
    tmp_path: Path,
) -> None:
    """The other side's next round waits for the exiting process (whose shutdown would run
    on the same CPU during that round), not only for its socket to close."""
    controller = lockstep.Controller(["base", "head"], seed=1)
    exit_file, head_out = tmp_path / "exit.json", tmp_path / "head.json"
    fd = controller.child_fd("base")
    base = subprocess.Popen(
        [sys.executable, "-c", EXITS_SLOWLY, str(exit_file)],
        env={**os.environ, lockstep.LOCKSTEP_FD: str(fd)},
        pass_fds=(fd,),
    )
    head = _start(controller, "head", 5, head_out, 0.0)
    controller.started()
    controller.serve(timeout_s=60, exited={"base": lambda seconds: base.wait(timeout=seconds)})
    assert [base.wait(timeout=60), head.wait(timeout=60)] == [0, 0]
    controller.close()
    exited = json.loads(exit_file.read_text())
    spans = json.loads(head_out.read_text())
    assert controller.rounds == {"base": 2, "head": 5}
    # head's rounds after base's two: none starts before base's process is gone.
    assert all(start >= exited for start, _ in spans[2:])
    assert spans[-1][0] - spans[0][0] >= 0.5


def test_a_process_that_never_reaches_a_round_is_a_clear_error(tmp_path: Path) -> None:
    controller = lockstep.Controller(["base"])
    fd = controller.child_fd("base")
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)"],
        env={**os.environ, lockstep.LOCKSTEP_FD: str(fd)},
        pass_fds=(fd,),
    )
    controller.started()
    try:
        with pytest.raises(lockstep.LockstepError, match="base process reached no round"):
            controller.serve(timeout_s=1)
    finally:
        proc.kill()
        proc.wait()
        controller.close()


def test_a_process_that_exits_without_rounds_ends_the_loop(tmp_path: Path) -> None:
    controller = lockstep.Controller(["base", "head"])
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", "pass"],
            env={**os.environ, lockstep.LOCKSTEP_FD: str(controller.child_fd(s))},
            pass_fds=(controller.child_fd(s),),
        )
        for s in ("base", "head")
    ]
    controller.started()
    controller.serve(timeout_s=30)
    assert [p.wait(timeout=30) for p in procs] == [0, 0]
    assert controller.rounds == {"base": 0, "head": 0}
    controller.close()
