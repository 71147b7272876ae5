"""pytest-kerasperf's lab: Keras's history and publishing, beside the plugin, never inside it.

- ``history/``: ``kerasperf sweep`` and ``sweep-merge``, ``bisect``, ``ab`` and ``prs``
  (docs/history.md): a range of Keras commits measured, each change attributed to its merge,
  bisected, A/B-tested, tabled per pull request;
- ``publish/``: the article's views (``kerasperf report --article``, docs/article-report.md),
  their charts, and ``kerasperf publish``'s self-contained HTML page (docs/publish.md).

The lab imports the plugin's typed results, registry and A/B engine
(``pytest_kerasperf.ab``); the plugin never imports the lab (``tests/test_layers.py``). The
``kerasperf`` command finds its commands through the entry-point groups
``pytest_kerasperf.commands`` (``add_parsers``) and ``pytest_kerasperf.report``
(``report_article``), declared in ``pyproject.toml``. Its dependencies are the ``lab`` extra.
"""

from __future__ import annotations

import argparse
from typing import Any

from kerasperf_lab.history import COMMANDS as HISTORY_COMMANDS

COMMANDS = (*HISTORY_COMMANDS, "publish")


def add_parsers(commands: Any) -> None:
    """Register the lab's commands on the ``kerasperf`` command's sub-parsers; each runs
    through ``main``."""
    from kerasperf_lab import history
    from kerasperf_lab.publish import command

    history.add_parsers(commands)
    command.add_parser(commands)
    for name in COMMANDS:
        commands.choices[name].set_defaults(run=main)


def main(args: argparse.Namespace) -> int:
    """Run the lab command ``args.command``; the exit status."""
    if args.command == "publish":
        from kerasperf_lab.publish import command

        return command.main(args)
    from kerasperf_lab import history

    return history.main(args)


def report_article(args: argparse.Namespace) -> int:
    """``kerasperf report --article``: the article's views of the results files."""
    from kerasperf_lab.publish import command

    return command.report_article(args)
