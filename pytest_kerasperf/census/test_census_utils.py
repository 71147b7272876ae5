"""One perf test per public function and class of ``keras.utils`` (``utils_table.UTILS``): the
image, audio and text dataset makers on small directories of files, the image and file helpers,
the bounding-box functions, the registry and the small helpers, each called as a user calls it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kerasperf import KerasPerf
from pytest_kerasperf.census import runner, utils
from pytest_kerasperf.census.utils_table import UNSET, UTILS

pytestmark = pytest.mark.kerasperf(latency=False)


@pytest.mark.parametrize("name", sorted(UTILS))
def test_utils(
    kerasperf: KerasPerf,
    kerasperf_backend: str,
    name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runner.work_in(tmp_path, monkeypatch, UNSET.get(name, ()))
    ready = utils.ready(name, kerasperf_backend)
    kerasperf(ready.call)
