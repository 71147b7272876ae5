"""The standard suite under pytest-xdist as Keras runs its tests (``-n``, ``--dist``).

Workers measure, the controller writes each baseline entry once, and the counts
are those of the committed baselines, which were measured without xdist.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.realrun import BASELINES, require_backend

#: jax's ``FlatTree.__eq__`` also runs from hash-table probes (a pytree-keyed cache):
#: how often depends on the process's history, and an xdist worker's differs from a
#: serial process's. Seen on the jax LM eager forward under ``-n 2 --dist loadfile``:
#: ``FlatTree.__eq__`` 10 vs 8 and ``isinstance`` (its first call) +2. Those probe
#: calls are left out of this comparison; docs/exact-counts.md lists it as open.
PROBED = "jax/_src/tree_util.py:FlatTree.__eq__"


def without_probes(entry: dict[str, Any]) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """Calls per function and call edges, less ``PROBED`` and the ``isinstance`` it calls."""
    functions = dict(entry["calls_by_function"])
    edges = {caller: dict(callees) for caller, callees in entry["call_edges"].items()}
    probed = edges.pop(PROBED, {})
    functions.pop(PROBED, None)
    if "isinstance" in functions:
        functions["isinstance"] -= probed.get("isinstance", 0)
    for callees in edges.values():
        callees.pop(PROBED, None)
    return functions, edges


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_update_then_gate_under_xdist_equal_the_serial_counts(
    backend: str, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_backend(backend)
    monkeypatch.setenv("KERAS_BACKEND", backend)
    monkeypatch.setenv("KERAS_HOME", str(pytester.path / "keras-home"))
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    directory = pytester.path / "b"
    common = (
        "-p",
        "no:cacheprovider",
        f"--kerasperf-baseline-dir={directory}",
        "--pyargs",
        "pytest_kerasperf.suite",
    )
    update = pytester.runpytest_subprocess(
        "-n", "2", "--dist", "loadfile", "--kerasperf-update-baseline", *common, timeout=1200
    )
    assert update.ret == pytest.ExitCode.OK, update.stdout.str()[-3000:]
    written = json.loads((directory / f"{backend}.json").read_text())["tests"]
    committed = json.loads((BASELINES / f"{backend}.json").read_text())["tests"]
    assert sorted(written) == sorted(committed)
    assert update.stdout.str().count("  added   ") == len(committed)  # each entry written once
    for key, entry in written.items():
        assert without_probes(entry) == without_probes(committed[key]), key
        assert entry["latency_ms"] is None  # not timed under xdist

    # The gate compares exactly: on jax, the tests that never call PROBED (the CNN's).
    selected = ("-k", "cnn") if backend == "jax" else ()
    gate = pytester.runpytest_subprocess(
        "-n",
        "2",
        "--dist",
        "load",
        "--kerasperf",
        "--kerasperf-strict",
        *selected,
        *common,
        timeout=1200,
    )
    assert gate.ret == pytest.ExitCode.OK, gate.stdout.str()[-3000:]
    n = 2 if backend == "jax" else len(committed)
    gate.stdout.fnmatch_lines(
        [
            f"kerasperf: {n} perf tests: {n} measured, {n} compared; 0 stale baseline entries *",
            "kerasperf latency: 0 measured; not measured (pytest-benchmark does not time under "
            f"pytest-xdist: {n})",
        ]
    )
