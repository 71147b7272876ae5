"""One perf test per Model API call (``fit``, ``evaluate``, ``predict``, the ``*_on_batch``
calls, ``save`` + ``load_model``, ``from_config``, ``export``), per setting users run that
changes the code Keras executes (``verbose``, ``steps_per_execution``, ``jit_compile``,
``run_eagerly``, ``validation_split``, ``shuffle``, several callbacks) and per public callback
of ``keras.callbacks`` inside a one-epoch ``fit`` (``model_table``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kerasperf import KerasPerf
from pytest_kerasperf.census import model_api, runner
from pytest_kerasperf.census.model_table import (
    BROKEN,
    CALLBACKS,
    MODEL,
    NOT_EXACT,
    SETTINGS,
    UNSET,
    WRITES,
)

pytestmark = pytest.mark.kerasperf(latency=False)


@pytest.mark.parametrize("name", sorted(MODEL))
def test_model(
    kerasperf: KerasPerf,
    kerasperf_backend: str,
    name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kind, what = MODEL[name]
    not_exact = runner.entry(NOT_EXACT, name, kerasperf_backend)
    if not_exact is not None:
        pytest.skip(
            f"kerasperf census: {name} on {kerasperf_backend}: counts not exact: {not_exact}"
        )
    # the newer saving workloads name their files relative to it (runner.work_in says why);
    # the older .keras workloads keep tmp_path's absolute names
    runner.work_in(tmp_path, monkeypatch, UNSET.get(name, ()))
    model = model_api.build(kind)
    workload = model_api.call(kind, what, model, tmp_path)
    ready = runner.trial(name, kerasperf_backend, workload, (), {}, BROKEN)
    kerasperf(ready.call)


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_model_setting(
    kerasperf: KerasPerf, kerasperf_backend: str, name: str, request: pytest.FixtureRequest
) -> None:
    """``fit``, ``evaluate`` or ``predict`` with a setting that changes the code Keras runs:
    the progress bar, several steps per execution, compiled or not, eager, a validation
    split, shuffling, several callbacks (``model_table.SETTINGS``)."""
    if name in WRITES:  # its files named relative to tmp_path (runner.work_in says why)
        runner.work_in(request.getfixturevalue("tmp_path"), request.getfixturevalue("monkeypatch"))
    ready = model_api.setting(name, kerasperf_backend)
    kerasperf(ready.call)


@pytest.mark.parametrize("name", sorted(CALLBACKS))
def test_callback(
    kerasperf: KerasPerf,
    kerasperf_backend: str,
    name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    public = runner.public(name)
    # Its files are named relative to tmp_path (BackupAndRestore: 2 calls a path component)
    runner.work_in(tmp_path, monkeypatch)
    ready = model_api.callback_fit(name, public, CALLBACKS[name], kerasperf_backend, Path())
    kerasperf(ready.call)
