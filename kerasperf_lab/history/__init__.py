"""Keras's history: sweep a range of commits, attribute each change to its merge, bisect, A/B.

``kerasperf sweep``, ``kerasperf sweep-merge``, ``kerasperf bisect``,
``kerasperf ab`` and ``kerasperf prs`` (docs/history.md), on the plugin's A/B
engine (``pytest_kerasperf.ab``: a commit's suite in fresh processes, pairs in
lockstep, the A/B statistics), in layers, top to bottom; no module imports from
a layer above its own, and none takes part in a cycle (``tests/test_layers.py``):

- the commands (argument parsers and ``main``): ``sweep`` (sweep and
  sweep-merge), ``bisect`` (exact counts; ``bisect_latency`` for latency,
  with ``ab``'s statistics arguments), ``ab`` and ``prs`` (PRs before and
  after);
- rendering: ``render`` (a sweep's table as terminal text, Markdown, JSON),
  ``charts`` (PNG) and ``prs_render`` (the per-PR table);
- a sweep's rows and measurements: ``steps`` (what moved at each commit,
  pure), ``cache`` (measurements per commit, shards) and ``prs_table`` (a
  PR's rows, pure);
- pure and light: ``changepoints`` (the levels of a noisy series) and
  ``pulls`` (a PR's before and after commits from refs).

numpy, scipy and git are imported inside the functions that use them.
"""

from __future__ import annotations

import argparse
from typing import Any

COMMANDS = ("sweep", "sweep-merge", "bisect", "ab", "prs")


def add_parsers(commands: Any) -> None:
    """Register the history commands on the ``kerasperf`` command's sub-parsers."""
    from kerasperf_lab.history import ab, bisect, prs, sweep

    sweep.add_parsers(commands)
    bisect.add_parser(commands)
    ab.add_parser(commands)
    prs.add_parser(commands)


def main(args: argparse.Namespace) -> int:
    """Run the history command ``args.command``; the exit status."""
    import sys

    from pytest_kerasperf.ab import missing_modules

    missing = missing_modules()
    if missing:
        print(
            f"kerasperf {args.command}: error: needs {', '.join(missing)}: "
            "pip install 'pytest-kerasperf[lab]' (and a git executable on PATH)",
            file=sys.stderr,
        )
        return 2
    from kerasperf_lab.history import ab, bisect, prs, sweep

    if args.command == "prs":
        return prs.main(args)
    if args.command == "ab":
        return ab.main(args)
    if args.command == "bisect":
        return bisect.main(args)
    return sweep.main(args)
