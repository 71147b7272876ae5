"""``kerasperf prs`` on real pull-request refs of keras-team/keras, on torch.

Where a Keras repository with GitHub's ``refs/pull/N/head`` refs is at hand
(``$KERASPERF_KERAS_REPO``, else the mirror this machine keeps), the article's
two kinds of change: #23183, merged (the traceback wrapper taken off every op
call: fewer calls), and #23327, open (the torch.compile graph break in
``dot_product_attention`` removed).  The command's figures are checked
against an independent count of the same exported commits: plain cProfile
totals and plain ``torch._dynamo.explain`` (``tests/independent.py``).
Without such a repository the test is skipped, saying so; the same command
is tested on a history of the installed Keras in ``tests/test_prs.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from pytest_kerasperf.ab.commits import export, open_repo
from tests import readresult
from tests.realrun import backend_env, require_backend, shared_dir

KERAS_REPO = Path(os.environ.get("KERASPERF_KERAS_REPO", "/work/.mirror/keras-team+keras/repo"))
TEST = "test_standard.py::test_lm_forward"
EAGER, COMPILED = f"{TEST}[eager]", f"{TEST}[compiled]"
INDEPENDENT = Path(__file__).parent / "independent.py"


def _repo_or_skip() -> Path:
    if not (KERAS_REPO / "HEAD").exists() and not (KERAS_REPO / ".git").exists():
        pytest.skip(f"no Keras repository at {KERAS_REPO} (set KERASPERF_KERAS_REPO)")
    refs = subprocess.run(
        ["git", "-C", str(KERAS_REPO), "rev-parse", "--verify", "-q", "refs/pull/23327/head"],
        capture_output=True,
        check=False,
    )
    if refs.returncode != 0:
        pytest.skip(f"{KERAS_REPO} has no refs/pull/23327/head (fetch refs/pull/*/head)")
    return KERAS_REPO


def _prs(root: Path, pr: str, keyword: str) -> dict[str, Any]:
    out = root / f"prs-{pr}.json"
    ran = subprocess.run(
        [
            sys.executable, "-m", "pytest_kerasperf", "prs", pr,
            "--repo", str(KERAS_REPO), "--backend", "torch", "--tests", TEST, "-k", keyword,
            "--cache", str(root / "cache"), "--json", str(out),
        ],
        cwd=root, capture_output=True, text=True, timeout=1500, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    document: dict[str, Any] = json.loads(out.read_text())
    entries: list[dict[str, Any]] = document["prs"]
    [entry] = entries
    return entry


def _independent(root: Path, sha: str, task: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="kerasperf-independent-") as scratch:
        tree = export(open_repo(KERAS_REPO), sha, Path(scratch) / "tree")
        env = backend_env("torch", root / "keras-home")
        env["PYTHONPATH"] = os.pathsep.join([str(tree), str(Path(__file__).parents[1])])
        ran = subprocess.run(
            [sys.executable, str(INDEPENDENT), task],
            env=env, capture_output=True, text=True, timeout=900, check=False,
        )  # fmt: skip
        [line] = [x for x in ran.stdout.splitlines() if x.startswith("INDEPENDENT ")] or [
            f"INDEPENDENT {json.dumps({'error': ran.stderr[-2000:]})}"
        ]
        found: dict[str, Any] = json.loads(line.split(" ", 1)[1])
        assert "error" not in found, found["error"]
        assert found["keras"].startswith(scratch), found  # the commit's Keras, not the installed
        return found


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    _repo_or_skip()
    require_backend("torch")
    root = shared_dir(tmp_path_factory, "kerasperf-prs-torch")
    root.mkdir(parents=True, exist_ok=True)
    removed_calls = _prs(root, "23183", "eager")
    removed_break = _prs(root, "23327", "compiled")
    return {
        "23183": removed_calls,
        "23327": removed_break,
        "calls": {
            side: _independent(root, removed_calls[side]["sha"], "calls")["calls"]
            for side in ("before", "after")
        },
        "breaks": {
            side: _independent(root, removed_break[side]["sha"], "breaks")["graph_breaks"]
            for side in ("before", "after")
        },
    }


def _row(entry: dict[str, Any], test: str) -> dict[str, Any]:
    rows: list[dict[str, Any]] = [
        r for r in entry["rows"] if r["test"] == test and r["backend"] == "torch"
    ]
    [row] = rows
    return row


def test_a_merged_pr_that_removes_calls_matches_an_independent_count(real: dict[str, Any]) -> None:
    entry = real["23183"]
    assert (entry["how"], entry["merged"]) == ("merged", "2026-07-27")
    row = _row(entry, EAGER)
    independent = real["calls"]
    assert (row["calls_before"], row["calls_after"]) == (
        independent["before"],
        independent["after"],
    )
    delta = row["calls_after"] - row["calls_before"]
    assert delta < 0
    # The explanation adds up exactly, and shows the wrapper's calls as gone and the layers
    # it used to call as moved, not as new calls.
    explanation = row["explanation"]
    assert sum(readresult.group_delta(group) for group in explanation["groups"]) == delta
    gone = {
        item["callee"].rsplit(":", 1)[-1]
        for group in explanation["groups"]
        for item in group["items"]
        if item["after"] == 0
    }
    assert "inject_argument_info_in_traceback.<locals>.error_handler" in gone
    moved = {(m["callee"].rsplit(":", 1)[-1], m["target"]) for m in explanation["moves"]}
    assert ("EinsumDense.call", "keras/src/ops/operation.py:Operation.__call__") in moved


def test_an_open_pr_that_removes_graph_breaks_matches_explain(real: dict[str, Any]) -> None:
    entry = real["23327"]
    assert entry["how"] == "head"
    row = _row(entry, COMPILED)
    independent = real["breaks"]
    assert (row["values_before"]["graph_breaks"], row["values_after"]["graph_breaks"]) == (
        independent["before"],
        independent["after"],
    )
    assert row["values_before"]["graph_breaks"] > 0 == row["values_after"]["graph_breaks"]
