"""Census table files: one ``<module>.table.json`` per test module and variant, totals only.

Real records in and out: the round trip, the bytes an entry costs, one changed line per
re-recorded entry, ``git merge`` of two branches that re-record different entries, the
failure line against a totals-only entry, and a real inner run that writes a table and
compares with it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from msgspec.structs import replace

from pytest_kerasperf import baseline, baseline_table, changes, culprits, explain_summaries, judging
from pytest_kerasperf.baseline import BaselineError, Baselines
from pytest_kerasperf.codec import to_data
from pytest_kerasperf.metrics.calls import CallsChange
from pytest_kerasperf.record import BreakReason, GraphRecord, LatencyRecord, Record, record_data
from pytest_kerasperf.settings import Settings
from tests.inner import VARIANT, Inner, workload_source

MODULE = "test_census_ops.py"
#: What a real record's environment holds: about 25 fields (environment.py).
ENVIRONMENT: dict[str, str | None] = {
    "accelerator": "false",
    "backend": "numpy",
    "cpus": "16",
    "device": "cpu: AMD EPYC 7B13",
    "env.ATEN_CPU_CAPABILITY": None,
    "env.KERAS_MAX_EPOCHS": None,
    "env.KERAS_MAX_STEPS_PER_EPOCH": None,
    "env.KERAS_NNX_ENABLED": None,
    "env.KERAS_TORCH_DEVICE": None,
    "env.XLA_FLAGS": None,
    "jax": "0.7.2",
    "jax.device_count": None,
    "jaxlib": "0.7.2",
    "keras": "3.15.1",
    "keras.dtype_policy": "float32",
    "keras.epsilon": "1e-07",
    "keras.floatx": "float32",
    "keras.image_data_format": "channels_last",
    "keras.nnx_enabled": "false",
    "keras_commit": "0123456789abcdef0123456789abcdef01234567",
    "ml_dtypes": "0.5.3",
    "numpy": "2.4.6",
    "opt_einsum": "3.4.0",
    "optree": "0.17.0",
    "platform": "Linux-6.8.0-x86_64-with-glibc2.36",
    "python": "3.11.7",
    "python_implementation": "CPython",
}


def key(i: int | str) -> str:
    """``key(3)``: the entry of ``op_003``; ``key("003a")``: one that sorts right after it."""
    return f"{MODULE}::test_op[op_{i:03d}]" if isinstance(i, int) else f"{MODULE}::test_op[op_{i}]"


def make(calls: int = 31, *, backend: str = "numpy", environment: bool = True) -> Record:
    """A measured record, whole profile and latency, as ``tests/test_baseline_file.py``
    builds them (a Keras function that makes the calls, the rest in builtins)."""
    return Record(
        backend=backend,
        mode="eager",
        calls=calls,
        calls_by_function={"keras/src/ops/numpy.py:add": 1, "isinstance": calls - 1},
        call_edges={"keras/src/ops/numpy.py:add": {"isinstance": calls - 1}},
        graph_breaks=None,
        latency=LatencyRecord(
            median_ms=0.25, iqr_ms=0.0125, rounds=5, device="cpu: x", accelerator=False
        ),
        environment=dict(ENVIRONMENT) if environment else {"python": "3.11.7"},
    )


def compiled() -> Record:
    reasons = (BreakReason("print", "m.py:f", 1, 3), BreakReason("branch", "m.py:g", 4, 9))
    return Record(
        backend="torch",
        mode="compiled",
        calls=10,
        calls_by_function={"f": 10},
        graph_breaks=GraphRecord(graphs=6, breaks=5, reasons=reasons),
        environment={"torch": "2.5.0"},
        recompiles=1,
        recompile_causes=("1× torch dynamo recompiled f",),
        gave_up=("m.py:f",),
    )


@pytest.fixture
def store(tmp_path: Path) -> Baselines:
    return Baselines(tmp_path / "baselines", "numpy", VARIANT)


def table(store: Baselines, module: str = MODULE) -> Path:
    return store.directory / baseline_table.table_name(module)


# -------------------------------------------------------------- form and round trip


def test_census_keys_go_into_their_modules_table_and_others_keep_their_file(
    store: Baselines,
) -> None:
    store.update({key(1): make(31), key(2): make(32), "test_x.py::test_a": make(5)})
    assert sorted(str(p.relative_to(store.directory)) for p in store.directory.rglob("*")) == [
        "test_census_ops.py.table.json",
        "test_x.py",
        "test_x.py/test_a.json",
    ]
    assert store.file(key(1)) == table(store)
    # the other test's file is today's form, byte for byte
    expected = baseline.dumps("numpy", VARIANT, "test_x.py::test_a", make(5))
    assert store.file("test_x.py::test_a").read_text(encoding="utf-8") == expected


def test_round_trip_of_real_records(store: Baselines) -> None:
    measured = {key(1): make(31), key(2): make(40, environment=False)}
    store.update(measured)
    loaded = store.load()
    assert set(loaded) == set(measured)
    for name, record in measured.items():
        entry = loaded[name]
        assert entry.totals_only
        assert entry.is_compact
        assert (entry.calls, entry.mode, entry.backend) == (record.calls, "eager", "numpy")
        assert entry.environment == record.environment
        assert entry.profile_sha256 == record.profile().sha256
        assert (entry.functions, entry.calls_by_package, entry.latency) == ({}, {}, None)
        assert entry.count_problem() is None
        assert entry == record.totals()
        assert record_data(entry)["totals_only"] is True
    assert "totals_only" not in record_data(make(3))  # left out of every other record's JSON
    data = json.loads(table(store).read_text(encoding="utf-8"))
    assert len(data["environments"]) == 2  # written once each, not per entry
    assert baseline.load_all(store.root, "numpy") == {VARIANT: loaded}


def test_graph_breaks_recompiles_and_gave_up_are_kept(tmp_path: Path) -> None:
    torch = Baselines(tmp_path, "torch", VARIANT)
    torch.update({"test_census_layers.py::test_layer[Dense]": compiled()})
    [entry] = torch.load().values()
    assert entry == compiled().totals()
    assert entry.graph_breaks == compiled().graph_breaks
    assert (entry.recompiles, entry.gave_up) == (1, ("m.py:f",))
    lines = table(torch, "test_census_layers.py").read_text(encoding="utf-8").splitlines()
    assert sum('"graph_breaks": {' in line for line in lines) == 1  # the GraphRecord on one line


def test_the_layout_is_sorted_one_line_per_key_and_per_value(store: Baselines) -> None:
    store.update({key(i): make(30 + i) for i in (3, 1, 2)})
    text = table(store).read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[:6] == [
        "{",
        '"schema_version": 1,',
        '"backend": "numpy",',
        f'"variant": "{VARIANT}",',
        f'"module": "{MODULE}",',
        '"environments": {',
    ]
    start = lines.index('"entries": {')
    assert lines[start + 1 :] == [
        f'"{key(1)}":',
        "  " + json.dumps(json.loads(lines[start + 2])),
        ",",
        f'"{key(2)}":',
        lines[start + 5],
        ",",
        f'"{key(3)}":',
        lines[start + 8],
        "}",
        "}",
    ]
    assert json.loads(lines[start + 2]) == {
        "calls": 31,
        "env": baseline_table.env_digest(ENVIRONMENT),
        "mode": "eager",
        "profile_sha256": make(31).profile().sha256,
    }
    assert text == baseline_table.dumps("numpy", VARIANT, MODULE, store.load())


def test_bytes_per_entry_of_a_700_workload_table(store: Baselines) -> None:
    """The census's size: 700 workloads on one backend, one variant."""
    store.update({key(i): make(20 + i % 50) for i in range(700)})
    size = table(store).stat().st_size
    per_entry = size / 700
    print(
        f"census table: 700 entries, {size:,} bytes, {per_entry:.0f} bytes per entry; "
        f"700 workloads x 6 variants: {size * 6 / 1e6:.2f} MB"
    )
    assert per_entry <= 250
    assert size * 6 <= 2_000_000


# ------------------------------------------------------------------ updating


def test_re_recording_one_entry_changes_exactly_one_line(store: Baselines) -> None:
    store.update({key(i): make(30) for i in range(20)})
    before = table(store).read_text(encoding="utf-8").splitlines()
    [change] = store.update({key(7): make(33)})
    assert change.kind == "updated"
    after = table(store).read_text(encoding="utf-8").splitlines()
    assert len(before) == len(after)
    changed = [(old, new) for old, new in zip(before, after, strict=True) if old != new]
    assert len(changed) == 1
    [(old, new)] = changed
    assert '"calls": 30' in old
    assert '"calls": 33' in new
    assert store.load()[key(7)].calls == 33


def test_an_unchanged_run_keeps_every_byte_and_other_entries_are_untouched(
    store: Baselines,
) -> None:
    store.update({key(i): make(30 + i) for i in range(5)})
    before = table(store).read_bytes()
    mtime = table(store).stat().st_mtime_ns
    kinds = {change.kind for change in store.update({key(i): make(30 + i) for i in range(5)})}
    assert kinds == {"unchanged"}
    assert table(store).read_bytes() == before
    assert table(store).stat().st_mtime_ns == mtime
    # a latency that moved is not in a table entry: still unchanged
    slower = replace(make(31), latency=replace(make(31).latency, median_ms=9.0))  # type: ignore[type-var]
    [change] = store.update({key(1): slower})
    assert change.kind == "unchanged"
    # one test of the module re-recorded: the others keep their entries
    store.update({key(9): make(50)})
    loaded = store.load()
    assert [loaded[key(i)].calls for i in range(5)] == [30, 31, 32, 33, 34]


def test_a_moved_digest_is_an_update_and_unused_environments_are_dropped(
    store: Baselines,
) -> None:
    store.update({key(1): make(31), key(2): make(31, environment=False)})
    moved = Record(
        backend="numpy",
        mode="eager",
        calls=31,
        calls_by_function={"keras/src/ops/numpy.py:add": 2, "isinstance": 29},
        environment={"python": "3.11.7"},
    )
    [change] = store.update({key(1): moved})
    assert change.kind == "updated"
    assert changes.moved_words(change.before, change.after) == [  # type: ignore[arg-type]
        "the profile (its digest; calls unchanged)"
    ]
    data = json.loads(table(store).read_text(encoding="utf-8"))
    assert list(data["environments"]) == [baseline_table.env_digest({"python": "3.11.7"})]


def test_stale_entries_are_removed_from_the_table_and_the_last_removes_the_file(
    store: Baselines,
) -> None:
    store.update({key(1): make(31), key(2): make(32), "test_x.py::test_a": make(5)})
    [removed] = store.update({}, remove=[key(2)])
    assert (removed.kind, removed.key) == ("removed", key(2))
    assert sorted(store.load()) == [key(1), "test_x.py::test_a"]
    store.update({}, remove=[key(1)])
    assert not table(store).exists()
    assert sorted(store.load()) == ["test_x.py::test_a"]


def test_the_ini_option_decides_which_modules_are_tables(tmp_path: Path) -> None:
    none = Baselines(tmp_path, "numpy", VARIANT, tables=())
    none.update({key(1): make(31)})
    assert none.file(key(1)).name == "test_op[op_001].json"
    mine = Baselines(tmp_path / "b", "numpy", VARIANT, tables=("test_perf_*.py",))
    mine.update({"test_perf_x.py::test_a": make(3), key(1): make(31)})
    assert (mine.directory / "test_perf_x.py.table.json").is_file()
    assert mine.file(key(1)).parent.name == MODULE


# ------------------------------------------------------------------ validation

VALID = baseline_table.dumps("numpy", VARIANT, MODULE, {key(1): make(31).totals()})
NN_KEY = "test_census_nn.py::test_relu"
OTHER = baseline_table.dumps("numpy", VARIANT, "test_census_nn.py", {NN_KEY: make(31)})
BAD_TABLES = {
    "corrupt": ("{not json", "not valid JSON (line 1, column 2"),
    "schema-version": (
        VALID.replace('"schema_version": 1', '"schema_version": 2'),
        "not a pytest-kerasperf table file (schema version 1): at schema_version: 1 was expected",
    ),
    "unknown-field": (
        VALID.replace('"mode": "eager"', '"mode": "eager", "functions": {}'),
        f"at entries/{key(1)}: Object contains unknown field `functions`",
    ),
    "negative-calls": (VALID.replace('"calls": 31', '"calls": -1'), "Expected `int` >= 0"),
    "wrong-backend": (
        baseline_table.dumps("torch", VARIANT, MODULE, {key(1): make(31, backend="torch")}),
        "holds backend 'torch', not 'numpy'",
    ),
    "wrong-variant": (
        baseline_table.dumps("numpy", "py3.12-cpu", MODULE, {key(1): make(31)}),
        "holds variant 'py3.12-cpu', not 'py3.11-cpu'",
    ),
    "wrong-module": (
        VALID.replace(f'"module": "{MODULE}"', '"module": "test_census_nn.py"'),
        "holds the table of 'test_census_nn.py', whose file is ",
    ),
    "entry-of-another-module": (
        OTHER.replace('"module": "test_census_nn.py"', f'"module": "{MODULE}"'),
        f"holds the entry of {NN_KEY!r}, which belongs in ",
    ),
    "edited-environment": (
        VALID.replace('"keras": "3.15.1"', '"keras": "3.16.0"'),
        "is not its fields' digest",
    ),
    "missing-environment": (
        VALID.replace(
            f'"env": "{baseline_table.env_digest(ENVIRONMENT)}"', '"env": "000000000000"'
        ),
        "names environment '000000000000', which the file does not hold",
    ),
}


@pytest.mark.parametrize("kind", list(BAD_TABLES))
def test_a_bad_table_is_one_line_naming_the_file_and_the_fix(store: Baselines, kind: str) -> None:
    content, message = BAD_TABLES[kind]
    path = table(store)
    path.parent.mkdir(parents=True)
    path.write_text(content, encoding="utf-8")
    with pytest.raises(BaselineError) as caught:
        store.load()
    text = str(caught.value)
    assert text.startswith(f"{path}: "), text
    assert message in text, text
    assert "\n" not in text
    with pytest.raises(BaselineError):
        store.update({key(2): make(3)})
    assert path.read_text(encoding="utf-8") == content  # never overwritten


def test_a_table_the_ini_does_not_name_and_a_file_it_does_are_refused(tmp_path: Path) -> None:
    store = Baselines(tmp_path, "numpy", VARIANT)
    store.update({key(1): make(31)})
    with pytest.raises(BaselineError, match=r"which kerasperf_table_baselines .* does not name"):
        Baselines(tmp_path, "numpy", VARIANT, tables=()).load()
    other = Baselines(tmp_path / "b", "numpy", VARIANT, tables=())
    other.update({key(1): make(31)})
    with pytest.raises(BaselineError, match=r"keeps in .*table\.json: delete this file"):
        Baselines(tmp_path / "b", "numpy", VARIANT).load()


def test_a_table_over_the_size_limit_is_refused_unread(store: Baselines) -> None:
    path = table(store)
    path.parent.mkdir(parents=True)
    path.write_text(" " * (baseline_table.MAX_TABLE_BYTES + 1), encoding="utf-8")
    with pytest.raises(BaselineError, match=str(path)):
        store.load()


# ------------------------------------------------------------------ judging


def test_more_calls_than_a_totals_only_entry_fail_naming_compare_ref() -> None:
    entry = make(312).totals()
    settings = Settings(test="test_op[add]")
    verdict = judging.judge(make(320), entry, (), settings)
    assert verdict.status == "regressed"
    [line] = verdict.failure_lines
    assert line == (
        "calls: 320 per call, baseline 312 (+8); the census entry keeps totals only: name the "
        'functions with pytest --kerasperf --kerasperf-compare-ref <base ref> -k "test_op[add]"'
    )
    assert "totals only" in line
    assert "--kerasperf-compare-ref" in line


def test_fewer_calls_are_a_win_and_a_moved_digest_a_note() -> None:
    entry = make(312).totals()
    won = judging.judge(make(300), entry, (), Settings())
    assert won.status == "improved"
    assert any("record the win" in note for note in won.notes)
    ratchet = judging.judge(make(300), entry, (), Settings(ratchet=True))
    assert ratchet.status == "win-not-recorded"
    moved = Record(
        backend="numpy",
        mode="eager",
        calls=312,
        calls_by_function={"keras/src/ops/numpy.py:add": 2, "isinstance": 310},
        environment=dict(ENVIRONMENT),
    )
    noted = judging.judge(moved, entry, (), Settings())
    assert noted.passed
    assert any("the profile moved" in note for note in noted.notes)
    assert judging.judge(make(312), entry, (), Settings()).status == "pass"


def test_nothing_else_breaks_on_an_entry_without_functions() -> None:
    entry, measured = make(312).totals(), make(320)
    for before, after in ((entry, measured), (measured, entry), (entry, entry)):
        changes.diff(before, after)
        changes.moved_words(before, after)
        baseline.merge(before, after.totals(), Settings())
    explain_summaries.from_summaries(entry.profile(), measured.profile())
    culprits.function_entry_points(entry.profile().functions, measured.profile().functions)
    verdict = judging.judge(measured, entry, (), Settings())
    calls = verdict.change(CallsChange)
    assert calls is not None
    assert calls.function_diff == ()
    assert calls.delta == 8
    assert to_data(verdict)["status"] == "regressed"


# ------------------------------------------------------------------ git merge


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_two_branches_re_recording_different_entries_merge_cleanly(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    assert git(repo, "init", "-q", "-b", "main").returncode == 0
    store = Baselines(repo / "baselines", "numpy", VARIANT)
    store.update({key(i): make(30) for i in range(20)})
    git(repo, "add", ".")
    assert git(repo, "commit", "-qm", "census").returncode == 0

    git(repo, "checkout", "-qb", "a")
    store.update({key(3): make(41)})
    assert git(repo, "commit", "-qam", "a: op 3").returncode == 0

    git(repo, "checkout", "-q", "main")
    git(repo, "checkout", "-qb", "b")
    store.update({key(4): make(42), key("010a"): make(43)})  # and a new entry, among the others
    assert git(repo, "commit", "-qam", "b: op 4, new op").returncode == 0

    merged = git(repo, "merge", "-q", "--no-edit", "a")
    assert merged.returncode == 0, merged.stdout + merged.stderr
    loaded = store.load()
    assert (loaded[key(3)].calls, loaded[key(4)].calls, loaded[key("010a")].calls) == (41, 42, 43)
    assert len(loaded) == 21
    assert table(store).read_text(encoding="utf-8") == baseline_table.dumps(
        "numpy", VARIANT, MODULE, loaded
    )


#: One branch's update: (keys re-recorded or added, with their calls), keys removed.
Changes = tuple[dict[int | str, int], tuple[int, ...]]
#: (branch A's update, branch B's update) of a 20-entry table: every one merges cleanly.
CLEAN_MERGES: dict[str, tuple[Changes, Changes]] = {
    "neighbours re-recorded": (({3: 41}, ()), ({4: 42}, ())),
    "re-recorded and a key added right after it": (({3: 41}, ()), ({"003a": 43}, ())),
    "re-recorded and its neighbour removed": (({3: 41}, ()), ({}, (4,))),
    "two keys added apart": (({"005a": 41}, ()), ({"012a": 42}, ())),
    "re-recorded the last, a key added before it": (({19: 41}, ()), ({"018a": 42}, ())),
    "the first re-recorded and a key added before it": (({0: 41}, ()), ({"-01": 42}, ())),
    "the same new environment on both sides": (({3: -41}, ()), ({7: -42}, ())),
}


def _branch(store: Baselines, update: Changes) -> None:
    """Re-record or add (a negative count: under another environment), then remove."""
    measured, removed = update
    store.update(
        {key(i): make(abs(n), environment=n > 0) for i, n in measured.items()},
        remove=[key(i) for i in removed],
    )


def _merge(
    tmp_path: Path, a: Changes, b: Changes
) -> tuple[Baselines, subprocess.CompletedProcess[str]]:
    repo = tmp_path / "repo"
    repo.mkdir()
    assert git(repo, "init", "-q", "-b", "main").returncode == 0
    store = Baselines(repo / "baselines", "numpy", VARIANT)
    store.update({key(i): make(30) for i in range(20)})
    git(repo, "add", ".")
    assert git(repo, "commit", "-qm", "census").returncode == 0
    for name, update in (("a", a), ("b", b)):
        git(repo, "checkout", "-q", "main")
        git(repo, "checkout", "-qb", name)
        _branch(store, update)
        assert git(repo, "commit", "-qam", name).returncode == 0
    return store, git(repo, "-c", "merge.conflictStyle=diff3", "merge", "-q", "--no-edit", "a")


@pytest.mark.parametrize("case", list(CLEAN_MERGES))
def test_more_merges_of_different_entries_are_clean(tmp_path: Path, case: str) -> None:
    a, b = CLEAN_MERGES[case]
    store, merged = _merge(tmp_path, a, b)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    loaded = store.load()
    for i, n in {**a[0], **b[0]}.items():
        assert loaded[key(i)].calls == abs(n)
    for i in (*a[1], *b[1]):
        assert key(i) not in loaded


def test_two_keys_added_after_the_last_conflict_only_in_the_added_lines(tmp_path: Path) -> None:
    """Both branches insert at one place: git cannot order them, whatever the layout.  The
    last entry's missing comma adds nothing to it: the base side of the conflict is empty
    (no existing line was changed by either branch)."""
    store, merged = _merge(tmp_path, ({120: 41}, ()), ({121: 42}, ()))
    assert merged.returncode != 0
    text = table(store).read_text(encoding="utf-8")
    ours = text.split("<<<<<<< ")[1].split("\n", 1)[1].split("||||||| ")[0]
    base = text.split("||||||| ")[1].split("\n", 1)[1].split("=======")[0]
    theirs = text.split("=======\n")[1].split(">>>>>>> ")[0]
    assert base == ""
    assert ours.splitlines() == [",", f'"{key(121)}":', ours.splitlines()[2]]
    assert theirs.splitlines() == [",", f'"{key(120)}":', theirs.splitlines()[2]]


def test_the_one_neighbour_conflict_is_the_last_entry_and_a_key_appended_after_it(
    tmp_path: Path,
) -> None:
    """The layout's one edge (docs/baselines.md): nothing follows the last entry's value line,
    so a key appended after it is adjacent to it, and re-recording it then conflicts."""
    _, merged = _merge(tmp_path, ({19: 41}, ()), ({"019a": 42}, ()))
    assert merged.returncode != 0


# ------------------------------------------------------------------ a real run


def test_an_inner_census_module_writes_its_table_then_compares_with_it(inner: Inner) -> None:
    inner.write(
        workload_source() + "\n\ndef test_b(kerasperf):\n    kerasperf(work)\n", "test_census_demo"
    )
    recorded = inner.run("--kerasperf-update-baseline")
    assert recorded.ret == pytest.ExitCode.OK, recorded.stdout.str()
    path = inner.baseline_file / "test_census_demo.py.table.json"
    assert sorted(p.name for p in inner.baseline_file.iterdir()) == [path.name]
    data = json.loads(path.read_text(encoding="utf-8"))
    assert sorted(data["entries"]) == [
        "test_census_demo.py::test_b",
        "test_census_demo.py::test_work",
    ]

    compared = inner.run("--kerasperf", "--kerasperf-strict")
    assert compared.ret == pytest.ExitCode.OK, compared.stdout.str()
    compared.stdout.fnmatch_lines(["kerasperf: 2 perf tests: 2 measured, 2 compared; *"])

    inner.write(workload_source(helper=True), "test_census_demo")
    grown = inner.run("--kerasperf")
    assert grown.ret == pytest.ExitCode.TESTS_FAILED
    grown.stdout.fnmatch_lines(
        [
            "*calls: * per call, baseline * (+*); the census entry keeps totals only: name the "
            'functions with pytest --kerasperf --kerasperf-compare-ref <base ref> -k "test_work"*'
        ]
    )

    # test_b is gone from the module: its entry is stale, and the update removes it
    stale = inner.run("--kerasperf")
    stale.stdout.fnmatch_lines(["kerasperf: 1 perf test: 1 measured, 1 compared; 1 stale *"])
    assert inner.run("--kerasperf-update-baseline").ret == pytest.ExitCode.OK
    data = json.loads(path.read_text(encoding="utf-8"))
    assert sorted(data["entries"]) == ["test_census_demo.py::test_work"]


def test_kerasperf_accept_writes_census_results_into_the_table(inner: Inner) -> None:
    inner.write(workload_source(), "test_census_demo")
    assert inner.run("--kerasperf", "--kerasperf-json", "ci.json").ret == pytest.ExitCode.OK
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_kerasperf",
            "accept",
            "ci.json",
            "--baseline-dir",
            str(inner.baseline_dir),
        ],
        cwd=inner.pytester.path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "added     test_census_demo.py::test_work" in done.stdout
    path = inner.baseline_file / "test_census_demo.py.table.json"
    assert path.is_file()
    gate = inner.run("--kerasperf", "--kerasperf-strict")
    assert gate.ret == pytest.ExitCode.OK, gate.stdout.str()


def test_the_ini_key_names_the_table_modules_of_a_real_run(inner: Inner) -> None:
    inner.pytester.makeini("[pytest]\nkerasperf_table_baselines =\n    test_x*.py\n")
    inner.write(workload_source())
    assert inner.run("--kerasperf-update-baseline").ret == pytest.ExitCode.OK
    assert sorted(p.name for p in inner.baseline_file.iterdir()) == ["test_x.py.table.json"]
    compared = inner.run("--kerasperf", "--kerasperf-strict")
    assert compared.ret == pytest.ExitCode.OK, compared.stdout.str()
