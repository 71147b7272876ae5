"""Baseline files: load validates and never writes; update and write_atomic are atomic."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from pytest_kerasperf import baseline
from pytest_kerasperf.baseline import BaselineError
from pytest_kerasperf.record import BreakReason, GraphRecord, LatencyRecord, Record


def make(calls: int = 3, *, backend: str = "numpy", median: float | None = 0.25) -> Record:
    latency = None
    if median is not None:
        latency = LatencyRecord(
            median_ms=median, iqr_ms=0.0125, rounds=5, device="cpu: x", accelerator=False
        )
    return Record(
        backend=backend,
        mode="eager",
        calls=calls,
        calls_by_function={"zeta.py:f": calls - 1, "alpha": 1},
        graph_breaks=None,
        latency=latency,
        environment={"python": "3.11.7", "numpy": None},
    )


def compiled(backend: str = "torch") -> Record:
    reasons = (BreakReason("print", "m.py:3"), BreakReason("branch", "m.py:9"))
    return Record(
        backend=backend,
        mode="compiled",
        calls=10,
        calls_by_function={"f": 10},
        graph_breaks=GraphRecord(graphs=3, breaks=2, reasons=reasons),
        latency=None,
        environment={"torch": "2.5.0"},
    )


def files_in(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "baselines" / "numpy.json"


# --------------------------------------------------------------------- load


def test_a_missing_file_has_no_entries(path: Path) -> None:
    assert baseline.load(path, "numpy") == {}
    assert not path.parent.exists()


def test_round_trip(path: Path) -> None:
    entries = {"test_b.py::test_b": make(5), "test_a.py::test_a": make(3)}
    baseline.write_atomic(path, baseline.dumps("numpy", entries))
    loaded = baseline.load(path, "numpy")
    assert {key: r.to_json() for key, r in loaded.items()} == {
        key: r.to_json() for key, r in entries.items()
    }


def test_round_trip_with_graph_breaks(tmp_path: Path) -> None:
    path = tmp_path / "torch.json"
    baseline.write_atomic(path, baseline.dumps("torch", {"t.py::t": compiled()}))
    [loaded] = baseline.load(path, "torch").values()
    assert loaded.graph_breaks is not None
    assert loaded.graph_breaks.breaks == 2
    assert loaded.graph_breaks == compiled().graph_breaks


def test_dumps_is_sorted_and_stable() -> None:
    text = baseline.dumps("numpy", {"z.py::z": make(4), "a.py::a": make(3)})
    data = json.loads(text)
    assert text == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert list(data["tests"]) == ["a.py::a", "z.py::z"]
    assert list(data["tests"]["a.py::a"]["calls_by_function"]) == ["alpha", "zeta.py:f"]
    assert data["schema_version"] == baseline.SCHEMA_VERSION
    assert text == baseline.dumps("numpy", {"a.py::a": make(3), "z.py::z": make(4)})


def test_latency_is_rounded_to_microseconds() -> None:
    data = json.loads(baseline.dumps("numpy", {"t": make(median=1.23456789)}))
    assert data["tests"]["t"]["latency_ms"]["median"] == 1.235
    assert data["tests"]["t"]["latency_ms"]["iqr"] == 0.013  # 0.0125 rounds half to even


VALID = baseline.dumps("numpy", {"test_x.py::test_a": make(3), "test_x.py::test_b": make(4)})
BAD_FILES = {
    "corrupt": ("{not json", "not valid JSON (line 1, column 2"),
    "truncated": (VALID[: len(VALID) // 2], "not valid JSON (line "),
    "empty": ("", "not valid JSON (line 1, column 1"),
    "wrong-schema": (
        '{"schema_version": 1, "backend": "numpy", "tests": {"t": {"calls": "many"}}}',
        "not a pytest-kerasperf baseline (schema version 1): at tests/t",
    ),
    "negative-calls": (
        VALID.replace('"calls": 3', '"calls": -3', 1),
        "at tests/test_x.py::test_a/calls: -3 is less than the minimum of 0",
    ),
    "unknown-field": (
        VALID.replace('"backend": "numpy",', '"backend": "numpy", "extra": 1,', 1),
        "at <top level>: Additional properties are not allowed ('extra' was unexpected)",
    ),
    "old-schema-version": (
        VALID.replace('"schema_version": 1', '"schema_version": 0', 1),
        "at schema_version: 1 was expected",
    ),
    "not-an-object": ("[]", "at <top level>: [] is not of type 'object'"),
    "wrong-backend": (
        baseline.dumps("torch", {}),
        "holds backend 'torch' but this run uses 'numpy'",
    ),
}


@pytest.mark.parametrize("kind", list(BAD_FILES))
def test_a_bad_file_is_an_error_naming_it_and_is_left_alone(path: Path, kind: str) -> None:
    content, message = BAD_FILES[kind]
    path.parent.mkdir()
    path.write_text(content, encoding="utf-8")
    before = path.read_bytes()
    with pytest.raises(BaselineError) as error:
        baseline.load(path, "numpy")
    assert str(error.value).startswith(f"{path}: ")
    assert message in str(error.value)
    assert path.read_bytes() == before
    assert files_in(path.parent) == ["numpy.json"]


def test_invalid_json_message_says_how_to_restore(path: Path) -> None:
    path.parent.mkdir()
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(BaselineError, match="restore it from git") as error:
        baseline.load(path, "numpy")
    assert f"`git checkout -- {path}`" in str(error.value)


def test_an_unreadable_path_is_an_error_naming_it(path: Path) -> None:
    path.mkdir(parents=True)  # a directory where the file should be
    with pytest.raises(BaselineError, match="cannot read baseline") as error:
        baseline.load(path, "numpy")
    assert str(error.value).startswith(f"{path}: ")


# ------------------------------------------------------------------- update


def test_update_creates_the_file_and_its_directory(path: Path) -> None:
    changes = baseline.update(path, "numpy", {"test_x.py::test_a": make(3)})
    assert [(c.key, c.kind, c.before) for c in changes] == [("test_x.py::test_a", "added", None)]
    assert path.read_text(encoding="utf-8") == baseline.dumps(
        "numpy", {"test_x.py::test_a": make(3)}
    )
    assert files_in(path.parent) == ["numpy.json"]


def test_update_leaves_other_entries_untouched(path: Path) -> None:
    path.parent.mkdir()
    path.write_text(VALID, encoding="utf-8")
    untouched = json.loads(VALID)["tests"]["test_x.py::test_b"]

    changes = baseline.update(path, "numpy", {"test_x.py::test_a": make(9), "new.py::t": make(2)})
    assert [(c.key, c.kind) for c in changes] == [
        ("new.py::t", "added"),
        ("test_x.py::test_a", "updated"),
    ]
    assert changes[1].before is not None
    assert changes[1].before.calls == 3
    assert changes[1].after.calls == 9
    tests = json.loads(path.read_text(encoding="utf-8"))["tests"]
    assert sorted(tests) == ["new.py::t", "test_x.py::test_a", "test_x.py::test_b"]
    assert tests["test_x.py::test_b"] == untouched
    assert tests["test_x.py::test_a"]["calls"] == 9
    assert files_in(path.parent) == ["numpy.json"]


def test_update_with_the_same_measurement_does_not_rewrite(path: Path) -> None:
    path.parent.mkdir()
    path.write_text(VALID, encoding="utf-8")
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    inode = path.stat().st_ino
    changes = baseline.update(path, "numpy", {"test_x.py::test_a": make(3)})
    assert [c.kind for c in changes] == ["unchanged"]
    assert path.stat().st_mtime_ns == 1_000_000_000
    assert path.stat().st_ino == inode
    assert path.read_text(encoding="utf-8") == VALID


def test_update_rereads_the_file(path: Path) -> None:
    """An entry written after the session loaded the file is not lost."""
    baseline.update(path, "numpy", {"a.py::a": make(3)})
    baseline.update(path, "numpy", {"b.py::b": make(4)})
    assert sorted(baseline.load(path, "numpy")) == ["a.py::a", "b.py::b"]


@pytest.mark.parametrize("kind", ["corrupt", "truncated", "wrong-schema", "wrong-backend"])
def test_update_never_overwrites_a_bad_file(path: Path, kind: str) -> None:
    content = BAD_FILES[kind][0]
    path.parent.mkdir()
    path.write_text(content, encoding="utf-8")
    before = path.read_bytes()
    with pytest.raises(BaselineError, match="^" + re.escape(f"{path}: ")):
        baseline.update(path, "numpy", {"test_x.py::test_a": make(3)})
    assert path.read_bytes() == before
    assert files_in(path.parent) == ["numpy.json"]


# ------------------------------------------------------------- write_atomic


def test_write_atomic_replaces_the_file_and_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "dir" / "out.json"
    baseline.write_atomic(path, "first\n")
    baseline.write_atomic(path, "second \u0394\n")
    assert path.read_text(encoding="utf-8") == "second \u0394\n"
    assert files_in(path.parent) == ["out.json"]


def test_write_atomic_failure_keeps_the_old_file_and_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    path.write_text("old\n", encoding="utf-8")
    with pytest.raises(UnicodeEncodeError):
        baseline.write_atomic(path, "half written \ud800 never")  # a lone surrogate
    assert path.read_text(encoding="utf-8") == "old\n"
    assert files_in(tmp_path) == ["out.json"]


def test_write_atomic_onto_a_directory_fails_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "taken"
    (path / "child").mkdir(parents=True)
    with pytest.raises(IsADirectoryError):
        baseline.write_atomic(path, "text\n")
    assert files_in(tmp_path) == ["taken"]
    assert files_in(path) == ["child"]


# ------------------------------------------------------------------- keys


@pytest.mark.parametrize(
    ("nodeid", "key"),
    [
        ("test_x.py::test_a", "test_x.py::test_a"),
        ("tests/perf/test_x.py::test_a[eager]", "test_x.py::test_a[eager]"),
        ("a/b/test_x.py::TestC::test_d[p/q]", "test_x.py::TestC::test_d[p/q]"),
        ("test_x.py", "test_x.py"),
    ],
)
def test_key_drops_the_directory(nodeid: str, key: str) -> None:
    assert baseline.test_key(nodeid) == key


def test_baseline_path_is_per_backend(tmp_path: Path) -> None:
    assert baseline.baseline_path(tmp_path, "jax") == tmp_path / "jax.json"
