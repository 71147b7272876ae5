"""``kerasperf prs`` on a real git history of the installed Keras, on numpy.

The history of ``tests/test_history.py`` (``Add a check (#2)``: one more
call per ``Layer.__call__``; ``Break the build (#3)``; the true merge of
PR #5, a helper planted in ``BaseConv.call``), plus two open PRs as GitHub
keeps them, ``refs/pull/N/head`` in the bare mirror: #6 removes #2's check
(fewer calls), and #7 is stacked on #6 (its branch holds #6's commit, then
plants a helper in ``Dense.call``).  The sweep's cache is read too, so only
the two heads are measured here.
"""

# ruff: noqa: F811  (the fixtures of tests/test_history.py, imported and used by name)
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import filelock
import git
import pytest

from tests import readresult
from tests.test_history import (  # noqa: F401
    CHECK,
    HELPER,
    KEY,
    TEST,
    History,
    Sweeps,
    _calls,
    _rows,
    history,
    kerasperf,
    sweeps,
)
from tests.test_keras_regression import patch

LAYER_CALL = "keras/src/layers/layer.py:Layer.__call__"
CONV_CALL = "keras/src/layers/convolutional/base_conv.py:BaseConv.call"
DENSE_CALL = "keras/src/layers/core/dense.py:Dense.call"
DENSE_HELPER = "keras/src/layers/core/dense.py:_kerasperf_dense_helper"
STACKED_SUBJECT = "Plant a helper in Dense.call"


def _open_prs(history: History) -> dict[str, str]:
    """refs/pull/6/head and refs/pull/7/head in the bare mirror, made in a scratch clone."""
    scratch = history.root / "prs-clone"
    clone = git.Repo.clone_from(str(history.bare), str(scratch))
    for name, email in (("user.name", "kerasperf"), ("user.email", "kerasperf@example.com")):
        clone.git.config(name, email)
    layer_py = scratch / "keras" / "src" / "layers" / "layer.py"
    layer_py.write_text(
        layer_py.read_text().replace("        _kerasperf_planted_check(self)\n", "", 1)
    )
    clone.git.checkout("-q", "-b", "remove-check")
    clone.git.commit("-q", "-am", "Remove the check")
    pr6 = clone.head.commit.hexsha
    dense_py = scratch / "keras" / "src" / "layers" / "core" / "dense.py"
    patch(
        dense_py,
        "    def call(self, inputs, training=None):\n",
        "        _kerasperf_dense_helper(inputs)\n",
    )
    dense_py.write_text(
        dense_py.read_text() + "\n\ndef _kerasperf_dense_helper(inputs):\n    return inputs\n"
    )
    clone.git.checkout("-q", "-b", "stacked")
    clone.git.commit("-q", "-am", STACKED_SUBJECT)
    pr7 = clone.head.commit.hexsha
    clone.git.push("-q", "origin", f"{pr6}:refs/pull/6/head", f"{pr7}:refs/pull/7/head")
    return {"6": pr6, "7": pr7}


@dataclass(frozen=True)
class Prs:
    document: dict[str, Any]
    markdown: str
    stdout: str
    heads: dict[str, str]


@pytest.fixture(scope="module")
def prs(history: History, sweeps: Sweeps) -> Prs:
    out, done = history.root / "prs", history.root / "prs.json"
    with filelock.FileLock(f"{history.root}.prs.lock"):
        if not done.exists():
            heads = _open_prs(history)
            ran = kerasperf(
                "prs", "2", "3", "5", "6", "7",
                "--repo", history.bare,
                "--backend", "numpy",
                "--tests", TEST,
                "--cache", out / "cache", sweeps.cache,
                "--json", out / "prs.json",
                "--markdown", out / "prs.md",
                cwd=history.root,
            )  # fmt: skip
            assert ran.returncode == 0, ran.stderr[-3000:]
            done.write_text(json.dumps({"heads": heads, "stdout": ran.stdout}))
    saved = json.loads(done.read_text())
    return Prs(
        document=json.loads((out / "prs.json").read_text()),
        markdown=(out / "prs.md").read_text(),
        stdout=saved["stdout"],
        heads=saved["heads"],
    )


def _entry(prs: Prs, number: int) -> dict[str, Any]:
    found: dict[str, Any] = next(e for e in prs.document["prs"] if e["pr"] == number)
    return found


def _row(prs: Prs, number: int) -> dict[str, Any]:
    rows: list[dict[str, Any]] = [r for r in _entry(prs, number)["rows"] if r["test"] == KEY]
    [row] = rows
    return row


def _delta(row: dict[str, Any]) -> int:
    """A row's change of calls (after minus before)."""
    return int(row["calls_after"]) - int(row["calls_before"])


def _adds_up(row: dict[str, Any]) -> dict[str, dict[str, tuple[int, int]]]:
    """The explanation's groups as caller -> callee -> (before, after), after checking that
    they sum exactly to the row's change of calls."""
    explanation = row["explanation"]
    groups = explanation["groups"]
    assert explanation["total"] == row["calls_after"] - row["calls_before"]
    assert sum(readresult.group_delta(group) for group in groups) == explanation["total"]
    return {
        g["caller"]: {i["callee"]: (i["before"], i["after"]) for i in g["items"]} for g in groups
    }


def test_merged_prs_are_measured_on_their_merge_and_its_first_parent(
    history: History, prs: Prs, sweeps: Sweeps
) -> None:
    assert prs.document["schema"] == "kerasperf-prs/3"
    assert [e["pr"] for e in prs.document["prs"]] == [2, 3, 5, 6, 7]
    two, five = _entry(prs, 2), _entry(prs, 5)
    assert (two["how"], two["before"]["sha"], two["after"]["sha"]) == (
        "merged",
        history.shas[0],
        history.shas[1],
    )
    assert (five["how"], five["before"]["sha"], five["after"]["sha"]) == (
        "merged",
        history.shas[3],
        history.shas[4],
    )
    assert (two["title"], five["title"]) == ("Add a check", "Another")
    # The same deltas as the sweep of the same commits.
    swept = _rows(sweeps.full_json)
    assert _delta(_row(prs, 2)) == _calls(swept[1])["delta"] > 0
    assert _delta(_row(prs, 5)) == _calls(swept[4])["delta"] == 3


def test_each_change_is_explained_by_own_counts_that_sum_exactly(prs: Prs) -> None:
    check = _row(prs, 2)
    n = _delta(check)
    assert _adds_up(check) == {LAYER_CALL: {CHECK: (0, n)}}  # one more call per layer call
    assert _adds_up(_row(prs, 5)) == {CONV_CALL: {HELPER: (0, 3)}}  # three Conv2D layers
    removed = _row(prs, 6)
    assert _delta(removed) == -n
    assert _adds_up(removed) == {LAYER_CALL: {CHECK: (n, 0)}}
    stacked = _row(prs, 7)
    groups = _adds_up(stacked)
    assert groups[LAYER_CALL] == {CHECK: (n, 0)}
    assert groups[DENSE_CALL] == {DENSE_HELPER: (0, 1)}  # the CNN's one Dense layer
    assert stacked["explanation"]["moves"] == []


def test_open_prs_are_measured_on_their_head_and_merge_base(history: History, prs: Prs) -> None:
    six, seven = _entry(prs, 6), _entry(prs, 7)
    for entry, number in ((six, "6"), (seven, "7")):
        assert entry["how"] == "head"
        assert entry["merged"] is None
        assert entry["after"]["sha"] == prs.heads[number]
        assert entry["before"]["sha"] == history.shas[-1]  # master, where both branched
    assert (six["commits"], seven["commits"]) == (1, 2)
    # A stacked head says whose work it also holds; the PR it is stacked on does not.
    assert seven["contains"] == [{"pr": 6, "commits": 1}]
    assert six["contains"] == []
    assert seven["title"] == STACKED_SUBJECT  # its first commit that #6 does not hold
    assert "shares commits with #6 (1)" in prs.markdown
    assert "| #7 | head vs base " in prs.markdown


def test_a_commit_that_fails_is_reported_not_dropped(prs: Prs) -> None:
    broken = _entry(prs, 3)
    assert broken["rows"] == []
    assert [(f["backend"], f["side"]) for f in broken["failed"]] == [("numpy", "after")]
    assert "does not import" in broken["failed"][0]["error"]
    assert "#3 numpy after: failed: " in prs.stdout


def test_an_unknown_pr_is_one_line_and_exit_2(history: History) -> None:
    ran = kerasperf("prs", "99", "--repo", history.bare, "--backend", "numpy", cwd=history.root)
    assert ran.returncode == 2
    [line] = ran.stderr.strip().splitlines()
    assert line.startswith("kerasperf prs: error: #99: not merged on master's first-parent line")
    assert "refs/pull/99/head" in line


def test_the_real_table_publishes_as_a_page(
    history: History, prs: Prs, tmp_path: pytest.TempPathFactory
) -> None:
    """``kerasperf publish`` reads the command's own JSON: the rows, the stacked warning and
    the explanations are on the page, and a browser shows it without an error."""
    from tests.test_publish import open_in_chromium

    page = history.root / "prs" / "page.html"
    ran = kerasperf("publish", history.root / "prs" / "prs.json", "-o", page, cwd=history.root)
    assert ran.returncode == 0, ran.stderr
    body = page.read_text(encoding="utf-8").split("</head>", 1)[1]
    for number in (2, 5, 6, 7):
        assert f"https://github.com/keras-team/keras/pull/{number}" in body
    assert f">{_delta(_row(prs, 6)):+}</td>".replace("-", "\u2212") in body
    assert "the Δ is not #7's alone" in body
    assert body.count("<details>") == len(prs.document["prs"])  # one explanation per PR
    assert CHECK in body  # #2's and #6's explanations: the planted check, 0→n and n→0
    seen = open_in_chromium(page, history.root / "prs" / "page.png")
    assert seen.errors == []
    assert all(url.startswith(("file:", "data:", "blob:")) for url in seen.requests)
