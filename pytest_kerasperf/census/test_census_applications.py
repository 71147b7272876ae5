"""One small model per family of ``keras.applications`` at a tiny input, its forward and its
``predict`` on a batch, and each family's ``preprocess_input`` (``applications_table``)."""

from __future__ import annotations

import pytest

from pytest_kerasperf import KerasPerf
from pytest_kerasperf.census import applications
from pytest_kerasperf.census.applications_table import KINDS, MODELS, PREPROCESS

pytestmark = pytest.mark.kerasperf(latency=False)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_application(kerasperf: KerasPerf, kerasperf_backend: str, name: str, kind: str) -> None:
    ready = applications.ready(name, kind, kerasperf_backend)
    kerasperf(ready.call)


@pytest.mark.parametrize("module", PREPROCESS)
def test_preprocess_input(kerasperf: KerasPerf, kerasperf_backend: str, module: str) -> None:
    ready = applications.preprocess(module, kerasperf_backend)
    kerasperf(ready.call)
