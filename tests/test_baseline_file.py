"""Baseline files: one per test and variant; load validates and never writes; update and
write_atomic are atomic and rewrite only the files that moved."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from msgspec.structs import replace

from pytest_kerasperf import baseline, baseline_names
from pytest_kerasperf.baseline import BaselineError, Baselines
from pytest_kerasperf.record import BreakReason, GraphRecord, LatencyRecord, Record, record_data
from pytest_kerasperf.settings import Settings

VARIANT = "py3.11-cpu"


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


def tree(root: Path) -> list[str]:
    """Every file under ``root``, relative to it (temporary and lock files included)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


@pytest.fixture
def store(tmp_path: Path) -> Baselines:
    return Baselines(tmp_path / "baselines", "numpy", VARIANT)


def update(
    store: Baselines, measured: dict[str, Record], **kwargs: Any
) -> list[baseline.EntryChange]:
    return store.update(measured, **kwargs)


def write_entry(store: Baselines, key: str, record: Record) -> Path:
    path = store.file(key)
    baseline.write_atomic(path, baseline.dumps(store.backend, store.variant, key, record))
    return path


# --------------------------------------------------------------------- load


def test_a_missing_directory_has_no_entries(store: Baselines) -> None:
    assert store.load() == {}
    assert baseline.load_all(store.root, "numpy") == {}
    assert not store.root.exists()


def test_round_trip(store: Baselines) -> None:
    entries = {"test_b.py::test_b": make(5), "test_a.py::test_a": make(3)}
    for key, record in entries.items():
        write_entry(store, key, record)
    loaded = store.load()
    assert {key: record_data(r) for key, r in loaded.items()} == {
        key: record_data(r.compact()) for key, r in entries.items()
    }
    assert all(r.is_compact for r in loaded.values())
    assert baseline.load_all(store.root, "numpy") == {VARIANT: loaded}


def test_round_trip_with_graph_breaks(tmp_path: Path) -> None:
    torch = Baselines(tmp_path, "torch", VARIANT)
    write_entry(torch, "t.py::t", compiled())
    [loaded] = torch.load().values()
    assert loaded.graph_breaks is not None
    assert loaded.graph_breaks.breaks == 5
    assert loaded.graph_breaks.by_key() == compiled().graph_breaks.by_key()  # type: ignore[union-attr]


def _key_order(text: str) -> list[list[str]]:
    orders: list[list[str]] = []

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        orders.append([key for key, _ in pairs])
        return dict(pairs)

    json.loads(text, object_pairs_hook=hook)
    return orders


def test_dumps_is_sorted_and_stable() -> None:
    text = baseline.dumps("numpy", VARIANT, "a.py::a", make(4))
    data = json.loads(text)
    assert all(keys == sorted(keys) for keys in _key_order(text))
    assert text.endswith("}\n")
    assert list(data) == ["backend", "entry", "key", "schema_version", "variant"]
    assert (data["backend"], data["key"], data["variant"]) == ("numpy", "a.py::a", VARIANT)
    assert data["schema_version"] == baseline.SCHEMA_VERSION
    entry = data["entry"]
    # The compact entry: functions by file, [calls, calls it makes itself] on one line;
    # every other call by package; no per-function counts or edges.
    assert entry["functions"] == {"zeta.py": {"f": [3, 3]}}
    assert '"f": [3, 3]' in text
    assert entry["calls_by_package"] == {"builtins": 1}
    assert entry["profile_sha256"] == make(4).profile().sha256
    assert "calls_by_function" not in entry
    assert "call_edges" not in entry
    assert entry["reference"] is None
    assert text == baseline.dumps("numpy", VARIANT, "a.py::a", make(4).compact())
    assert text == baseline.dumps("numpy", VARIANT, "a.py::a", make(4))


def test_latency_is_rounded_to_microseconds() -> None:
    data = json.loads(baseline.dumps("numpy", VARIANT, "t.py::t", make(median=1.23456789)))
    assert data["entry"]["latency_ms"]["median"] == 1.235
    assert data["entry"]["latency_ms"]["iqr"] == 0.013  # 0.0125 rounds half to even


KEY = "test_x.py::test_a"
VALID = baseline.dumps("numpy", VARIANT, KEY, make(3))
BAD_FILES = {
    "corrupt": ("{not json", "not valid JSON (line 1, column 2"),
    "truncated": (VALID[: len(VALID) // 2], "not valid JSON (line "),
    "empty": ("", "not valid JSON (line 1, column 1"),
    "wrong-schema": (
        VALID.replace('"mode": "eager"', '"mode": 7', 1),
        "not a pytest-kerasperf baseline file (schema version 3): at entry/mode",
    ),
    "schema-version-2": (
        VALID.replace('"schema_version": 3', '"schema_version": 2', 1),
        "at schema_version: 3 was expected",
    ),
    "negative-calls": (
        VALID.replace('"calls": 3', '"calls": -3', 1),
        "at entry/calls: Expected `int` >= 0",
    ),
    "unknown-field": (
        VALID.replace('"key":', '"extra": 1, "key":', 1),
        "at <top level>: Object contains unknown field `extra`",
    ),
    "full-profile-entry": (
        VALID.replace('"calls_by_package"', '"calls_by_function": {}, "calls_by_package"', 1),
        "at entry: a baseline entry holds its profile's summary, not calls_by_function",
    ),
    "not-an-object": ("[]", "at <top level>: Expected `object`, got `array`"),
    "wrong-backend": (
        baseline.dumps("torch", VARIANT, KEY, make(3, backend="torch")),
        "holds backend 'torch', not 'numpy'",
    ),
    "wrong-variant": (
        baseline.dumps("numpy", "py3.12-cpu", KEY, make(3)),
        "holds variant 'py3.12-cpu', not 'py3.11-cpu'",
    ),
    "wrong-key": (
        baseline.dumps("numpy", VARIANT, "test_x.py::test_b", make(3)),
        "holds the entry of 'test_x.py::test_b', whose file is ",
    ),
    "calls-do-not-add-up": (
        VALID.replace('"calls": 3', '"calls": 4', 1),
        "calls 4 but its functions add up to 3",
    ),
}


@pytest.mark.parametrize("kind", list(BAD_FILES))
def test_a_bad_file_is_an_error_naming_it_and_is_left_alone(store: Baselines, kind: str) -> None:
    content, message = BAD_FILES[kind]
    path = store.file(KEY)
    path.parent.mkdir(parents=True)
    path.write_text(content, encoding="utf-8")
    before = path.read_bytes()
    with pytest.raises(BaselineError) as error:
        store.load()
    assert str(error.value).startswith(f"{path}: ")
    assert message in str(error.value)
    assert "\n" not in str(error.value)
    with pytest.raises(BaselineError, match="^" + re.escape(f"{path}: ")):
        baseline.load_all(store.root, "numpy")
    assert path.read_bytes() == before
    assert tree(store.root) == [f"numpy/{VARIANT}/test_x.py/test_a.json"]


def test_invalid_json_message_says_how_to_restore(store: Baselines) -> None:
    path = store.file(KEY)
    path.parent.mkdir(parents=True)
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(BaselineError, match="restore it from git") as error:
        store.load()
    assert f"`git checkout -- {path}`" in str(error.value)


def test_an_unreadable_path_is_an_error_naming_it(store: Baselines) -> None:
    path = store.file(KEY)
    path.mkdir(parents=True)  # a directory where the file should be
    with pytest.raises(BaselineError, match="a directory, not a regular file") as error:
        store.load()
    assert str(error.value).startswith(f"{path}: ")


def test_the_old_one_file_baseline_is_refused_naming_it(store: Baselines) -> None:
    legacy = store.root / "numpy.json"
    legacy.parent.mkdir(parents=True)
    legacy.write_text('{"schema_version": 2, "backend": "numpy", "tests": {}}\n')
    for load in (store.load, lambda: baseline.load_all(store.root, "numpy")):
        with pytest.raises(BaselineError) as error:
            load()
        assert str(error.value).startswith(f"{legacy}: a baseline of an older pytest-kerasperf")
        assert "--kerasperf-update-baseline" in str(error.value)
    with pytest.raises(BaselineError, match="^" + re.escape(f"{legacy}: ")):
        store.update({KEY: make(3)})
    assert tree(store.root) == ["numpy.json"]
    # Another backend's old file is not this backend's business.
    assert baseline.load_all(store.root, "torch") == {}


def test_temporary_and_hidden_files_are_not_entries(store: Baselines) -> None:
    path = write_entry(store, KEY, make(3))
    (path.parent / f".{path.name}.abc123.tmp").write_text("{half")  # a killed writer's
    (path.parent / ".hidden.json").write_text("{not an entry")
    assert sorted(store.load()) == [KEY]


def test_variants_are_directories_of_their_backend(tmp_path: Path) -> None:
    for variant in ("py3.11-cpu", "py3.11-cpu-nnx", "py3.12-gpu"):
        write_entry(Baselines(tmp_path, "jax", variant), KEY, make(3, backend="jax"))
    (tmp_path / "jax" / "notes").mkdir()  # not a variant's name: ignored
    write_entry(Baselines(tmp_path, "numpy", "py3.13-cpu"), KEY, make(3))
    assert baseline.recorded_variants(tmp_path, "jax") == [
        "py3.11-cpu",
        "py3.11-cpu-nnx",
        "py3.12-gpu",
    ]
    assert sorted(baseline.load_all(tmp_path, "jax")) == [
        "py3.11-cpu",
        "py3.11-cpu-nnx",
        "py3.12-gpu",
    ]
    assert baseline.recorded_variants(tmp_path, "torch") == []


# ------------------------------------------------------------------- update


def test_update_creates_the_file_and_its_directories(store: Baselines) -> None:
    changes = update(store, {KEY: make(3)})
    assert [(c.key, c.kind, c.before) for c in changes] == [(KEY, "added", None)]
    path = store.directory / "test_x.py" / "test_a.json"
    assert path.read_text(encoding="utf-8") == baseline.dumps("numpy", VARIANT, KEY, make(3))
    # No lock file, no temporary file in the repository's tree: just the entry.
    assert tree(store.root) == [f"numpy/{VARIANT}/test_x.py/test_a.json"]


def test_update_leaves_other_entries_untouched(store: Baselines) -> None:
    other = write_entry(store, "test_x.py::test_b", make(4))
    os.utime(other, ns=(1_000_000_000, 1_000_000_000))
    untouched, inode = other.read_bytes(), other.stat().st_ino
    write_entry(store, KEY, make(3))

    changes = update(store, {KEY: make(9), "new.py::t": make(2)})
    assert [(c.key, c.kind) for c in changes] == [("new.py::t", "added"), (KEY, "updated")]
    assert changes[1].before is not None
    assert changes[1].before.calls == 3
    assert changes[1].after is not None
    assert changes[1].after.calls == 9
    entries = store.load()
    assert sorted(entries) == ["new.py::t", KEY, "test_x.py::test_b"]
    assert entries[KEY].calls == 9
    assert other.read_bytes() == untouched
    assert (other.stat().st_mtime_ns, other.stat().st_ino) == (1_000_000_000, inode)
    assert tree(store.root) == [
        f"numpy/{VARIANT}/new.py/t.json",
        f"numpy/{VARIANT}/test_x.py/test_a.json",
        f"numpy/{VARIANT}/test_x.py/test_b.json",
    ]


def test_update_with_the_same_measurement_does_not_rewrite(store: Baselines) -> None:
    path = write_entry(store, KEY, make(3))
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    inode = path.stat().st_ino
    changes = update(store, {KEY: make(3)})
    assert [c.kind for c in changes] == ["unchanged"]
    assert path.stat().st_mtime_ns == 1_000_000_000
    assert path.stat().st_ino == inode
    assert path.read_text(encoding="utf-8") == VALID


def test_update_rereads_the_files(store: Baselines) -> None:
    """An entry written after the session loaded the files is not lost."""
    update(store, {"a.py::a": make(3)})
    update(Baselines(store.root, "numpy", VARIANT), {"b.py::b": make(4)})
    assert sorted(store.load()) == ["a.py::a", "b.py::b"]


def test_update_never_touches_another_variant(store: Baselines) -> None:
    other = Baselines(store.root, "numpy", "py3.12-cpu")
    path = write_entry(other, KEY, replace(make(3), environment={"python": "3.12.1"}))
    before = path.read_bytes()
    update(store, {KEY: make(9)}, remove=[KEY, "test_x.py::gone"])
    assert path.read_bytes() == before
    assert other.load()[KEY].calls == 3
    assert store.load()[KEY].calls == 9


@pytest.mark.parametrize("kind", ["corrupt", "truncated", "wrong-schema", "wrong-backend"])
def test_update_never_overwrites_a_bad_file_and_writes_nothing(store: Baselines, kind: str) -> None:
    content = BAD_FILES[kind][0]
    path = store.file(KEY)
    path.parent.mkdir(parents=True)
    path.write_text(content, encoding="utf-8")
    before = path.read_bytes()
    with pytest.raises(BaselineError, match="^" + re.escape(f"{path}: ")):
        update(store, {KEY: make(3), "other.py::t": make(4)})
    assert path.read_bytes() == before
    assert tree(store.root) == [f"numpy/{VARIANT}/test_x.py/test_a.json"]


def test_a_record_of_another_backend_is_refused(store: Baselines) -> None:
    with pytest.raises(BaselineError, match="a torch record cannot go into "):
        update(store, {KEY: make(3, backend="torch")})
    assert not store.root.exists()


# ------------------------------------------------------ what an update moves


def with_latency(record: Record, median: float, device: str = "cpu: x") -> Record:
    return replace(
        record,
        latency=LatencyRecord(
            median_ms=median, iqr_ms=0.01, rounds=5, device=device, accelerator=False
        ),
    )


def test_unchanged_counts_keep_the_entry_bytes_when_latency_moved_within_tolerance(
    store: Baselines,
) -> None:
    update(store, {"t.py::a": make(3, median=1.0), "t.py::b": make(4)})
    before = store.file("t.py::a").read_bytes()
    other = replace(make(3, median=1.05), environment={"python": "3.11.7", "device": "elsewhere"})
    [change] = update(store, {"t.py::a": other})
    assert change.kind == "unchanged"
    assert store.file("t.py::a").read_bytes() == before


def test_latency_that_moved_beyond_the_tolerance_rewrites_only_that_entry(
    store: Baselines,
) -> None:
    update(store, {"t.py::a": make(3, median=1.0), "t.py::b": make(4)})
    b_before = store.file("t.py::b").read_bytes()
    [change] = update(store, {"t.py::a": make(3, median=1.5)})
    assert change.kind == "updated"
    assert store.load()["t.py::a"].latency.median_ms == 1.5  # type: ignore[union-attr]
    assert store.file("t.py::b").read_bytes() == b_before
    loose = Settings(latency_tolerance=0.6)
    [change] = store.update({"t.py::a": make(3, median=2.0)}, loose)
    assert change.kind == "unchanged"


def test_changed_counts_keep_a_stored_latency_within_tolerance(store: Baselines) -> None:
    update(store, {"t.py::a": make(3, median=1.0)})
    [change] = update(store, {"t.py::a": make(9, median=1.02)})
    assert change.kind == "updated"
    stored = store.load()["t.py::a"]
    assert stored.calls == 9
    assert stored.latency is not None
    assert stored.latency.median_ms == 1.0


def test_an_update_without_latency_keeps_the_stored_latency(store: Baselines) -> None:
    update(store, {"t.py::a": make(3, median=1.0)})
    [change] = update(store, {"t.py::a": make(9, median=None)})
    assert change.kind == "updated"
    stored = store.load()["t.py::a"]
    assert stored.calls == 9
    assert stored.latency is not None
    assert stored.latency.median_ms == 1.0


def test_a_latency_on_another_device_replaces_the_stored_one(store: Baselines) -> None:
    update(store, {"t.py::a": make(3, median=1.0)})
    moved = with_latency(make(3), 0.2, device="cuda: H200")
    [change] = update(store, {"t.py::a": moved})
    assert change.kind == "updated"
    assert store.load()["t.py::a"].latency == moved.latency


def test_another_count_relevant_environment_rewrites_an_entry_with_equal_counts(
    store: Baselines,
) -> None:
    update(store, {"t.py::a": make(3)})
    newer = replace(make(3), environment={"python": "3.12.1", "numpy": None})
    policy = Settings(
        mismatch=lambda old, new: ("python",) if old.get("python") != new.get("python") else ()
    )
    [change] = store.update({"t.py::a": newer}, policy)
    assert change.kind == "updated"
    assert store.load()["t.py::a"].environment["python"] == "3.12.1"


def test_a_moved_profile_with_equal_totals_rewrites_the_entry(store: Baselines) -> None:
    """Calls that moved between callees change only the profile's digest: still an update."""
    update(store, {"t.py::a": make(5)})
    moved = replace(make(5), call_edges={"zeta.py:f": {"alpha": 2, "zeta.py:f": 2}})
    assert moved.profile().functions == make(5).profile().functions
    assert moved.profile().outside == make(5).profile().outside
    assert moved.profile().sha256 != make(5).profile().sha256
    [change] = update(store, {"t.py::a": moved})
    assert change.kind == "updated"
    assert store.load()["t.py::a"].profile() == moved.profile()


def test_stale_entries_are_removed_with_their_empty_directory(store: Baselines) -> None:
    update(store, {"t.py::a": make(3), "t.py::gone": make(4), "old.py::gone": make(4)})
    changes = update(
        store, {"t.py::a": make(3)}, remove=["t.py::gone", "old.py::gone", "t.py::never"]
    )
    assert [(c.key, c.kind) for c in changes] == [
        ("t.py::a", "unchanged"),
        ("old.py::gone", "removed"),
        ("t.py::gone", "removed"),
    ]
    assert sorted(store.load()) == ["t.py::a"]
    assert tree(store.root) == [f"numpy/{VARIANT}/t.py/a.json"]
    assert files_in(store.directory) == ["t.py"]  # old.py/ went with its last entry


def _update_one(args: tuple[str, str, int]) -> None:
    root, key, calls = args
    Baselines(Path(root), "numpy", VARIANT).update({key: make(calls), "t.py::shared": make(3)})


def test_concurrent_updates_lose_no_entry(store: Baselines) -> None:
    """Eight processes each add their own entry at once: the lock keeps every one."""
    update(store, {"t.py::first": make(3)})
    keys = [f"t.py::k{i}" for i in range(8)]
    context = multiprocessing.get_context("spawn")
    with context.Pool(8) as pool:
        pool.map(_update_one, [(str(store.root), key, 3 + i) for i, key in enumerate(keys)])
    entries = store.load()
    assert sorted(entries) == sorted(["t.py::first", "t.py::shared", *keys])
    assert [entries[key].calls for key in keys] == [3 + i for i in range(8)]
    assert not [name for name in tree(store.root) if not name.endswith(".json")]


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


@pytest.mark.parametrize(
    ("key", "relative"),
    [
        (
            "test_standard.py::test_lm_forward[eager]",
            "test_standard.py/test_lm_forward[eager].json",
        ),
        ("test_x.py::TestC::test_d[p/q]", "test_x.py/TestC.test_d[p%2Fq].json"),
        ("test_x.py::test_a[a::b]", "test_x.py/test_a[a%3A%3Ab].json"),
        ("test_x.py::test_a[x y\u00e9]", "test_x.py/test_a[x%20y%C3%A9].json"),
        ("test_x.py::test_a[50%]", "test_x.py/test_a[50%25].json"),
    ],
)
def test_an_entry_file_is_named_by_its_key(tmp_path: Path, key: str, relative: str) -> None:
    assert baseline.relative_file(key) == Path(relative)
    jax = Baselines(tmp_path, "jax", "py3.11-cpu-nnx")
    assert jax.file(key) == tmp_path / "jax" / "py3.11-cpu-nnx" / relative


def test_a_long_key_is_shortened_with_its_hash_and_still_loads(store: Baselines) -> None:
    keys = [f"test_x.py::test_a[{'p' * 300}{i}]" for i in range(2)]
    names = [baseline.relative_file(key).name for key in keys]
    assert names[0] != names[1]
    assert all(len(name.encode()) <= 200 for name in names)
    update(store, {key: make(3) for key in keys})
    assert sorted(store.load()) == sorted(keys)


def test_a_key_that_names_no_test_is_refused() -> None:
    with pytest.raises(BaselineError, match="not a test key"):
        baseline.relative_file("test_x.py")


def test_a_short_key_spelled_like_a_long_keys_file_name_has_its_own_file(store: Baselines) -> None:
    """A long key's file name ends in a separator and its hash; a short key spelled like that
    name (any character of it, the separator decoded) is encoded into another name."""
    long_key = f"test_x.py::test_a[{'p' * 300}]"
    shortened = baseline.relative_file(long_key).stem
    spelled = f"test_x.py::{unquote(shortened)}"
    assert baseline.relative_file(spelled) != baseline.relative_file(long_key)
    changes = update(store, {long_key: make(3), spelled: make(4)})
    assert [change.kind for change in changes] == ["added", "added"]
    assert store.load() == {long_key: make(3).compact(), spelled: make(4).compact()}


def test_a_shortened_name_is_not_cut_through_an_escape() -> None:
    for pad in range(3):
        name = baseline.relative_file(f"test_x.py::test_a[{'p' * pad}{'é' * 200}]").stem
        head, separator, digest = name.rpartition("~")
        assert separator
        assert len(digest) == 16
        assert re.fullmatch(r"test_a\[p*(%C3%A9)+", head), head


def test_two_keys_that_would_share_a_file_are_refused_with_nothing_written(
    store: Baselines, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Were two hashes ever equal, one entry would silently overwrite the other: refused."""
    monkeypatch.setattr(baseline_names, "_digest", lambda key: "0" * 16)
    first, second = (f"test_x.py::test_a[{'p' * 300}{i}]" for i in range(2))
    assert baseline.relative_file(first) == baseline.relative_file(second)
    message = (
        f"{store.file(first)}: would hold the entries of both {first!r} and {second!r}; "
        "nothing written (rename one of the tests)"
    )
    with pytest.raises(BaselineError) as refused:
        update(store, {first: make(3), second: make(4)})
    assert str(refused.value) == message
    assert not store.root.exists()

    path = write_entry(store, first, make(3))  # one of them is committed already
    before = path.read_bytes()
    with pytest.raises(BaselineError) as refused:
        update(store, {second: make(4)})
    assert str(refused.value) == message
    assert path.read_bytes() == before
    assert tree(store.root) == [str(path.relative_to(store.root))]


@pytest.mark.parametrize(
    ("key", "relative"),
    [
        ("test_x.py::.hidden", "test_x.py/%2Ehidden.json"),
        ("test_x.py::::x", "test_x.py/%2Ex.json"),  # an empty class name joined with "."
        (".test_x.py::test_a", "%2Etest_x.py/test_a.json"),
        ("..::test_a", "%2E./test_a.json"),
        (".::test_a", "%2E/test_a.json"),
    ],
)
def test_a_key_starting_with_a_dot_is_no_dot_file_and_is_read_back(
    store: Baselines, key: str, relative: str
) -> None:
    assert baseline.relative_file(key) == Path(relative)
    update(store, {key: make(3)})
    assert store.load() == {key: make(3).compact()}
