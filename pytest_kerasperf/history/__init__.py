"""Keras's history: sweep a range of commits, attribute each change to its merge, bisect, A/B.

``kerasperf sweep``, ``kerasperf sweep-merge``, ``kerasperf bisect`` and
``kerasperf ab`` (docs/history.md).  ``commits`` reads the repository (GitPython, bare or
not), ``sweep`` measures, caches, judges and reports, ``bisect`` searches exact counts,
``bisect_latency`` searches latency with an A/B at each step, ``charts`` draws, ``ab``
times two commits interleaved and judges (also for ``--kerasperf-compare-ref``),
``changepoints`` finds the levels of a noisy series.
"""

from __future__ import annotations

import argparse
from typing import Any

COMMANDS = ("sweep", "sweep-merge", "bisect", "ab")


def add_parsers(commands: Any) -> None:
    """Register the history commands on the ``kerasperf`` command's sub-parsers."""
    from pytest_kerasperf.history import ab, bisect, sweep

    sweep.add_parsers(commands)
    bisect.add_parser(commands)
    ab.add_parser(commands)


#: What the history commands import beyond the plugin (the ``history`` extra).
NEEDS = ("git", "numpy", "scipy")


def missing_modules() -> list[str]:
    """The modules of the ``history`` extra that cannot be imported here (git also needs a
    ``git`` executable on PATH: GitPython's import fails without one)."""
    import importlib

    missing = []
    for name in NEEDS:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing


def main(args: argparse.Namespace) -> int:
    """Run the history command ``args.command``; the exit status."""
    import sys

    missing = missing_modules()
    if missing:
        print(
            f"kerasperf {args.command}: error: needs {', '.join(missing)}: "
            "pip install 'pytest-kerasperf[history]' (and a git executable on PATH)",
            file=sys.stderr,
        )
        return 2
    from pytest_kerasperf.history import ab, bisect, sweep

    if args.command == "ab":
        return ab.main(args)
    if args.command == "bisect":
        return bisect.main(args)
    return sweep.main(args)
