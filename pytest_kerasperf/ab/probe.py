"""The pytest plugin of a measuring process (``-p pytest_kerasperf.ab.probe``).

A sweep, a bisect and an A/B load it into each pytest process they start,
and only there: its ``pytest_sessionfinish`` writes where ``keras`` came
from, and its ``pytest_collection_modifyitems`` keeps the tests an A/B
selected.  Light on purpose: the standard library, pytest's types, and the
test key (``record.test_key``); nothing that measures.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_kerasperf.record import test_key

if TYPE_CHECKING:
    import pytest

#: The measuring process writes where keras was imported from to this file.
PROBE_VARIABLE = "KERASPERF_SWEEP_PROBE"
#: In a measuring process: a JSON file listing the test keys to run (the others deselected).
SELECT_VARIABLE = "KERASPERF_SELECT_KEYS"


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In a measuring process only (``-p``): record where ``keras`` was imported from."""
    target = os.environ.get(PROBE_VARIABLE)
    if not target:
        return
    keras = sys.modules.get("keras")
    probe = {
        "keras_file": getattr(keras, "__file__", None),
        "keras_version": getattr(keras, "__version__", None),
    }
    Path(target).write_text(json.dumps(probe), encoding="utf-8")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a measuring process only: keep the tests whose keys the select file lists.

    By key (the file name and the test), so one list selects the same tests
    in any tree; a listed test that a tree lacks is simply not measured there.
    """
    select = os.environ.get(SELECT_VARIABLE)
    if not select:
        return
    wanted = set(json.loads(Path(select).read_text(encoding="utf-8")))
    kept = [item for item in items if test_key(item.nodeid) in wanted]
    dropped = [item for item in items if test_key(item.nodeid) not in wanted]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept
