"""Helpers for tests that run real Keras in a fresh process per backend."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).parent
ROOT = TESTS.parent
BASELINES = ROOT / "baselines"
FRAMEWORK_MODULE = {"torch": "torch", "jax": "jax", "tensorflow": "tensorflow", "numpy": "numpy"}


#: The standard suite's test module: its entries share the variant directories with the
#: census's tables (``test_census_*.py``), which the suite's own tests leave aside.
SUITE_MODULE = "test_standard.py"


def suite_entries(backend: str, variant: str) -> dict[str, Any]:
    """The committed entries of the standard suite for ``backend`` and ``variant``."""
    from pytest_kerasperf.baseline import Baselines

    loaded = Baselines(BASELINES, backend, variant).load()
    return {k: v for k, v in loaded.items() if k.startswith(f"{SUITE_MODULE}::")}


def require_backend(backend: str) -> None:
    """Skip (with the reason) when the backend's framework is not installed; fail under CI.

    CI installs every framework of the pinned set, so a missing one there is a
    broken install, not a reason to pass having tested nothing.
    """
    module = FRAMEWORK_MODULE[backend]
    if importlib.util.find_spec(module) is None or importlib.util.find_spec("keras") is None:
        reason = f"{backend} backend needs {module} and keras, not installed here"
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (CI installs the pinned set: the install is broken)")
        pytest.skip(reason)


def backend_env(backend: str, keras_home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(KERAS_BACKEND=backend, KERAS_HOME=str(keras_home), PYTHONHASHSEED="0", **extra)
    return env


def probe(backend: str, task: str, keras_home: Path, timeout: int = 900) -> dict[str, Any]:
    """Run tests/probe.py TASK under BACKEND and return its JSON."""
    require_backend(backend)
    proc = subprocess.run(
        [sys.executable, str(TESTS / "probe.py"), task],
        env=backend_env(backend, keras_home),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    for line in proc.stdout.splitlines():
        if line.startswith("KERASPERF-PROBE "):
            loaded: dict[str, Any] = json.loads(line.split(" ", 1)[1])
            return loaded
    raise AssertionError(
        f"probe {task} on {backend} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )


def write_keras_json(
    keras_home: Path, backend: str, image_data_format: str, *, floatx: str = "float32"
) -> None:
    keras_home.mkdir(parents=True, exist_ok=True)
    (keras_home / "keras.json").write_text(
        json.dumps(
            {
                "backend": backend,
                "image_data_format": image_data_format,
                "floatx": floatx,
                "epsilon": 1e-07,
            }
        )
    )


def shared_dir(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A directory every pytest-xdist worker of this run shares (the run's own without xdist)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    return base / name
