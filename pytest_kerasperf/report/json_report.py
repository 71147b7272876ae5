"""``--kerasperf-json``: every outcome of the run, as a results file (``results_file``).

Each result carries ``record``: the whole measurement, every function and
edge, so ``kerasperf accept`` can turn a results file from CI into baseline
entries (their compact form), and the history commands can diff it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pytest_kerasperf.accounting import RunAccount
from pytest_kerasperf.baseline import write_atomic
from pytest_kerasperf.outcome import Outcome
from pytest_kerasperf.results_file import encode


def write(path: Path, outcomes: Sequence[Outcome], summary: RunAccount | None = None) -> None:
    write_atomic(path, encode(outcomes, summary))
