"""Counts that follow only the code: no number depends on what ran before it in the process.

Real census and suite tests on real backends, in orders that used to move their counts (a
masked model before the CNN, tensorflow imported by an earlier test, pytest-xdist's stack
above a jax compile), each compared with the same test alone; the isolated mode
(``--kerasperf-isolate``) against the gate's one process; the audit finding a planted leak;
and the numpy census gated against the committed tables in reverse and under ``-n 2``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_kerasperf import cli
from tests.inner import Inner
from tests.realrun import BASELINES, ROOT, backend_env, require_backend

SUITE = "pytest_kerasperf.suite"
VARIANTS = "pytest_kerasperf.census.test_census_variants"
LAYERS = "pytest_kerasperf.census.test_census_layers"
CENSUS = "pytest_kerasperf.census"


def measure(
    backend: str, tmp_path: Path, name: str, *args: str, timeout: int = 900
) -> dict[str, dict[str, Any]]:
    """Key -> record of a fresh ``pytest --kerasperf`` process (``args``: selection, options)."""
    path = tmp_path / f"{name}.json"
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--kerasperf"]
    command += [f"--kerasperf-json={path}", f"--kerasperf-baseline-dir={BASELINES}", *args]
    run = subprocess.run(
        command,
        cwd=ROOT,
        env=backend_env(backend, tmp_path / "keras-home"),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert path.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    results = json.loads(path.read_text(encoding="utf-8"))["results"]
    return {r["key"]: r["record"] for r in results if r["record"] is not None}


def profile(record: dict[str, Any]) -> tuple[int, Any, Any]:
    return record["calls"], record["calls_by_function"], record["call_edges"]


def test_a_mask_set_by_an_earlier_test_moves_no_count(tmp_path: Path) -> None:
    """numpy tensors take no attributes: Keras keeps masks in a global dict, created by the
    first mask set in a process, after which every mask lookup makes two calls more.  A
    masked LSTM run before the CNN forward and a GlobalAveragePooling1D (layers that look up
    masks) leaves their counts as they are alone: Keras's global state is put back before
    each test."""
    require_backend("numpy")
    select = ["-k", "cnn_forward or layers.GlobalAveragePooling1D or test_masked and LSTM"]
    after = measure("numpy", tmp_path, "after", *select, "--pyargs", VARIANTS, SUITE, LAYERS)
    assert "test_census_variants.py::test_masked[layers.LSTM]" in after
    key = "test_standard.py::test_cnn_forward[eager]"
    alone = measure("numpy", tmp_path, "alone", "--pyargs", SUITE, "-k", "cnn_forward")
    assert profile(after[key]) == profile(alone[key])
    key = "test_census_layers.py::test_layer[layers.GlobalAveragePooling1D]"
    alone = measure("numpy", tmp_path, "pool", "--pyargs", LAYERS, "-k", "GlobalAveragePooling1D")
    assert profile(after[key]) == profile(alone[key])


TF_FIRST = """
import pytest


@pytest.mark.kerasperf
def test_tensorflow_first(kerasperf):
    import tensorflow as tf

    tf.data.Dataset.from_tensor_slices([1, 2]).batch(1)  # starts tensorflow's eager context
    kerasperf(lambda: None)
"""


def test_tensorflow_imported_by_an_earlier_test_moves_no_count(tmp_path: Path) -> None:
    """Once tensorflow is imported, Keras asks it whether a graph is being built
    (``backend_utils.in_tf_graph``), and once its eager context exists that costs a call
    more.  A test that imports it and starts its context, run before a preprocessing layer,
    leaves the layer's count as it is alone: every measuring process imports tensorflow and
    starts its context before its first test."""
    require_backend("numpy")
    first = tmp_path / "test_tf_first.py"
    first.write_text(TF_FIRST, encoding="utf-8")
    key = "test_census_layers.py::test_layer[layers.CenterCrop]"
    after = measure(
        "numpy", tmp_path, "after", str(first), "--pyargs", LAYERS, "-k", "first or CenterCrop"
    )
    alone = measure("numpy", tmp_path, "alone", "--pyargs", LAYERS, "-k", "CenterCrop")
    # run beside a file outside the rootdir, the census module's node ids lose their path
    (found,) = (k for k in after if k.endswith(key.split("::", 1)[1]))
    assert "test_tf_first.py::test_tensorflow_first" in after, after.keys()
    assert profile(after[found]) == profile(alone[key])


RANDOM_STATE = """
import random

import numpy

from pytest_kerasperf.measure import canonical

kept = canonical.prepare("numpy")
seeded = random.Random(canonical.SEED).getstate()
assert random.getstate() == seeded, "prepare leaves Python's random seeded"
first = (random.randint(1, 10**9), numpy.random.randint(10**9))
for _ in range(97):  # an earlier test's draws
    random.randint(1, 10**9)
    numpy.random.randint(10**9)
canonical.restore(kept)
assert (random.randint(1, 10**9), numpy.random.randint(10**9)) == first
print("restored")
"""


def restored_by_a_measuring_process(tmp_path: Path, script_text: str) -> None:
    """Run ``script_text`` (it prepares a measuring process, moves some state, restores it and
    prints "restored") in a fresh numpy process."""
    require_backend("numpy")
    script = tmp_path / "state.py"
    script.write_text(script_text, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, str(script)],
        cwd=ROOT,
        env=backend_env("numpy", tmp_path / "keras-home"),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    assert run.stdout.strip().endswith("restored")


def test_the_global_random_generators_are_seeded_and_put_back_before_each_test(
    tmp_path: Path,
) -> None:
    """A Keras object made without a seed draws one from Python's global ``random``
    (``SeedGenerator``: ``random.randint``), which draws again about once in 14, so what a draw
    costs follows the generator's state: Python seeds it from ``os.urandom`` in every process,
    and earlier tests draw from it.  A measuring process seeds it and numpy's global generator
    (``canonical.prepare``) and puts both back before each perf test (``canonical.restore``):
    after 97 draws of an earlier test, the next draws are those of a fresh process."""
    restored_by_a_measuring_process(tmp_path, RANDOM_STATE)


LOGGER_STATE = """
import logging

from pytest_kerasperf.measure import canonical

kept = canonical.prepare("numpy")
root, absl = logging.getLogger(), logging.getLogger("absl")
before = (root.level, list(root.handlers), absl.level, absl.propagate)
root.setLevel(logging.ERROR)  # as an openvino export sets it
absl.setLevel(logging.WARNING)  # as a tf_saved_model export on jax sets it
root.addHandler(logging.StreamHandler())  # and the handler that export adds
absl.propagate = False
canonical.restore(kept)
after = (root.level, list(root.handlers), absl.level, absl.propagate)
assert after == before, (after, before)
print("restored")
"""


def test_the_loggers_are_put_back_before_each_test(tmp_path: Path) -> None:
    """An export sets the loggers for good (the root logger to ERROR, ``absl`` to WARNING, a
    handler on the root), and a later test's warnings are then dropped: the census's
    ``Model.save+load_model[h5]`` on jax counted 27,369 calls alone and 27,147 after the
    exports.  ``canonical.restore`` puts the level, ``propagate`` and handlers of every logger
    kept at ``prepare`` back before each perf test."""
    restored_by_a_measuring_process(tmp_path, LOGGER_STATE)


TELEMETRY_STATE = """
import os
from pathlib import Path

home = Path(os.environ["KERASPERF_TEST_HOME"])
os.environ["HOME"] = str(home)
(home / "intel").mkdir()
(home / "intel" / "openvino_telemetry").write_text("1")  # this user opted in

from openvino_telemetry.utils.opt_in_checker import ConsentCheckResult, OptInChecker

assert OptInChecker().check(False) == ConsentCheckResult.ACCEPTED, "the consent file is read"

from pytest_kerasperf.measure import canonical

canonical.prepare("numpy")
assert OptInChecker().check(False) == ConsentCheckResult.DECLINED
assert OptInChecker().check(True, disable_in_ci=True) == ConsentCheckResult.DECLINED
print("restored")
"""


def test_openvino_telemetry_is_declined_whatever_the_user_consented(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What OpenVINO's converter runs follows whether it may send telemetry: the user's consent
    file (``~/intel/openvino_telemetry``) or ``CI=true``.  torch's ``openvino`` export made
    75,142 calls opted in and 75,033 opted out or under ``CI=true``.  A measuring process
    declines it (``canonical.decline_telemetry``), whatever the file says."""
    pytest.importorskip("openvino_telemetry")
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("KERASPERF_TEST_HOME", str(tmp_path / "home"))
    restored_by_a_measuring_process(tmp_path, TELEMETRY_STATE)


def test_isolated_tests_and_xdist_workers_count_as_the_gate_does(tmp_path: Path) -> None:
    """jax walks the Python stack above a call when an exception crosses its API, and turns
    the tracing stack into source locations at each compile: the frames above the workload
    differ in a pytest-xdist worker and in a forked child.  Each perf test runs on a thread
    of its own, so the eager recurrent layers (a compile per call) and the mixed-float16
    MultiHeadAttention (an exception per call) count alike in one process, under ``-n 2``
    and each in a process of its own, function for function and edge for edge."""
    require_backend("jax")
    select = ["--pyargs", VARIANTS, "-k", "test_masked and GRU or MultiHeadAttention-mixed_float16"]
    gate = measure("jax", tmp_path, "gate", *select)
    assert len(gate) == 2, gate.keys()
    for name, options in (("isolated", ["--kerasperf-isolate"]), ("xdist", ["-n", "2"])):
        other = measure("jax", tmp_path, name, *options, *select)
        assert {k: profile(r) for k, r in other.items()} == {
            k: profile(r) for k, r in gate.items()
        }, name


LEAKY = """
SEEN = []


def shown(item):
    return item


def work():
    return [shown(item) for item in SEEN]
"""
LEAK_FIRST = """
import leaky


def test_fills(kerasperf):
    leaky.SEEN.extend(range(5))  # a module-level list another test reads: a leak
    kerasperf(lambda: None)
"""
LEAK_READ = """
import leaky


def test_reads(kerasperf):
    kerasperf(leaky.work)
"""


def test_the_audit_finds_a_planted_leak_and_names_the_test_and_function(
    inner: Inner, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module-level list filled by one test and read by another's workload: in the gate's
    order the reader counts 5 calls more (``shown``) than alone and reversed.  The audit compares
    every order with the isolated one and names the test, the orders and where calls moved."""
    inner.pytester.makepyfile(leaky=LEAKY, test_a=LEAK_FIRST, test_b=LEAK_READ)
    monkeypatch.setenv("PYTHONHASHSEED", "0")
    monkeypatch.setenv("PYTHONPATH", str(inner.pytester.path))
    out = inner.pytester.path / "audit"
    status = cli.main(
        [
            "audit",
            "--orders",
            "isolated,gate,reverse",
            "--out",
            str(out),
            "--json",
            str(out / "audit.json"),
            "--",
            f"--kerasperf-baseline-dir={inner.baseline_dir}",
            "test_a.py",
            "test_b.py",
        ]
    )
    shown = capsys.readouterr().out
    assert status == 1, shown
    figures = json.loads((out / "audit.json").read_text(encoding="utf-8"))
    assert [d["key"] for d in figures["differences"]] == ["test_b.py::test_reads"]
    (difference,) = figures["differences"]
    assert difference["orders"] == ["isolated", "gate"]
    (what,) = difference["what"]
    assert what.endswith(" (+5)"), what  # 5 items in the list: 5 calls of shown()
    assert any("leaky.py:work" in where and "shown" in where for where in difference["where"])
    assert "kerasperf audit: 4 records compared with isolated's, 1 differ" in shown
    assert {run["order"]: run["measured"] for run in figures["runs"]} == {
        "isolated": 2,
        "gate": 2,
        "reverse": 2,
    }


@pytest.mark.parametrize("order", [["--reverse"], ["-n", "2", "--dist", "loadfile"]])
def test_the_numpy_census_gates_green_against_the_committed_tables_in_another_order(
    order: list[str], tmp_path: Path
) -> None:
    """What CI holds: the numpy census and suite, recorded in the gate's order, gate strictly
    (ratchet on: a count that went down fails too) in reverse and as Keras runs its tests."""
    require_backend("numpy")
    run = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *order),
            *("--kerasperf", "--kerasperf-strict", "--kerasperf-ratchet"),
            *(f"--kerasperf-baseline-dir={BASELINES}", "--pyargs", SUITE, CENSUS),
        ],
        cwd=ROOT,
        env=backend_env("numpy", tmp_path / "keras-home"),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-4000:]
    assert " 0 stale baseline entries" in run.stdout
