"""Baseline variants: one file per test per environment variant, side by side.

A test keeps one entry per variant (Python minor, device kind, NNX on jax):
``<baseline dir>/<backend>/<variant>/<test file>/<test name>.json``.  A run
compares with its own variant's entries only, writes only its own variant's
files, and says which variants exist when its own has no entry.  One small
file per test also keeps two branches that re-record different tests from
ever touching the same file: git merges them cleanly.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from pytest_kerasperf import baseline, environment
from pytest_kerasperf.record import Record
from tests.inner import KEY, VARIANT, Inner, workload_source
from tests.realrun import BASELINES
from tests.test_keras_regression import commit_all, new_repo

#: A realistic other Python for a second variant of the same test.
OTHER_PYTHON = "3.12.1" if sys.version_info[:2] != (3, 12) else "3.13.1"
OTHER = f"py{environment.python_minor(OTHER_PYTHON)}-cpu"


def files_under(root: Path) -> dict[str, bytes]:
    """Every file's bytes under ``root`` (temporary and lock files included)."""
    if not root.exists():
        return {}
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def closing_line(result: pytest.RunResult) -> str:
    [line] = [text for text in result.stdout.lines if text.startswith("kerasperf: 1 perf test")]
    return line


# ------------------------------------------------- (a) two variants side by side


def copy_to_variant(inner: Inner, variant: str, python: str, key: str = KEY) -> Path:
    """The entry of ``key`` copied into ``variant``'s directory, as recorded under ``python``."""
    data = json.loads(inner.entry_file(key).read_text(encoding="utf-8"))
    data["variant"] = variant
    data["entry"]["environment"]["python"] = python
    target = inner.baseline_dir / "numpy" / variant / baseline.relative_file(key)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(
        baseline.dumps("numpy", variant, key, msgspec.convert(data["entry"], Record)),
        encoding="utf-8",
    )
    return target


def test_entries_of_two_variants_live_side_by_side(inner: Inner) -> None:
    inner.write(workload_source())
    assert inner.run("--kerasperf-update-baseline").ret == pytest.ExitCode.OK
    here = inner.entry_file(KEY)
    assert here == inner.baseline_dir / "numpy" / VARIANT / "test_x.py" / "test_work.json"
    recorded = msgspec.convert(inner.baseline()["tests"][KEY], Record)
    assert environment.python_minor(recorded.environment["python"]) == VARIANT[2:].split("-")[0]
    there = copy_to_variant(inner, OTHER, OTHER_PYTHON)
    assert there == inner.baseline_dir / "numpy" / OTHER / "test_x.py" / "test_work.json"
    other_tree = inner.baseline_dir / "numpy" / OTHER
    other_files = files_under(other_tree)

    # A gate compares with this Python's variant only: the other entry, recorded under
    # another Python, would be a mismatch.
    gate = inner.run("--kerasperf", "--kerasperf-strict", "--kerasperf-json", "gate.json")
    assert gate.ret == pytest.ExitCode.OK, gate.stdout.str()[-3000:]
    [found] = inner.results("gate.json")
    assert found["variant"] == VARIANT
    assert (found["verdict"]["status"], found["verdict"]["compared"]) == ("pass", True)
    assert found["verdict"]["mismatched"] == []
    assert found["baseline"]["environment"]["python"] == recorded.environment["python"]
    assert closing_line(gate) == (
        "kerasperf: 1 perf test: 1 measured, 1 compared; 0 stale baseline entries "
        f"[{inner.baseline_file}]"
    )

    # A planted regression, re-recorded: this variant's file is rewritten, the other
    # variant's tree keeps every byte.
    inner.write(workload_source(helper=True))
    update = inner.run("--kerasperf-update-baseline")
    assert update.ret == pytest.ExitCode.OK, update.stdout.str()[-3000:]
    update.stdout.fnmatch_lines(
        [
            f"baseline {inner.baseline_file}:",
            f"  updated   {KEY}: calls {recorded.calls:,} -> {recorded.calls + 1:,} (+1)*",
        ]
    )
    assert msgspec.convert(inner.baseline()["tests"][KEY], Record).calls == recorded.calls + 1
    assert files_under(other_tree) == other_files
    other = baseline.Baselines(inner.baseline_dir, "numpy", OTHER).load()
    assert other[KEY].calls == recorded.calls
    assert other[KEY].environment["python"] == OTHER_PYTHON

    # Without this variant's directory the test is not compared, and the line says which
    # variants do have entries.
    shutil.rmtree(inner.baseline_file)
    reason = f"no baseline for {VARIANT} (recorded: {OTHER})"
    lenient = inner.run("--kerasperf", "--kerasperf-json", "lenient.json")
    assert lenient.ret == pytest.ExitCode.OK
    assert closing_line(lenient) == (
        f"kerasperf: 1 perf test: 1 measured, 0 compared, 1 not compared ({reason}: 1); "
        f"0 stale baseline entries [{inner.baseline_file}]"
    )
    [found] = inner.results("lenient.json")
    assert (found["verdict"]["status"], found["verdict"]["not_compared"]) == ("new", reason)
    strict = inner.run("--kerasperf", "--kerasperf-strict")
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    strict.assert_outcomes(failed=1)
    assert f"not compared ({reason}: 1)" in closing_line(strict)
    failure = (
        f"kerasperf {reason} (--kerasperf-strict): record one with "
        "`--kerasperf-update-baseline` or `kerasperf accept`"
    )
    assert failure in strict.stdout.lines
    strict.stdout.fnmatch_lines(["kerasperf --kerasperf-strict: run FAILED: 1 not compared"])
    assert not inner.baseline_file.exists()  # a gate never writes
    assert files_under(other_tree) == other_files


# ------------------------------------------------------- (b) variant_of


@pytest.mark.parametrize(
    ("env", "backend", "variant"),
    [
        # the Python minor, never the patch release
        ({"python": "3.11.7", "device": "cpu: AMD EPYC"}, "numpy", "py3.11-cpu"),
        ({"python": "3.11.2", "device": "cpu: Intel(R) Xeon(R)"}, "torch", "py3.11-cpu"),
        ({"python": "3.12.1", "device": "cpu: AMD EPYC"}, "torch", "py3.12-cpu"),
        ({"python": "3.13.0rc1", "device": "cpu: x"}, "tensorflow", "py3.13-cpu"),
        # the device kind, as backends.device() names it
        ({"python": "3.11.7", "device": "cuda: NVIDIA H200"}, "torch", "py3.11-gpu"),
        ({"python": "3.11.7", "device": "gpu: NVIDIA H200"}, "jax", "py3.11-gpu"),
        ({"python": "3.11.7", "device": "gpu: NVIDIA H200"}, "tensorflow", "py3.11-gpu"),
        ({"python": "3.11.7", "device": "rocm: AMD Instinct MI300X"}, "jax", "py3.11-gpu"),
        ({"python": "3.11.7", "device": "tpu: TPU v5 lite"}, "jax", "py3.11-tpu"),
        ({"python": "3.11.7", "device": None}, "numpy", "py3.11-cpu"),
        ({"python": "3.11.7"}, "numpy", "py3.11-cpu"),
        # NNX on jax only: Keras's effective setting
        (
            {"python": "3.11.7", "device": "cpu: x", "keras.nnx_enabled": "True"},
            "jax",
            "py3.11-cpu-nnx",
        ),
        (
            {"python": "3.11.7", "device": "cpu: x", "keras.nnx_enabled": "False"},
            "jax",
            "py3.11-cpu",
        ),
        (
            {"python": "3.11.7", "device": "gpu: H200", "keras.nnx_enabled": "True"},
            "jax",
            "py3.11-gpu-nnx",
        ),
        (
            {"python": "3.11.7", "device": "cpu: x", "keras.nnx_enabled": "True"},
            "torch",
            "py3.11-cpu",
        ),
        (
            {"python": "3.11.7", "device": "cpu: x", "keras.nnx_enabled": "True"},
            "numpy",
            "py3.11-cpu",
        ),
        # the setting wins over the variable (keras.json may say otherwise)
        (
            {"python": "3.11.7", "keras.nnx_enabled": "False", "env.KERAS_NNX_ENABLED": "true"},
            "jax",
            "py3.11-cpu",
        ),
        (
            {"python": "3.11.7", "keras.nnx_enabled": "True", "env.KERAS_NNX_ENABLED": None},
            "jax",
            "py3.11-cpu-nnx",
        ),
        # a record from before the setting was captured: the variable, as Keras reads it
        ({"python": "3.11.7", "env.KERAS_NNX_ENABLED": "true"}, "jax", "py3.11-cpu-nnx"),
        ({"python": "3.11.7", "env.KERAS_NNX_ENABLED": "1"}, "jax", "py3.11-cpu-nnx"),
        ({"python": "3.11.7", "env.KERAS_NNX_ENABLED": "TRUE"}, "jax", "py3.11-cpu-nnx"),
        ({"python": "3.11.7", "env.KERAS_NNX_ENABLED": "false"}, "jax", "py3.11-cpu"),
        ({"python": "3.11.7", "env.KERAS_NNX_ENABLED": None}, "jax", "py3.11-cpu"),
        ({"python": "3.11.7", "env.KERAS_NNX_ENABLED": "true"}, "torch", "py3.11-cpu"),
    ],
)
def test_variant_of(env: dict[str, str | None], backend: str, variant: str) -> None:
    assert environment.variant_of(env, backend) == variant
    assert baseline.VARIANT_PATTERN.match(variant)  # a name a baseline directory may have


def test_the_variant_of_this_machine_is_the_inner_runs() -> None:
    """tests/inner.py's VARIANT is what this machine's records get (no accelerator here)."""
    env = {"python": ".".join(map(str, sys.version_info[:3])), "device": "cpu: any"}
    assert environment.variant_of(env, "numpy") == VARIANT


# ------------------------------------------------------- (c) jax with NNX

JAX_DENSE = """
import numpy as np
import keras

LAYER = keras.layers.Dense(4)
X = np.ones((2, 8), dtype="float32")


def test_dense(kerasperf):
    kerasperf(LAYER, X)
"""
JAX_KEY = "test_x.py::test_dense"
HAS_JAX_AND_FLAX = all(importlib.util.find_spec(name) is not None for name in ("jax", "flax"))


@pytest.mark.skipif(
    not HAS_JAX_AND_FLAX,
    reason="jax with NNX needs jax and flax (KERAS_NNX_ENABLED=true), not installed here",
)
def test_a_jax_run_with_nnx_records_its_own_variant(
    inner: Inner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    monkeypatch.setenv("KERAS_HOME", str(inner.pytester.path / "keras-home"))
    monkeypatch.setenv("KERAS_NNX_ENABLED", "true")
    inner.write(JAX_DENSE)
    nnx_dir = inner.baseline_dir / "jax" / f"{VARIANT}-nnx"
    plain_dir = inner.baseline_dir / "jax" / VARIANT

    update = inner.run("--kerasperf-update-baseline", "--kerasperf-json", "nnx.json")
    assert update.ret == pytest.ExitCode.OK, update.stdout.str()[-3000:]
    update.stdout.fnmatch_lines([f"baseline {nnx_dir}:", f"  added     {JAX_KEY}: * calls"])
    assert list(files_under(inner.baseline_dir)) == [f"jax/{VARIANT}-nnx/test_x.py/test_dense.json"]
    data = json.loads((nnx_dir / "test_x.py" / "test_dense.json").read_text(encoding="utf-8"))
    assert (data["backend"], data["variant"], data["key"]) == ("jax", f"{VARIANT}-nnx", JAX_KEY)
    assert data["entry"]["environment"]["keras.nnx_enabled"] == "True"
    assert data["entry"]["environment"]["env.KERAS_NNX_ENABLED"] == "true"
    # Keras's Dense, kept function by function in the entry.
    assert "Dense.call" in data["entry"]["functions"]["keras/src/layers/core/dense.py"]
    [found] = inner.results("nnx.json")
    assert found["variant"] == f"{VARIANT}-nnx"
    nnx_files = files_under(nnx_dir)

    # Without NNX: another variant, with no entry; the NNX tree is never touched.
    monkeypatch.delenv("KERAS_NNX_ENABLED")
    gate = inner.run("--kerasperf", "--kerasperf-json", "plain.json")
    assert gate.ret == pytest.ExitCode.OK, gate.stdout.str()[-3000:]
    reason = f"no baseline for {VARIANT} (recorded: {VARIANT}-nnx)"
    assert closing_line(gate) == (
        f"kerasperf: 1 perf test: 1 measured, 0 compared, 1 not compared ({reason}: 1); "
        f"0 stale baseline entries [{plain_dir}]"
    )
    [found] = inner.results("plain.json")
    assert found["variant"] == VARIANT
    assert found["record"]["environment"]["keras.nnx_enabled"] == "False"
    assert found["verdict"]["not_compared"] == reason
    assert not plain_dir.exists()
    strict = inner.run("--kerasperf", "--kerasperf-strict")
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    assert f"kerasperf {reason} (--kerasperf-strict): record one with " in strict.stdout.str()

    # Recording without NNX writes its own variant beside it.
    plain = inner.run("--kerasperf-update-baseline")
    assert plain.ret == pytest.ExitCode.OK, plain.stdout.str()[-3000:]
    assert sorted(files_under(inner.baseline_dir)) == [
        f"jax/{VARIANT}-nnx/test_x.py/test_dense.json",
        f"jax/{VARIANT}/test_x.py/test_dense.json",
    ]
    assert files_under(nnx_dir) == nnx_files

    # With NNX again, the run compares with its own entry, and passes.
    monkeypatch.setenv("KERAS_NNX_ENABLED", "true")
    again = inner.run("--kerasperf", "--kerasperf-strict", "--kerasperf-json", "again.json")
    assert again.ret == pytest.ExitCode.OK, again.stdout.str()[-3000:]
    [found] = inner.results("again.json")
    assert (found["variant"], found["verdict"]["status"]) == (f"{VARIANT}-nnx", "pass")
    assert files_under(nnx_dir) == nnx_files


# ------------------------------------------------------- (d) misplaced files


def _entry_text(key: str, variant: str = VARIANT) -> str:
    record = Record(
        backend="numpy",
        mode="eager",
        calls=3,
        calls_by_function={"sorted": 1, "test_x.py:work": 2},
        graph_breaks=None,
        latency=None,
        environment={"python": "3.11.7"},
        call_edges={"test_x.py:work": {"sorted": 1}},
    )
    return baseline.dumps("numpy", variant, key, record)


def _misplaced(inner: Inner, kind: str) -> tuple[Path, str]:
    """(the file, what the error says after its path) for each kind of misplaced file."""
    root = inner.baseline_dir
    if kind == "variant":
        path = root / "numpy" / VARIANT / "test_x.py" / "test_work.json"
        text, message = _entry_text(KEY, OTHER), f"holds variant {OTHER!r}, not {VARIANT!r}"
    elif kind == "other-variant":  # every variant of the backend is validated up front
        path = root / "numpy" / OTHER / "test_x.py" / "test_work.json"
        text, message = _entry_text(KEY, VARIANT), f"holds variant {VARIANT!r}, not {OTHER!r}"
    elif kind == "key":
        path = root / "numpy" / VARIANT / "test_x.py" / "test_work.json"
        other = root / "numpy" / VARIANT / "test_x.py" / "test_other.json"
        text = _entry_text("test_x.py::test_other")
        message = (
            f"holds the entry of 'test_x.py::test_other', whose file is {other}: move it there"
        )
    else:  # the one-file-per-backend baseline of an older version
        path = root / "numpy.json"
        text = '{"backend": "numpy", "schema_version": 2, "tests": {}}\n'
        message = (
            "a baseline of an older pytest-kerasperf (one file per backend, schema version 2); "
            f"this version keeps one file per test and variant under {root / 'numpy'}/: delete "
            "it and re-record with `--kerasperf-update-baseline` (docs/baselines.md)"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path, message


@pytest.mark.parametrize("kind", ["variant", "other-variant", "key", "legacy"])
@pytest.mark.parametrize("option", ["--kerasperf", "--kerasperf-update-baseline"])
def test_a_misplaced_or_old_baseline_file_is_a_usage_error_naming_it(
    inner: Inner, kind: str, option: str
) -> None:
    inner.write(workload_source())
    path, message = _misplaced(inner, kind)
    before = files_under(inner.baseline_dir)
    result = inner.run(option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.strip()]
    assert errors == [f"ERROR: {path}: {message}"]
    result.stdout.no_fnmatch_line("*passed*")
    assert files_under(inner.baseline_dir) == before  # nothing written, nothing moved


# ------------------------------------------------------- (e) git merges


def git_merge(repo: Any, branch: str) -> tuple[int, str]:
    status, out, err = repo.git.merge(
        "--no-edit", branch, with_extended_output=True, with_exceptions=False
    )
    return int(status), f"{out}\n{err}"


def test_two_branches_that_re_record_two_tests_merge_cleanly(inner: Inner) -> None:
    inner.write(workload_source(test="test_a"), name="test_a")
    inner.write(workload_source(test="test_b"), name="test_b")
    # Only the project is committed: not pytester's runs, outputs or results files.
    (inner.pytester.path / ".gitignore").write_text(
        "/*\n!/.gitignore\n!/test_*.py\n!/perf-baselines/\n__pycache__/\n"
    )
    assert inner.run("--kerasperf-update-baseline").ret == pytest.ExitCode.OK
    base = {key: msgspec.convert(e, Record).calls for key, e in inner.baseline()["tests"].items()}
    assert sorted(base) == ["test_a.py::test_a", "test_b.py::test_b"]
    repo = new_repo(inner.pytester.path)
    commit_all(repo, "two perf tests, recorded")
    main = repo.active_branch.name
    assert sorted(repo.git.ls_files("perf-baselines").splitlines()) == [
        f"perf-baselines/numpy/{VARIANT}/test_a.py/test_a.json",
        f"perf-baselines/numpy/{VARIANT}/test_b.py/test_b.json",
    ]

    # Branch A: test_a's workload gains a call, and only test_a is re-recorded.
    repo.git.checkout("-q", "-b", "A")
    inner.write(workload_source(test="test_a", helper=True), name="test_a")
    assert inner.run("--kerasperf-update-baseline", "test_a.py").ret == pytest.ExitCode.OK
    commit_all(repo, "A: test_a calls a helper")
    assert repo.git.diff("--name-only", main, "A").splitlines() == [
        f"perf-baselines/numpy/{VARIANT}/test_a.py/test_a.json",
        "test_a.py",
    ]

    # Branch B, from the same commit: test_b's workload shrinks, test_b is re-recorded.
    repo.git.checkout("-q", main)
    repo.git.checkout("-q", "-b", "B")
    inner.write(workload_source(test="test_b", size=20), name="test_b")
    assert inner.run("--kerasperf-update-baseline", "test_b.py").ret == pytest.ExitCode.OK
    commit_all(repo, "B: test_b does less")
    assert repo.git.diff("--name-only", main, "B").splitlines() == [
        f"perf-baselines/numpy/{VARIANT}/test_b.py/test_b.json",
        "test_b.py",
    ]

    repo.git.checkout("-q", "A")
    status, output = git_merge(repo, "B")
    assert status == 0, output
    assert "CONFLICT" not in output
    assert len(repo.head.commit.parents) == 2  # a real merge of two lines of history
    assert repo.git.diff("--name-only", "--diff-filter=U") == ""
    tracked = repo.git.ls_files().splitlines()
    assert sorted(tracked) == [
        ".gitignore",
        f"perf-baselines/numpy/{VARIANT}/test_a.py/test_a.json",
        f"perf-baselines/numpy/{VARIANT}/test_b.py/test_b.json",
        "test_a.py",
        "test_b.py",
    ]
    for name in tracked:
        text = (inner.pytester.path / name).read_text(encoding="utf-8")
        markers = ("<<<<<<<", ">>>>>>>", "=======")
        assert not any(line.startswith(markers) for line in text.splitlines()), name
    merged = {k: msgspec.convert(e, Record).calls for k, e in inner.baseline()["tests"].items()}
    assert merged == {
        "test_a.py::test_a": base["test_a.py::test_a"] + 1,
        "test_b.py::test_b": base["test_b.py::test_b"] - 30,
    }

    gate = inner.run("--kerasperf", "--kerasperf-strict", "--kerasperf-json", "merged.out.json")
    assert gate.ret == pytest.ExitCode.OK, gate.stdout.str()[-3000:]
    gate.stdout.fnmatch_lines(
        ["kerasperf: 2 perf tests: 2 measured, 2 compared; 0 stale baseline entries *"]
    )
    results = inner.results("merged.out.json")
    assert sorted((r["key"], r["verdict"]["status"]) for r in results) == [
        ("test_a.py::test_a", "pass"),
        ("test_b.py::test_b", "pass"),
    ]
    assert repo.git.status("--porcelain") == ""  # the gate wrote nothing


# ------------------------------------------------------- (f) committed sizes

#: A forward's compact entry is 2-12 KiB; a train step's holds the optimizer's, the loss's and
#: the trainer's functions too: 16-18 KiB (jax's eager LM step, 17.5 KiB, the largest).
MAX_COMMITTED_BYTES = 24 * 1024
#: The census's tables: an entry is its key's line and a totals-only value (184 bytes for a
#: 35-character key, docs/baselines.md; the census's keys run to 95 characters), environments
#: included, at most 230 bytes on average; all six CPU variants together at most 3.6 MB (issue
#: #26 set 2 MB for 920 workloads; issue #37's 2,044 made 2.5 MB at 217 bytes an entry, and its
#: fourth round's 14,355 entries over the six variants 3.24 MB at 225 bytes an entry).
MAX_TABLE_BYTES_PER_ENTRY = 230
MAX_TABLE_BYTES = 3_600_000


def test_every_committed_baseline_file_is_small_and_valid() -> None:
    every = sorted(p for p in BASELINES.rglob("*") if p.is_file())
    tables = [p for p in every if p.name.endswith(".table.json")]
    files = [p for p in every if p not in tables]
    assert files, f"no baseline files under {BASELINES}"
    sizes = {str(p.relative_to(BASELINES)): p.stat().st_size for p in files}
    too_big = {name: size for name, size in sizes.items() if size > MAX_COMMITTED_BYTES}
    assert not too_big, too_big
    table_bytes = sum(p.stat().st_size for p in tables)
    assert table_bytes <= MAX_TABLE_BYTES
    in_tables = sum(len(json.loads(p.read_text())["entries"]) for p in tables)
    assert table_bytes <= MAX_TABLE_BYTES_PER_ENTRY * in_tables
    # Every file is an entry of a backend's variant, at its key's path, and loads.
    loaded = -in_tables
    for backend_dir in sorted(p for p in BASELINES.iterdir() if p.is_dir()):
        variants = baseline.recorded_variants(BASELINES, backend_dir.name)
        assert variants == sorted(p.name for p in backend_dir.iterdir()), backend_dir
        for variant in variants:
            entries = baseline.Baselines(BASELINES, backend_dir.name, variant).load()
            assert entries, (backend_dir.name, variant)
            assert all(r.is_compact for r in entries.values())
            loaded += len(entries)
    assert loaded == len(files)  # no file outside a variant, nor an old <backend>.json
    assert not list(BASELINES.glob("*.json"))


def test_a_relative_keras_home_names_the_backend_after_a_test_changes_directory(
    inner: Inner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keras's CI sets ``KERAS_HOME=.github/workflows/config/<backend>``, relative, and no
    ``KERAS_BACKEND``; Keras reads it once, at import.  A test that changes directory
    (``monkeypatch.chdir``, as the census's callbacks do) measures on that backend too."""
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    monkeypatch.setenv("KERAS_HOME", "config/numpy")
    (inner.pytester.path / "config" / "numpy").mkdir(parents=True)
    (inner.pytester.path / "config" / "numpy" / "keras.json").write_text(
        json.dumps({"backend": "numpy", "floatx": "float32", "image_data_format": "channels_last"})
    )
    inner.write(
        "def test_elsewhere(kerasperf, tmp_path, monkeypatch):\n"
        "    monkeypatch.chdir(tmp_path)\n"
        "    kerasperf(lambda: sorted(str(i) for i in range(50)))\n"
    )
    done = inner.run("--kerasperf-update-baseline", "--kerasperf-json", "moved.json")
    assert done.ret == pytest.ExitCode.OK, done.stdout.str()[-3000:]
    [found] = inner.results("moved.json")
    assert (found["key"], found["record"]["backend"]) == ("test_x.py::test_elsewhere", "numpy")
    assert (inner.baseline_file / "test_x.py" / "test_elsewhere.json").is_file()
