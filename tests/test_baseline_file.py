"""Baseline files: load validates and never writes; update and write_atomic are atomic."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
from dataclasses import replace
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
        call_edges={"zeta.py:f": {"alpha": 1, "zeta.py:f": calls - 2}} if calls > 2 else {},
    )


def compiled(backend: str = "torch") -> Record:
    reasons = (BreakReason("print", "m.py:f", 1, 3), BreakReason("branch", "m.py:g", 4, 9))
    return Record(
        backend=backend,
        mode="compiled",
        calls=10,
        calls_by_function={"f": 10},
        graph_breaks=GraphRecord(graphs=6, breaks=5, reasons=reasons),
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
    assert loaded.graph_breaks.breaks == 5
    assert loaded.graph_breaks.by_key() == compiled().graph_breaks.by_key()  # type: ignore[union-attr]


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
        '{"schema_version": 2, "backend": "numpy", "tests": {"t": {"calls": "many"}}}',
        "not a pytest-kerasperf baseline (schema version 2): at tests/t",
    ),
    "schema-version-1": (
        '{"schema_version": 1, "backend": "numpy", "tests": {}}',
        "written by an older pytest-kerasperf (schema version 1, no call edges); "
        "delete it and re-record its tests with `--kerasperf-update-baseline`",
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
        VALID.replace('"schema_version": 2', '"schema_version": 0', 1),
        "at schema_version: 2 was expected",
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
    assert files_in(path.parent) == [".numpy.json.lock", "numpy.json"]


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
    assert changes[1].after is not None
    assert changes[1].after.calls == 9
    tests = json.loads(path.read_text(encoding="utf-8"))["tests"]
    assert sorted(tests) == ["new.py::t", "test_x.py::test_a", "test_x.py::test_b"]
    assert tests["test_x.py::test_b"] == untouched
    assert tests["test_x.py::test_a"]["calls"] == 9
    assert files_in(path.parent) == [".numpy.json.lock", "numpy.json"]


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
    assert files_in(path.parent) == [".numpy.json.lock", "numpy.json"]


# ------------------------------------------------------ what an update moves


def entry_text(path: Path, key: str) -> str:
    """The bytes of one entry as they stand in the file."""
    text = path.read_text(encoding="utf-8")
    start = text.index(f'    "{key}": {{')
    end = text.index("\n    }", start)
    return text[start:end]


def with_latency(record: Record, median: float, device: str = "cpu: x") -> Record:
    return replace(
        record,
        latency=LatencyRecord(
            median_ms=median, iqr_ms=0.01, rounds=5, device=device, accelerator=False
        ),
    )


def test_unchanged_counts_keep_the_entry_bytes_when_latency_moved_within_tolerance(
    path: Path,
) -> None:
    baseline.update(path, "numpy", {"t.py::a": make(3, median=1.0), "t.py::b": make(4)})
    before = entry_text(path, "t.py::a")
    other = replace(make(3, median=1.05), environment={"python": "3.11.7", "device": "elsewhere"})
    [change] = baseline.update(path, "numpy", {"t.py::a": other})
    assert change.kind == "unchanged"
    assert entry_text(path, "t.py::a") == before


def test_latency_that_moved_beyond_the_tolerance_rewrites_only_that_entry(path: Path) -> None:
    baseline.update(path, "numpy", {"t.py::a": make(3, median=1.0), "t.py::b": make(4)})
    b_before = entry_text(path, "t.py::b")
    [change] = baseline.update(path, "numpy", {"t.py::a": make(3, median=1.5)})
    assert change.kind == "updated"
    assert baseline.load(path, "numpy")["t.py::a"].latency.median_ms == 1.5  # type: ignore[union-attr]
    assert entry_text(path, "t.py::b") == b_before
    loose = baseline.UpdatePolicy(latency_tolerance=0.6)
    [change] = baseline.update(path, "numpy", {"t.py::a": make(3, median=2.0)}, loose)
    assert change.kind == "unchanged"


def test_changed_counts_keep_a_stored_latency_within_tolerance(path: Path) -> None:
    baseline.update(path, "numpy", {"t.py::a": make(3, median=1.0)})
    [change] = baseline.update(path, "numpy", {"t.py::a": make(9, median=1.02)})
    assert change.kind == "updated"
    stored = baseline.load(path, "numpy")["t.py::a"]
    assert stored.calls == 9
    assert stored.latency is not None
    assert stored.latency.median_ms == 1.0


def test_an_update_without_latency_keeps_the_stored_latency(path: Path) -> None:
    baseline.update(path, "numpy", {"t.py::a": make(3, median=1.0)})
    [change] = baseline.update(path, "numpy", {"t.py::a": make(9, median=None)})
    assert change.kind == "updated"
    stored = baseline.load(path, "numpy")["t.py::a"]
    assert stored.calls == 9
    assert stored.latency is not None
    assert stored.latency.median_ms == 1.0


def test_a_latency_on_another_device_replaces_the_stored_one(path: Path) -> None:
    baseline.update(path, "numpy", {"t.py::a": make(3, median=1.0)})
    moved = with_latency(make(3), 0.2, device="cuda: H200")
    [change] = baseline.update(path, "numpy", {"t.py::a": moved})
    assert change.kind == "updated"
    assert baseline.load(path, "numpy")["t.py::a"].latency == moved.latency


def test_another_count_relevant_environment_rewrites_an_entry_with_equal_counts(
    path: Path,
) -> None:
    baseline.update(path, "numpy", {"t.py::a": make(3)})
    newer = replace(make(3), environment={"python": "3.12.1", "numpy": None})
    policy = baseline.UpdatePolicy(
        mismatch=lambda old, new: ("python",) if old.get("python") != new.get("python") else ()
    )
    [change] = baseline.update(path, "numpy", {"t.py::a": newer}, policy)
    assert change.kind == "updated"
    assert baseline.load(path, "numpy")["t.py::a"].environment["python"] == "3.12.1"


def test_stale_entries_are_removed_and_listed(path: Path) -> None:
    baseline.update(path, "numpy", {"t.py::a": make(3), "t.py::gone": make(4)})
    changes = baseline.update(
        path, "numpy", {"t.py::a": make(3)}, remove=["t.py::gone", "t.py::never"]
    )
    assert [(c.key, c.kind) for c in changes] == [
        ("t.py::a", "unchanged"),
        ("t.py::gone", "removed"),
    ]
    assert sorted(baseline.load(path, "numpy")) == ["t.py::a"]


def _update_one(args: tuple[str, str, int]) -> None:
    path, key, calls = args
    baseline.update(Path(path), "numpy", {key: make(calls)})


def test_concurrent_updates_lose_no_entry(path: Path) -> None:
    """Eight processes each add their own entry at once: the lock keeps every one."""
    baseline.update(path, "numpy", {"t.py::first": make(3)})
    keys = [f"t.py::k{i}" for i in range(8)]
    context = multiprocessing.get_context("spawn")
    with context.Pool(8) as pool:
        pool.map(_update_one, [(str(path), key, 3 + i) for i, key in enumerate(keys)])
    entries = baseline.load(path, "numpy")
    assert sorted(entries) == sorted(["t.py::first", *keys])
    assert [entries[key].calls for key in keys] == [3 + i for i in range(8)]


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
