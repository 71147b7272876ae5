"""The sweep and bisect on torch: an extra call, then a graph break, each named at its commit.

A real git history of the installed Keras (a bare ``git clone --mirror`` as
``--repo``): ``Initial (#1)``, ``Add a check (#2)`` (an extra call in
``Layer.__call__``), ``Break the graph (#3)`` (``torch._dynamo.graph_break()``
in ``Dense.call``).  One sweep measures the bundled CNN forward, eager and
compiled, on torch at each commit; bisect then reads the sweep's cache and
measures nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import filelock
import git
import pytest

from tests.realrun import require_backend, shared_dir
from tests.test_keras_regression import (
    commit_all,
    copy_keras,
    new_repo,
    patch,
    plant_layer_check,
)

TEST = "test_standard.py::test_cnn_forward"
EAGER = "test_standard.py::test_cnn_forward[eager]"
COMPILED = "test_standard.py::test_cnn_forward[compiled]"
FRAME = "keras/src/layers/core/dense.py:call"


def _build(root: Path) -> tuple[Path, list[str], int]:
    work = copy_keras(root / "keras-repo")
    repo = new_repo(work)
    shas = [commit_all(repo, "Initial (#1)")]
    plant_layer_check(work)
    shas.append(commit_all(repo, "Add a check (#2)"))
    dense_py = work / "keras" / "src" / "layers" / "core" / "dense.py"
    patch(
        dense_py,
        "    def call(self, inputs, training=None):\n",
        "        import torch._dynamo\n\n        torch._dynamo.graph_break()\n",
    )
    line = dense_py.read_text().splitlines().index("        torch._dynamo.graph_break()") + 1
    shas.append(commit_all(repo, "Break the graph (#3)"))
    mirror = root / "mirror.git"
    git.Repo.clone_from(str(work), str(mirror), multi_options=["--mirror"])
    return mirror, shas, line


def kerasperf(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_kerasperf", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )


def _sweep(root: Path) -> dict[str, Any]:
    mirror, shas, line = _build(root)
    cache, out = root / "cache", root / "sweep.json"
    common: list[str] = ["--repo", str(mirror), "--backend", "torch", "--cache", str(cache)]
    ran = kerasperf(
        "sweep", f"{shas[0]}..{shas[-1]}", "--tests", TEST, *common, "--json", out, cwd=root
    )
    return {
        "returncode": ran.returncode,
        "stderr": ran.stderr[-3000:],
        "stdout": ran.stdout,
        "shas": shas,
        "line": line,
        "common": common,
        "root": str(root),
        "out": str(out),
    }


@pytest.fixture(scope="module")
def torch_sweep(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The history and its sweep, once per run (under xdist, by the first worker to need it)."""
    require_backend("torch")
    root = shared_dir(tmp_path_factory, "kerasperf-torch-history")
    root.mkdir(parents=True, exist_ok=True)
    done = root / "sweep-run.json"
    with filelock.FileLock(f"{root}.lock"):
        if not done.exists():
            done.write_text(json.dumps(_sweep(root)))
    ran: dict[str, Any] = json.loads(done.read_text())
    assert ran["returncode"] == 0, ran["stderr"]
    ran["root"] = Path(ran["root"])
    ran["document"] = json.loads(Path(ran["out"]).read_text())
    return ran


def _row(document: dict[str, Any], index: int, key: str) -> dict[str, Any]:
    rows: list[dict[str, Any]] = [
        r for r in document["rows"] if r["index"] == index and r["test"] == key
    ]
    (row,) = rows
    return row


def _change(row: dict[str, Any], metric: str) -> dict[str, Any]:
    """A row's change of one metric (its ``changes`` are tagged by metric), with its delta."""
    [change] = [c for c in row["changes"] if c["metric"] == metric]
    return {**change, "delta": change["after"] - change["before"]}


def test_sweep_attributes_the_call_and_the_graph_break_to_their_commits(
    torch_sweep: dict[str, Any],
) -> None:
    document, shas = torch_sweep["document"], torch_sweep["shas"]
    assert [(c["pr"], c["title"]) for c in document["commits"]] == [
        (1, "Initial"),
        (2, "Add a check"),
        (3, "Break the graph"),
    ]
    # #2: eager calls grow at Layer.__call__ → the planted check; the compiled graph is intact.
    eager = _row(document, 1, EAGER)
    assert eager["status"] == "changed"
    assert _change(eager, "calls")["delta"] > 0
    (point, *_) = _change(eager, "calls")["entry_points"]
    assert point["caller"] == "keras/src/layers/layer.py:Layer.__call__"
    assert point["callee"] == "keras/src/layers/layer.py:_kerasperf_planted_check"
    compiled = _row(document, 1, COMPILED)
    assert _change(compiled, "graph_breaks")["delta"] == 0
    # #3: the compiled forward breaks in Dense.call, at the planted line, with dynamo's reason.
    compiled = _row(document, 2, COMPILED)
    assert compiled["status"] == "changed"
    assert _change(compiled, "graph_breaks")["delta"] >= 1
    (change, *_) = _change(compiled, "graph_breaks")["changes"]
    assert (change["frame"], change["line"], change["before"]) == (FRAME, torch_sweep["line"], 0)
    assert "graph_break" in change["reason"]
    assert _row(document, 0, COMPILED)["values"]["graph_breaks"] == 0
    assert f"graph break dense.py:call 0→{change['after']}×" in torch_sweep["stdout"].replace(
        "layers/core/", ""
    )
    assert [c["sha"] for c in document["commits"]] == shas


@pytest.mark.parametrize(
    ("metric", "first"), [("graph_breaks", 2), ("calls", 1)], ids=["graph_breaks", "calls"]
)
def test_bisect_names_the_planting_commit_from_the_cache(
    torch_sweep: dict[str, Any], metric: str, first: int
) -> None:
    """The same selection as the sweep's (the cache is per selection), so no new process."""
    shas, root = torch_sweep["shas"], torch_sweep["root"]
    out = root / f"bisect-{metric}.json"
    ran = kerasperf(
        "bisect", shas[0], shas[-1], "--test", TEST, "--metric", metric,
        *torch_sweep["common"], "--json", out, cwd=root,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    document = json.loads(out.read_text())
    assert document["first_bad"]["sha"] == shas[first]
    assert document["exact"] is True
    assert document["measured"] == 0  # every probe came from the sweep's cache
