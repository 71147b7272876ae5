"""pytest-kerasperf's lab: Keras's history (``history/``, docs/history.md) and publishing
(``publish/``, docs/publish.md and docs/article-report.md), beside the plugin, never inside it:
CONTRIBUTING.md ("The lab") says what it imports and how ``kerasperf`` finds its commands.
"""

from __future__ import annotations

import argparse
from typing import Any


def add_parsers(commands: Any) -> None:
    """Register the lab's commands on the ``kerasperf`` command's sub-parsers, each with the
    ``main`` that runs it."""
    from kerasperf_lab import history
    from kerasperf_lab.publish import command

    history.add_parsers(commands)
    command.add_parser(commands)


def report_article(args: argparse.Namespace) -> int:
    """``kerasperf report --article``: the article's views of the results files."""
    from kerasperf_lab.publish import command

    return command.report_article(args)
