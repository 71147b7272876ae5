"""``kerasperf callgrind -- pytest ARGS``: pytest under callgrind, set up to count exactly.

The process runs under ``valgrind --tool=callgrind --instr-atstart=no``: nothing is
instrumented until the plugin switches instrumentation on around one workload call
(``measure/instructions.py``).  What makes a count repeat, each shown by experiment
(docs/instructions.md): one CPU, address-space randomization off, every malloc of 1 KiB or more
its own mmap, single-threaded BLAS and OpenMP, and ``PYTHONHASHSEED=0``.  Argument parsing and
the process only; counting is the plugin's.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_kerasperf.measure.instructions import DIRECTORY_ENV, FILE_PATTERN, TOOL_ENV

EXIT_BAD_INPUT = 2
#: personality(2): ADDR_NO_RANDOMIZE, as ``setarch -R`` sets it
ADDR_NO_RANDOMIZE = 0x0040000
#: one thread for each library that would start a pool of its own
SINGLE_THREADED = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
#: glibc's malloc serves every block of 1 KiB or more with an mmap of its own, so that a numpy
#: buffer's alignment (whether XLA copies it) no longer follows the heap (docs/instructions.md)
MALLOC_TUNABLE = "glibc.malloc.mmap_threshold=1024"
#: ``--mmap-threshold``'s default, the bytes of MALLOC_TUNABLE
MMAP_THRESHOLD = 1024


def tool_name(version: str, mmap_threshold: int = MMAP_THRESHOLD) -> str:
    """What a count is recorded under, less the CPU: the valgrind, and the malloc threshold
    where it is not the default (counts under two thresholds are never compared)."""
    if mmap_threshold == MMAP_THRESHOLD:
        return version
    return f"{version} mmap_threshold={mmap_threshold}"


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "callgrind",
        help="run pytest under callgrind, counting each perf test's instructions",
        description="Run `python -m pytest --kerasperf-instructions ARGS` under valgrind's "
        "callgrind, on one CPU, with address-space randomization off and single-threaded "
        "BLAS/OpenMP, so that each perf test's instructions per workload call are counted "
        "and repeat (docs/instructions.md). Exit status: pytest's.",
    )
    parser.add_argument(
        "--cpu", type=int, metavar="N", help="the CPU to run on (default: the first allowed)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="where callgrind writes (default: a temporary directory, removed after)",
    )
    parser.add_argument(
        "--mmap-threshold",
        type=int,
        default=MMAP_THRESHOLD,
        metavar="BYTES",
        help="glibc's malloc serves every block of BYTES or more with an mmap of its own "
        f"(default {MMAP_THRESHOLD}); 0 maps every block, which takes the alignment of small "
        "tensors out of small workloads' counts; a count made with another value than the "
        "default is recorded under its own tool (docs/instructions.md)",
    )
    parser.add_argument(
        "pytest_args",
        nargs=argparse.REMAINDER,
        metavar="-- [pytest] ARGS",
        help="pytest's arguments, after --",
    )


def valgrind_version(valgrind: str) -> str:
    done = subprocess.run([valgrind, "--version"], capture_output=True, text=True, check=False)
    return done.stdout.strip() or "valgrind"


def valgrind_command(valgrind: str, out: Path) -> list[str]:
    """callgrind, instrumenting nothing until the plugin asks, dumping into ``out``."""
    return [
        valgrind,
        "--tool=callgrind",
        "--instr-atstart=no",
        "--trace-children=no",
        f"--callgrind-out-file={out / FILE_PATTERN}",
    ]


def command(valgrind: str, out: Path, pytest_args: Sequence[str]) -> list[str]:
    return [
        *valgrind_command(valgrind, out),
        sys.executable,
        "-m",
        "pytest",
        "--kerasperf-instructions",
        *pytest_args,
    ]


def environment(out: Path, tool: str, mmap_threshold: int = MMAP_THRESHOLD) -> dict[str, str]:
    env = dict(os.environ)
    env.update(SINGLE_THREADED)
    env.setdefault("PYTHONHASHSEED", "0")
    tunables = [t for t in env.get("GLIBC_TUNABLES", "").split(":") if t]
    env["GLIBC_TUNABLES"] = ":".join(
        [t for t in tunables if not t.startswith("glibc.malloc.mmap_threshold=")]
        + [f"glibc.malloc.mmap_threshold={mmap_threshold}"]
    )
    env[DIRECTORY_ENV] = str(out)
    env[TOOL_ENV] = tool
    return env


def pin(cpu: int) -> None:
    """One CPU and no address-space randomization: run in the child, before valgrind."""
    os.sched_setaffinity(0, {cpu})
    libc = ctypes.CDLL(None, use_errno=True)
    libc.personality(ADDR_NO_RANDOMIZE)


def main(args: argparse.Namespace) -> int:
    pytest_args = list(args.pytest_args)
    for word in ("--", "pytest"):
        if pytest_args[:1] == [word]:
            pytest_args = pytest_args[1:]
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return _refuse("valgrind is not installed (apt-get install valgrind)")
    allowed = sorted(os.sched_getaffinity(0))
    cpu = allowed[0] if args.cpu is None else args.cpu
    if args.mmap_threshold < 0:
        return _refuse(f"--mmap-threshold {args.mmap_threshold}: give a number of bytes, 0 or more")
    if cpu not in allowed:
        where = ", ".join(map(str, allowed))
        return _refuse(f"--cpu {cpu}: this process may run on CPUs {where}")
    scratch = args.out is None
    out = Path(tempfile.mkdtemp(prefix="kerasperf-callgrind-")) if scratch else args.out
    try:
        out.mkdir(parents=True, exist_ok=True)
        tool = tool_name(valgrind_version(valgrind), args.mmap_threshold)
        print(
            f"kerasperf callgrind: {tool} on CPU {cpu}, address-space randomization off, "
            f"malloc mmap_threshold {args.mmap_threshold}; dumps in {out}",
            file=sys.stderr,
            flush=True,
        )
        done = subprocess.run(
            command(valgrind, out, pytest_args),
            env=environment(out, tool, args.mmap_threshold),
            preexec_fn=lambda: pin(cpu),
            check=False,
        )
        return done.returncode
    except OSError as error:
        return _refuse(str(error))
    finally:
        if scratch:
            shutil.rmtree(out, ignore_errors=True)


def _refuse(why: str) -> int:
    print(f"kerasperf callgrind: error: {why}", file=sys.stderr)
    return EXIT_BAD_INPUT
