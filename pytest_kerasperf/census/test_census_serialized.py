"""One perf test per public class the census builds: its object serialized and deserialized as
``keras.saving.load_model`` does it (``serialized``): ``get_config``, ``from_config``, the
constructor and, for a layer, ``build``."""

from __future__ import annotations

import pytest

from pytest_kerasperf import KerasPerf
from pytest_kerasperf.census import serialized

pytestmark = pytest.mark.kerasperf(latency=False)


@pytest.mark.parametrize("name", serialized.names())
def test_serialized(kerasperf: KerasPerf, kerasperf_backend: str, name: str) -> None:
    ready = serialized.ready(name, kerasperf_backend)
    kerasperf(ready.call, *ready.args, **ready.kwargs)
