"""Keras's history: sweep a range of commits, attribute each change to its merge, bisect, A/B.

``kerasperf sweep``, ``kerasperf sweep-merge``, ``kerasperf bisect``,
``kerasperf ab``, ``kerasperf prs`` (docs/history.md) and ``kerasperf coverage``
(docs/census.md), in layers, top to bottom; no module
imports from a layer above its own, and none takes part in a cycle
(``tests/test_layers.py``):

- the commands (argument parsers and ``main``): ``sweep`` (sweep and
  sweep-merge), ``bisect`` (exact counts; ``bisect_latency`` for latency,
  with ``ab``'s statistics arguments), ``ab`` and ``prs`` (PRs before and
  after);
- rendering: ``render`` (a sweep's table as terminal text, Markdown, JSON),
  ``charts`` (PNG) and ``prs_render`` (the per-PR table);
- a sweep's rows and measurements: ``steps`` (what moved at each commit,
  pure), ``cache`` (measurements per commit, shards) and ``prs_table`` (a
  PR's rows, pure);
- measuring: ``abplan`` (an A/B's settings and when it stops),
  ``interleave`` (pairs of processes timed in lockstep), ``processes`` (one
  measuring process: its timing environment, CPU pinning, a pair in lockstep) and
  ``runner`` (a commit's suite in a fresh pytest process, with ``probe``,
  the ``-p`` plugin of that process, loaded there);
- ``coverage``: which changed functions of a diff no perf test executes;
- pure and light: ``stats`` (the A/B verdict, also for
  ``--kerasperf-compare-ref``), ``changepoints`` (the levels of a noisy
  series), ``text`` (names in text), ``pulls`` (a PR's before and after
  commits from refs) and ``commits`` (the repository, GitPython, bare or
  not).

numpy, scipy and git are imported inside the functions that use them.
"""

from __future__ import annotations

import argparse
from typing import Any

COMMANDS = ("sweep", "sweep-merge", "bisect", "ab", "prs", "coverage")


def add_parsers(commands: Any) -> None:
    """Register the history commands on the ``kerasperf`` command's sub-parsers."""
    from pytest_kerasperf.history import ab, bisect, coverage, prs, sweep

    sweep.add_parsers(commands)
    coverage.add_parser(commands)
    bisect.add_parser(commands)
    ab.add_parser(commands)
    prs.add_parser(commands)


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
    from pytest_kerasperf.history import ab, bisect, coverage, prs, sweep

    if args.command == "coverage":
        return coverage.main(args)
    if args.command == "prs":
        return prs.main(args)
    if args.command == "ab":
        return ab.main(args)
    if args.command == "bisect":
        return bisect.main(args)
    return sweep.main(args)
