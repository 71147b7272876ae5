"""Instructions executed by one workload call, counted under callgrind (valgrind).

Call counts cannot see a redundant tensor copy, a slower kernel or a device
transfer; wall time sees them but is too noisy to gate on a shared CPU.
callgrind counts the instructions a process executes, the same on every run
of the same binary with the same inputs.  The process runs under
``valgrind --tool=callgrind --instr-atstart=no`` (``kerasperf callgrind``
starts it so, ``docs/instructions.md``); nothing is instrumented until the
measured call: around it, pytest-codspeed's instrument hooks (its compiled
``dist_instrument_hooks``: callgrind client requests) zero the counters,
switch instrumentation on, then off, and dump the counts of that window to a
file of their own, which is read here, after the last round, and deleted.

What the count leaves out and what makes it repeat, each decided by experiment
(docs/instructions.md): the idle loops of thread pools (``IDLE_FUNCTIONS``) and the functions
whose cost follows where objects lie in memory (``LAYOUT_FUNCTIONS``) are left out; one CPU,
address-space randomization off, single-threaded BLAS and OpenMP, ``PYTHONHASHSEED=0`` and
warm-up calls past CPython's quickening; then the median of a few calls.
"""

from __future__ import annotations

import gc
import importlib
import os
import re
import statistics
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: where ``kerasperf callgrind`` tells callgrind to write (``--callgrind-out-file=DIR/...``)
DIRECTORY_ENV = "KERASPERF_CALLGRIND_DIR"
#: the valgrind the process runs under (``valgrind --version``), set by ``kerasperf callgrind``
TOOL_ENV = "KERASPERF_CALLGRIND_TOOL"
#: the out-file pattern ``kerasperf callgrind`` passes: one file per dump, by pid and part
FILE_PATTERN = "callgrind.%p"
#: the thread pools' idle machinery: a worker looking for work, stealing, or spinning before
#: it sleeps (XLA:CPU's Eigen pool, through tsl).  Their self cost is left out of a count.
IDLE_FUNCTIONS = re.compile(
    r"^(Eigen::ThreadPoolTempl<[^>]*>::|Eigen::RunQueue<|tsl::thread::EigenEnvironment::Task::)"
)
#: functions whose own cost follows where objects lie in memory, not the work done: a probe
#: sequence in a dict keyed by objects (hashed by address), a miss in CPython's type
#: attribute cache (indexed by the name's address), and the allocators walking their free
#: lists.  Addresses follow everything a process allocated before (its paths, its
#: environment, its command line), so two processes doing the same work differ there by tens
#: of thousands of instructions; their self cost is left out of a count (docs/instructions.md).
LAYOUT_FUNCTIONS = re.compile(
    r"^(_Py_dict_lookup|unicodekeys_lookup_unicode|unicodekeys_lookup_generic"
    r"|dictkeys_generic_lookup|_PyDict_GetItem_KnownHash|find_empty_slot"
    r"|_PyType_Lookup|find_name_in_mro|assign_version_tag(\..*)?"
    r"|_PyObject_Malloc|_PyObject_Free|_PyObject_Realloc|allocate_from_new_pool"
    r"|_int_malloc|_int_free|_int_memalign|unlink_chunk(\..*)?|malloc_consolidate)$"
)
#: everything a count leaves out (the functions' own cost only; what they call stays counted)
LEFT_OUT_FUNCTIONS = re.compile(f"{IDLE_FUNCTIONS.pattern}|{LAYOUT_FUNCTIONS.pattern}")


class InstructionsUnavailable(Exception):
    """Instructions cannot be counted in this process; the message says what to do."""


@dataclass(frozen=True)
class Dump:
    """One callgrind dump: its trigger, its total, and each function's own (self) cost."""

    trigger: str | None
    totals: int
    self_cost: Counter[str]

    def without(self, idle: re.Pattern[str] = LEFT_OUT_FUNCTIONS) -> tuple[int, int]:
        """(the total less the left-out functions' own cost, that cost)."""
        left_out = sum(n for name, n in self.self_cost.items() if idle.search(name))
        return sum(self.self_cost.values()) - left_out, left_out


_NAME = re.compile(r"\((\d+)\)(?: (.*))?$")


def parse_dump(path: Path) -> Dump:
    """A callgrind out-file's per-function self cost (the first event, Ir).

    The format (callgrind's "Callgrind Format Specification"): ``fn=`` opens a
    function (names may be compressed to ``(id)`` after their first use), a
    cost line is positions then events, and the cost line after ``calls=`` is
    the inclusive cost of that call, which belongs to the callee, not to the
    function it is written under.
    """
    names: dict[str, str] = {}
    positions = 1
    function = "???"
    after_call = False
    self_cost: Counter[str] = Counter()
    totals: int | None = None
    trigger: str | None = None
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            first = line[:1]
            if first.isdigit() or first in "+-*":
                if after_call:
                    after_call = False
                    continue
                fields = line.split()
                if len(fields) > positions:
                    self_cost[function] += int(fields[positions])
            elif line.startswith(("fn=", "cfn=")):
                value = line.split("=", 1)[1].rstrip("\n")
                match = _NAME.match(value)
                if match is None:
                    name = value
                elif match.group(2) is not None:
                    name = names[match.group(1)] = match.group(2)
                else:
                    name = names.get(match.group(1), value)
                if line.startswith("fn="):
                    function = name
            elif line.startswith("calls="):
                after_call = True
            elif line.startswith("positions:"):
                positions = len(line.split()) - 1
            elif line.startswith("totals:"):
                totals = int(line.split()[1])
            elif line.startswith("desc: Trigger:"):
                trigger = line.split("Trigger:", 1)[1].strip()
    summed = sum(self_cost.values())
    if totals is not None and totals != summed:
        raise InstructionsUnavailable(
            f"{path}: its functions' costs sum to {summed:,}, its totals line says {totals:,}"
        )
    return Dump(trigger, summed, self_cost)


@dataclass(frozen=True)
class InstructionCounts:
    """The instructions of ``rounds`` calls after warm-up: their median and range."""

    median: int
    low: int
    high: int
    rounds: int
    left_out: int  # the left-out functions' own cost, median over the rounds
    tool: str  # the valgrind that counted


class Hooks:
    """pytest-codspeed's instrument hooks: callgrind client requests, from C."""

    def __init__(self) -> None:
        try:
            hooks = importlib.import_module(
                "pytest_codspeed.instruments.hooks.dist_instrument_hooks"
            )
        except ImportError as error:
            raise InstructionsUnavailable(
                "--kerasperf-instructions needs pytest-codspeed's instrument hooks: "
                f"pip install 'pytest-codspeed>=5,<6' ({error})"
            ) from None
        self._hooks: Any = hooks
        self._instance = hooks.instrument_hooks_init()
        if self._instance is None or not hooks.instrument_hooks_is_instrumented(self._instance):
            raise InstructionsUnavailable(
                "--kerasperf-instructions counts under callgrind, and this process does not "
                "run under valgrind: run pytest as `kerasperf callgrind -- <pytest args>`"
            )

    def start(self) -> None:  # zero the counters, instrument from here
        self._hooks.instrument_hooks_start_benchmark(self._instance)

    def stop(self) -> None:
        self._hooks.instrument_hooks_stop_benchmark(self._instance)

    def dump(self, label: str) -> None:  # the counts since start, to a file of their own
        self._hooks.instrument_hooks_set_executed_benchmark(
            self._instance, os.getpid(), label.encode("ascii", "replace")
        )


def directory() -> Path:
    value = os.environ.get(DIRECTORY_ENV)
    if not value or not Path(value).is_dir():
        raise InstructionsUnavailable(
            f"--kerasperf-instructions reads callgrind's dumps from ${DIRECTORY_ENV}, which is "
            "not set to a directory: run pytest as `kerasperf callgrind -- <pytest args>`"
        )
    return Path(value)


def _dumps(where: Path) -> set[Path]:
    return set(where.glob(f"callgrind.{os.getpid()}.*"))


def _dumped(
    where: Path, before: Iterable[Path], labels: Iterable[str]
) -> dict[str, tuple[Path, Dump]]:
    """The dumps written since ``before``, by the label each was dumped with."""
    wanted = {f"Client Request: {label}": label for label in labels}
    found: dict[str, tuple[Path, Dump]] = {}
    for path in sorted(_dumps(where) - set(before)):
        dump = parse_dump(path)
        if dump.trigger in wanted:
            found[wanted[dump.trigger]] = (path, dump)
    missing = [label for label in wanted.values() if label not in found]
    if missing:
        raise InstructionsUnavailable(
            f"callgrind wrote no dump for {missing[0]!r} into {where} (was it started with "
            f"--callgrind-out-file={where}/{FILE_PATTERN}?)"
        )
    return found


def count_instructions(
    call: Callable[[], Any],
    *,
    label: str,
    warmup: int,
    rounds: int,
    hooks: Hooks | None = None,
) -> InstructionCounts:
    """``warmup`` uncounted calls, then ``rounds`` calls each counted on its own."""
    if rounds < 1:
        raise ValueError("count at least one round")
    hooks = hooks or Hooks()
    where = directory()
    for _ in range(warmup):
        call()
    before = _dumps(where)
    tags = [f"kerasperf {label} #{index}" for index in range(rounds)]
    for tag in tags:
        gc.collect()
        gc.disable()
        try:
            hooks.start()
            call()
            hooks.stop()
        finally:
            gc.enable()
        hooks.dump(tag)
    # Read only after the last round: parsing a dump (its text differs from process to process)
    # between rounds moved the next round's count (docs/instructions.md).
    dumps = _dumped(where, before, tags)
    kept, idle = zip(*(dumps[tag][1].without() for tag in tags), strict=True)
    for path, _ in dumps.values():
        path.unlink()
    return InstructionCounts(
        median=int(statistics.median_low(kept)),
        low=min(kept),
        high=max(kept),
        rounds=rounds,
        left_out=int(statistics.median_low(idle)),
        tool=os.environ.get(TOOL_ENV, "valgrind"),
    )
