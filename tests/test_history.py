"""kerasperf sweep / sweep-merge / bisect on a real git history of the installed Keras.

The history (built once per module from a copy of the installed Keras):

0. ``Initial (#1)``: the unpatched copy;
1. ``Add a check (#2)``: an extra Python call in ``Layer.__call__``;
2. ``Break the build (#3)``: Keras no longer imports;
3. ``Fix the build (#4)``: back to commit 1's tree;
4. a true merge commit, ``Merge pull request #5 from user/another`` / ``Another``,
   whose branch plants a helper call in ``BaseConv.call`` (3 convolutions in the CNN).

Every measurement is a real ``pytest`` process on the numpy backend running
the bundled suite's CNN forward with rounds 0.  The two shards measure the
history once, from a bare ``git clone --mirror``, into one cache; everything
else reads that cache, so the whole file measures five commits (once per run:
pytest-xdist workers share the history and the cache).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import filelock
import git
import msgspec
import numpy as np
import pytest

from kerasperf_lab.history import charts
from kerasperf_lab.history.cache import in_shard, parse_shard
from kerasperf_lab.history.render import terminal_lines
from kerasperf_lab.history.steps import Step, SweepTable, mark_change_points
from pytest_kerasperf import cli
from pytest_kerasperf.ab.commits import Commit, HistoryError, pr_and_title
from pytest_kerasperf.ab.runner import Selection, error_line
from pytest_kerasperf.codec import to_data
from pytest_kerasperf.explain import Explanation
from tests.realrun import require_backend, shared_dir
from tests.test_keras_regression import commit_all, copy_keras, new_repo, patch, plant_layer_check

TEST = "test_standard.py::test_cnn_forward"
KEY = "test_standard.py::test_cnn_forward[eager]"
CHECK = "keras/src/layers/layer.py:_kerasperf_planted_check"
HELPER = "keras/src/layers/convolutional/base_conv.py:_kerasperf_planted_helper"
BROKEN = "planted: this commit does not import"


@dataclass(frozen=True)
class History:
    work: Path  # a repository with a work tree
    bare: Path  # git clone --mirror of it
    shas: tuple[str, ...]  # first-parent commits, oldest first
    root: Path


def _build(root: Path) -> list[str]:
    work = copy_keras(root / "keras-repo")
    repo = new_repo(work)
    repo.git.checkout("-q", "-b", "master")
    shas = [commit_all(repo, "Initial (#1)")]

    plant_layer_check(work)
    shas.append(commit_all(repo, "Add a check (#2)"))

    init_py = work / "keras" / "__init__.py"
    clean_init = init_py.read_text()
    init_py.write_text(clean_init + f"\nraise ImportError({BROKEN!r})\n")
    shas.append(commit_all(repo, "Break the build (#3)\n\nA commit that does not import."))
    init_py.write_text(clean_init)
    shas.append(commit_all(repo, "Fix the build (#4)"))

    repo.git.checkout("-q", "-b", "another")
    conv_py = work / "keras" / "src" / "layers" / "convolutional" / "base_conv.py"
    patch(conv_py, "    def call(self, inputs):\n", "        _kerasperf_planted_helper(inputs)\n")
    conv_py.write_text(
        conv_py.read_text() + "\n\ndef _kerasperf_planted_helper(inputs):\n    return inputs\n"
    )
    commit_all(repo, "Plant a helper in BaseConv.call")
    repo.git.checkout("-q", "master")
    repo.git.merge(
        "-q", "--no-ff", "another", "-m", "Merge pull request #5 from user/another", "-m", "Another"
    )
    shas.append(str(repo.head.commit.hexsha))
    git.Repo.clone_from(str(work), str(root / "mirror.git"), multi_options=["--mirror"])
    return shas


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    """The history, built once per run (under xdist, by the first worker that needs it)."""
    require_backend("numpy")
    root = shared_dir(tmp_path_factory, "kerasperf-history")
    root.mkdir(parents=True, exist_ok=True)
    done = root / "history.json"
    with filelock.FileLock(f"{root}.lock"):
        if not done.exists():
            done.write_text(json.dumps(_build(root)))
    shas = tuple(json.loads(done.read_text()))
    return History(work=root / "keras-repo", bare=root / "mirror.git", shas=shas, root=root)


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str


def kerasperf(*args: str | Path, cwd: Path) -> Ran:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_kerasperf", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    return Ran(proc.returncode, proc.stdout, proc.stderr)


def sweep_args(repo: Path, spec: str, cache: Path, *more: str | Path) -> list[str | Path]:
    selection = ["--backend", "numpy", "--tests", TEST]
    return ["sweep", "--repo", repo, spec, *selection, "--cache", cache, *more]


@dataclass(frozen=True)
class Sweeps:
    shards: tuple[Ran, ...]
    full: Ran
    full_json: dict[str, Any]
    full_markdown: str
    cache: Path


def _sweep(history: History, cache: Path, out: Path) -> dict[str, Any]:
    """Shards 1/2 and 2/2 from the bare mirror into one cache, then the whole range unsharded."""
    spec = f"{history.shas[0]}..master"
    shards = [
        kerasperf(*sweep_args(history.bare, spec, cache, "--shard", shard), cwd=history.root)
        for shard in ("1/2", "2/2")
    ]
    more: list[str | Path] = ["--json", out / "sweep.json", "--markdown", out / "sweep.md"]
    full = kerasperf(*sweep_args(history.work, spec, cache, *more), cwd=history.root)
    return {"shards": [r.__dict__ for r in shards], "full": full.__dict__}


@pytest.fixture(scope="module")
def sweeps(history: History) -> Sweeps:
    cache, out, done = history.root / "cache", history.root / "full", history.root / "runs.json"
    with filelock.FileLock(f"{history.root}.sweeps.lock"):
        if not done.exists():
            done.write_text(json.dumps(_sweep(history, cache, out)))
    runs = json.loads(done.read_text())
    shards = tuple(Ran(**r) for r in runs["shards"])
    full = Ran(**runs["full"])
    for ran in (*shards, full):
        assert ran.returncode == 0, ran.stderr[-3000:]
    return Sweeps(
        shards=shards,
        full=full,
        full_json=json.loads((out / "sweep.json").read_text()),
        full_markdown=(out / "sweep.md").read_text(),
        cache=cache,
    )


def _rows(document: dict[str, Any]) -> dict[int, dict[str, Any]]:
    rows = document["rows"]
    assert len({row["index"] for row in rows}) == len(rows), rows
    return {row["index"]: row for row in rows}


def _calls(row: dict[str, Any]) -> dict[str, Any]:
    """A row's change of calls (its ``changes`` are tagged by metric), with its delta."""
    [change] = [c for c in row["changes"] if c["metric"] == "calls"]
    return {**change, "delta": change["after"] - change["before"]}


def test_each_change_is_attributed_to_its_commit_and_pr(history: History, sweeps: Sweeps) -> None:
    rows = _rows(sweeps.full_json)
    assert [c["sha"] for c in sweeps.full_json["commits"]] == list(history.shas)
    assert [(c["pr"], c["title"]) for c in sweeps.full_json["commits"]] == [
        (1, "Initial"),
        (2, "Add a check"),
        (3, "Break the build"),
        (4, "Fix the build"),
        (5, "Another"),  # a true merge commit: the title is the body's first line
    ]
    assert rows[0]["status"] == "first"
    assert rows[0]["test"] == KEY

    check = rows[1]
    assert (check["status"], check["commit"]["pr"]) == ("changed", 2)
    assert _calls(check)["delta"] > 0
    first = _calls(check)["entry_points"][0]
    assert (first["caller"], first["callee"]) == ("keras/src/layers/layer.py:Layer.__call__", CHECK)
    assert first["after"] == _calls(check)["delta"]  # one new call per Layer.__call__

    assert rows[2]["status"] == "failed"
    assert BROKEN in rows[2]["error"]

    assert rows[3]["status"] == "unchanged"
    assert rows[3]["against"] == history.shas[1]  # the failed commit is passed over
    assert _calls(rows[3])["delta"] == 0

    helper = rows[4]
    assert (helper["status"], helper["commit"]["pr"], helper["commit"]["title"]) == (
        "changed",
        5,
        "Another",
    )
    assert _calls(helper)["delta"] == 3  # three Conv2D layers in the CNN
    assert [(p["caller"], p["callee"]) for p in _calls(helper)["entry_points"]] == [
        ("keras/src/layers/convolutional/base_conv.py:BaseConv.call", HELPER)
    ]
    assert helper["values"]["calls"] == rows[0]["values"]["calls"] + _calls(check)["delta"] + 3

    text = sweeps.full.stdout
    assert "Add a check" in text
    assert "failed: skipped: kerasperf: backend 'numpy' cannot be imported" in text
    # Where it changed: the own-count changes by caller, summing to the delta.
    n = _calls(check)["delta"]
    assert (
        f"layers/layer.py:Layer.__call__ +{n} (layers/layer.py:_kerasperf_planted_check 0→{n})"
        in text
    )
    explained = {i: msgspec.convert(_calls(rows[i])["explanation"], Explanation) for i in (1, 4)}
    assert [(g.caller, g.delta) for g in explained[1].groups] == [
        ("keras/src/layers/layer.py:Layer.__call__", n)
    ]
    assert [(g.caller, g.delta) for g in explained[4].groups] == [
        ("keras/src/layers/convolutional/base_conv.py:BaseConv.call", 3)
    ]
    assert f"(vs {history.shas[1][:10]})" in text


def test_shards_measure_their_slices_from_a_bare_mirror(history: History, sweeps: Sweeps) -> None:
    first, second = sweeps.shards
    assert "(shard 1/2): measured: 3, from cache: 0, failed: 1" in first.stdout
    assert "the table needs the other shards" in first.stdout
    assert "(shard 2/2): measured: 2, from cache: 0, failed: 0" in second.stdout
    cached = sorted(p.name.split("-", 1)[0] for p in sweeps.cache.glob("*.json"))
    assert cached == sorted(history.shas)


def test_rerun_measures_nothing_new(sweeps: Sweeps) -> None:
    assert "5 commits × 1 backend: measured: 0, from cache: 5, failed: 1" in sweeps.full.stdout
    assert sweeps.full_json["run"] == {"measured": 0, "from_cache": 5, "failed": 1}
    assert "measuring" not in sweeps.full.stderr


def test_merging_the_shards_gives_the_same_table(history: History, sweeps: Sweeps) -> None:
    out = history.root / "merged"
    spec = f"{history.shas[0]}..master"
    merged = kerasperf(
        "sweep-merge", "--repo", history.bare, spec, "--backend", "numpy", "--tests", TEST,
        "--cache", sweeps.cache, "--json", out / "sweep.json", "--markdown", out / "sweep.md",
        cwd=history.root,
    )  # fmt: skip
    assert merged.returncode == 0, merged.stderr
    assert "measured" not in merged.stdout.splitlines()[0]
    document = json.loads((out / "sweep.json").read_text())
    assert document["rows"] == sweeps.full_json["rows"]
    assert document["run"] is None
    assert (out / "sweep.md").read_text() == sweeps.full_markdown
    assert "| #2 | Add a check |" in sweeps.full_markdown


def test_merge_lists_what_is_missing(history: History, sweeps: Sweeps) -> None:
    empty = history.root / "empty-cache"
    empty.mkdir()
    spec = f"{history.shas[0]}..{history.shas[1]}"
    merged = kerasperf(
        "sweep-merge", "--repo", history.work, spec, "--backend", "numpy", "--tests", TEST,
        "--cache", empty, cwd=history.root,
    )  # fmt: skip
    assert merged.returncode == 2
    (line,) = merged.stderr.splitlines()
    assert line.startswith("kerasperf sweep-merge: error: missing from the caches")
    assert f"{history.shas[0][:10]} (numpy), {history.shas[1][:10]} (numpy)" in line


def test_bisect_names_the_planting_commit(history: History, sweeps: Sweeps) -> None:
    out = history.root / "bisect.json"
    result = kerasperf(
        "bisect", "--repo", history.work, history.shas[0], history.shas[-1], "--test", TEST,
        "--backend", "numpy", "--metric", "calls", "--cache", sweeps.cache, "--json", out,
        cwd=history.root,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    document = json.loads(out.read_text())
    assert document["first_bad"]["sha"] == history.shas[1]
    assert document["exact"] is True
    assert document["measured"] == 0  # the sweep's cache answers every probe
    outcomes = {p["commit"]: p["outcome"] for p in document["probes"]}
    assert outcomes[history.shas[2]] == "skip"  # the commit that does not import
    (change,) = document["changes"]
    assert change["change"]["entry_points"][0]["callee"] == CHECK
    assert f"first changed commit: {history.shas[1][:10]}" in result.stdout
    assert "#2 Add a check" in result.stdout
    assert "skipped (failed to run, as git bisect skip):" in result.stdout


def test_bisect_graph_breaks_needs_a_test_that_measures_them(
    history: History, sweeps: Sweeps
) -> None:
    result = kerasperf(
        "bisect", "--repo", history.work, history.shas[0], history.shas[-1], "--test", TEST,
        "--backend", "numpy", "--metric", "graph_breaks", "--cache", sweeps.cache,
        cwd=history.root,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1].startswith(
        "kerasperf bisect: error: no selected test measures graph breaks on numpy"
    )


def test_charts_are_written_as_png(history: History, sweeps: Sweeps) -> None:
    charts = history.root / "charts"
    spec = f"{history.shas[0]}..master"
    result = kerasperf(
        *sweep_args(history.work, spec, sweeps.cache, "--merge-only", "--charts", charts),
        cwd=history.root,
    )
    assert result.returncode == 0, result.stderr
    written = sorted(charts.glob("*.png"))
    assert [p.name for p in written] == ["calls.png"]  # numpy: no graph breaks, no latency
    assert written[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"chart: {written[0]}" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--repo", "{root}", "A..B"], "{root}: not a git repository"),
        (["--repo", "{work}", "nope..master"], "unknown ref 'nope'"),
        (["--repo", "{work}", "master"], "'master': give the commits as A..B"),
        (["--repo", "{work}", "master~1..master", "--shard", "3/2"], "--shard 3/2: give K/N"),
        (["--repo", "{work}", "master~1..master", "--shard", "x"], "--shard x: give K/N"),
        (["--repo", "{work}", "master..master~1"], "is not an ancestor of"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    history: History,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    fill = {"root": str(tmp_path), "work": str(history.work)}
    argv = ["sweep", *(a.format(**fill) for a in args), "--cache", str(tmp_path / "cache")]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    (line,) = err.splitlines()
    assert line.startswith("kerasperf sweep: error: ")
    assert message.format(**fill) in line
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("Add a check (#2)", (2, "Add a check")),
        ("Vectorize torch scatter to fix slow MeanIoU (#19512) (#23196)\n\nbody",
         (23196, "Vectorize torch scatter to fix slow MeanIoU (#19512)")),
        ("Merge pull request #123 from user/branch\n\nFix the thing\n\nmore",
         (123, "Fix the thing")),
        ("Merge pull request #123 from user/branch", (123, "user/branch")),
        ("Update README", (None, "Update README")),
    ],
)  # fmt: skip
def test_pr_number_and_title(message: str, expected: tuple[int | None, str]) -> None:
    assert pr_and_title(message) == expected


def test_shards_partition_the_commits() -> None:
    assert parse_shard("2/4") == (2, 4)
    for bad in ("0/2", "3/2", "1/0", "1", "a/b"):
        with pytest.raises(HistoryError):
            parse_shard(bad)
    slices = [[i for i in range(10) if in_shard(i, (k, 3))] for k in (1, 2, 3)]
    assert sorted(i for part in slices for i in part) == list(range(10))
    assert slices[0] == [0, 3, 6, 9]


def test_selection_key_and_error_lines() -> None:
    assert Selection(keyword="forward").digest() != Selection(keyword="cnn").digest()
    assert Selection().digest() == Selection(tests=(), keyword=None, rounds=0).digest()
    out = "collected\nE   ImportError: cannot import name 'x'\nE   \n1 error in 2s\n"
    assert error_line(out, "", 2) == "ImportError: cannot import name 'x'"
    skipped = "SKIPPED [1] ../suite/test_standard.py:16: kerasperf: backend 'numpy' cannot be\n"
    assert error_line(skipped, "", 0) == "skipped: kerasperf: backend 'numpy' cannot be"
    assert error_line("", "", 5) == "no test collected: check --tests and -k"


def test_graph_breaks_and_latency_charts(tmp_path: Path) -> None:
    """The step chart of graph breaks and the latency chart, from a table of torch rows."""
    commits = [
        Commit(sha=f"{i:040x}", date="2026-07-27T00:00:00+00:00", subject=f"PR {i} (#{i})",
               pr=i, title=f"PR {i}")
        for i in range(1, 5)
    ]  # fmt: skip
    key = "test_standard.py::test_cnn_forward[compiled]"
    breaks = [0, 1, None, 1]
    steps = [
        Step(i, commit, "torch", "failed", error="ImportError: x")
        if breaks[i] is None
        else Step(
            i, commit, "torch", "first" if i == 0 else "changed", key=key,
            values={"calls": 100 + i, "graph_breaks": breaks[i] or 0, "latency": 2.0 + i},
        )
        for i, commit in enumerate(commits)
    ]  # fmt: skip
    table = SweepTable("a..b", tuple(commits), ("torch",), Selection(), {"torch": {}}, tuple(steps))
    written = charts.write(table, tmp_path / "charts")
    assert [p.name for p in written] == ["calls.png", "graph-breaks.png", "latency.png"]
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in written)
    figure = charts.series_figure(
        table,
        lambda s: s.value("graph_breaks"),
        ylabel="graph breaks",
        title_text="graph breaks",
        zoom=True,
    )
    [axes] = figure.axes
    [line] = [line for line in axes.get_lines() if line.get_label() == "torch"]
    assert line.get_drawstyle() == "steps-post"  # a count holds until the next commit
    assert axes.get_ylim()[0] == 0
    assert [t.get_text() for t in axes.texts] == ["+1"]  # 0 -> 1: no percentage of 0
    [failed] = axes.patches  # commit 2 failed: its column, hatched
    assert failed.get_hatch() == "xx"
    assert failed.get_x() == 1.5  # type: ignore[attr-defined]


def test_sweep_marks_latency_change_points_not_neighbour_jumps() -> None:
    """A latency series with one real step (+20 % from the 7th commit on) and one noisy commit:
    E-divisive marks the step, in the table, the JSON and the changed-only view; the one-off
    jump between two neighbours is not a change point."""
    rng = np.random.default_rng(3)
    levels = [50.0] * 6 + [60.0] * 6
    latencies = [level * (1 + rng.normal(0.0, 0.01)) for level in levels]
    latencies[2] *= 1.3  # one noisy commit
    commits = [
        Commit(sha=f"{i + 1:x}" * 40, date="2026-07-27T00:00:00+00:00", subject=f"PR {i} (#{i})",
               pr=i, title=f"PR {i}")
        for i in range(len(latencies))
    ]  # fmt: skip
    key = "test_standard.py::test_lm_forward[eager]"
    steps = [
        Step(i, commit, "numpy", "first" if i == 0 else "unchanged", key=key,
             values={"calls": 100, "latency": latencies[i]})
        for i, commit in enumerate(commits)
    ]  # fmt: skip
    marked = mark_change_points(steps)
    changed = [s for s in marked if s.change_point("latency") is not None]
    assert [s.index for s in changed] == [6]
    (step,) = changed
    assert step.status == "changed"
    point = step.change_point("latency")
    assert point is not None
    assert point.relative == pytest.approx(0.2, abs=0.03)
    assert to_data(step)["change_points"]["latency"]["p_value"] <= 0.05
    table = SweepTable(
        "a..b", tuple(commits), ("numpy",), Selection(), {"numpy": {}}, tuple(marked)
    )
    lines = terminal_lines(table, changed_only=True)
    assert any("change point +" in line and commits[6].short in line for line in lines)
    assert not any(commits[2].short in line for line in lines)
    assert mark_change_points(steps[:5]) == steps[:5]  # too short to find a level
