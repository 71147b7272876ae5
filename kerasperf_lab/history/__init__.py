"""Keras's history: sweep a range of commits, attribute each change to its merge, bisect, A/B.

``kerasperf sweep``, ``sweep-merge``, ``bisect``, ``ab`` and ``prs`` (docs/history.md), on the
plugin's A/B engine, in the layers of ``LAYERS`` in ``tests/test_layers.py`` (CONTRIBUTING.md);
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
    for name in COMMANDS:
        commands.choices[name].set_defaults(run=main)


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

    commands = {"prs": prs.main, "ab": ab.main, "bisect": bisect.main}
    return commands.get(args.command, sweep.main)(args)
