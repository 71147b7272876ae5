"""A regression planted in a copy of Keras fails the gate and names its culprit.

The installed Keras is copied into a temporary directory and put first on
PYTHONPATH; the standard suite then runs against the committed baselines.
The unpatched copy passes, so what fails is the planted change alone.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import git
import msgspec
import pytest

from pytest_kerasperf.baseline import Baselines
from pytest_kerasperf.record import Record
from tests import readresult
from tests.inner import VARIANT
from tests.realrun import BASELINES, require_backend


def copy_keras(dest: Path) -> Path:
    spec = importlib.util.find_spec("keras")
    assert spec is not None, "keras is not installed"
    assert spec.submodule_search_locations, "keras is not a package"
    source = Path(next(iter(spec.submodule_search_locations)))
    shutil.copytree(source, dest / "keras", ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def patch(path: Path, anchor: str, insert_after: str) -> None:
    text = path.read_text()
    assert text.count(anchor) == 1, f"{path}: anchor not found once: {anchor!r}"
    path.write_text(text.replace(anchor, anchor + insert_after))


def plant_layer_check(keras_root: Path) -> None:
    """One extra call per ``Layer.__call__``: ``_kerasperf_planted_check(self)``."""
    layer_py = keras_root / "keras" / "src" / "layers" / "layer.py"
    patch(
        layer_py,
        "    def __call__(self, *args, **kwargs):\n        self._check_super_called()\n",
        "        _kerasperf_planted_check(self)\n",
    )
    layer_py.write_text(
        layer_py.read_text() + "\n\ndef _kerasperf_planted_check(layer):\n    return layer\n"
    )


LAYER_CALL = "keras/src/layers/layer.py:Layer.__call__"
PLANTED = "keras/src/layers/layer.py:_kerasperf_planted_check"


def planted_culprit(base: Record) -> tuple[int, str]:
    """(calls added, the entry point named) when ``plant_layer_check`` runs against ``base``.

    Every ``Layer.__call__`` makes one more call itself; against a compact baseline entry
    that function, called as often as before, is where the new calls enter.
    """
    n, made = base.profile().functions[LAYER_CALL]
    return n, f"{LAYER_CALL} +{n:,} (calls it makes {made:,}→{made + n:,})"


def planted_failure_line(base: Record) -> str:
    """The exact failure line of the planted layer check against ``base``."""
    n, culprit = planted_culprit(base)
    return (
        f"kerasperf calls: {base.calls + n:,} per call, baseline {base.calls:,} (+{n:,}); "
        f"made by (sums to +{n:,}): {culprit}; grew: {PLANTED} (+{n:,})"
    )


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file's bytes under ``root``, by its relative path."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def new_repo(work: Path) -> git.Repo:
    """``git init`` in ``work``, with an author for the commits of a test's history."""
    repo = git.Repo.init(work)
    # As keras-team/keras's own .gitignore: the bytecode test processes write stays out.
    ignore = work / ".gitignore"
    if not ignore.exists():
        ignore.write_text("__pycache__/\n*.pyc\n")
    with repo.config_writer() as config:
        config.set_value("user", "name", "kerasperf test")
        config.set_value("user", "email", "kerasperf@example.com")
    return repo


def commit_all(repo: git.Repo, message: str) -> str:
    repo.git.add("-A")
    repo.git.commit("-q", "-m", message)
    return str(repo.head.commit.hexsha)


def gate(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    backend: str,
    keras_root: Path | None,
    select: str,
) -> tuple[pytest.RunResult, list[dict[str, object]]]:
    """The bundled suite's ``select`` gated against the committed baselines, strictly, on the
    Keras copy at ``keras_root`` (None: the installed Keras)."""
    monkeypatch.setenv("KERAS_BACKEND", backend)
    monkeypatch.setenv("KERAS_HOME", str(pytester.path / "keras-home"))
    if keras_root is not None:
        monkeypatch.setenv("PYTHONPATH", str(keras_root))
    out = pytester.path / f"results-{keras_root.name if keras_root else 'installed'}.json"
    result = pytester.runpytest_subprocess(
        "--kerasperf",
        "--kerasperf-strict",
        f"--kerasperf-baseline-dir={BASELINES}",
        f"--kerasperf-json={out}",
        "--kerasperf-rounds=0",
        "-p",
        "no:cacheprovider",
        "-k",
        select,
        "--pyargs",
        "pytest_kerasperf.suite",
        timeout=900,
    )
    results = json.loads(out.read_text())["results"] if out.exists() else []
    return result, results


def test_extra_call_in_layer_call_fails_and_names_the_function(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    require_backend("numpy")
    before = snapshot(BASELINES / "numpy")
    base = Baselines(BASELINES, "numpy", VARIANT).load()[
        "test_standard.py::test_cnn_forward[eager]"
    ]
    clean = copy_keras(tmp_path / "clean")
    planted = copy_keras(tmp_path / "planted")
    plant_layer_check(planted)

    result, results = gate(pytester, monkeypatch, "numpy", clean, "cnn_forward")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    assert [r["verdict"]["status"] for r in results] == ["pass"]  # type: ignore[index]

    result, results = gate(pytester, monkeypatch, "numpy", planted, "cnn_forward")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # The failure line names who made the new calls (the Keras function that now calls the
    # helper), summing exactly to the change, before what grew.
    n, _ = planted_culprit(base)
    line = planted_failure_line(base)
    assert sum(text == line for text in result.stdout.lines) == 1, result.stdout.str()[-3000:]
    # The report section: the explanation first, then the per-function diff.
    made = base.profile().functions[LAYER_CALL][1]
    result.stdout.fnmatch_lines(
        [
            "where calls changed (per workload call; the groups sum exactly to the change):",
            f"  +{n:,} calls = the sum of these (the calls each Keras function makes itself, *",
            f"    +{n:,}  {LAYER_CALL} (calls it makes {made:,}→{made + n:,})",  # one group
            "calls by function vs baseline (changed only, biggest change first):",
            f"  +{n:,}  {PLANTED}  (0 -> {n:,})",
            "re-record this test's baseline entry: PYTHONHASHSEED=0 KERAS_BACKEND=numpy pytest "
            "--kerasperf-baseline-dir=* --kerasperf-update-baseline *test_cnn_forward[[]eager[]]*",
        ]
    )
    (only,) = results
    assert only["verdict"]["status"] == "regressed"  # type: ignore[index]
    [first] = readresult.calls_change(only)["entry_points"]
    assert (first["caller"], first["callee"], first["calls"]) == (LAYER_CALL, "*", n)
    assert (first["before"], first["after"], first["calls_delta"]) == (made, made + n, n)
    assert snapshot(BASELINES / "numpy") == before


def test_graph_break_in_a_layer_call_fails_and_names_the_break(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    require_backend("torch")
    clean = copy_keras(tmp_path / "clean")
    planted = copy_keras(tmp_path / "planted")
    dense_py = planted / "keras" / "src" / "layers" / "core" / "dense.py"
    patch(
        dense_py,
        "    def call(self, inputs, training=None):\n",
        "        import torch._dynamo\n\n        torch._dynamo.graph_break()\n",
    )
    lineno = dense_py.read_text().splitlines().index("        torch._dynamo.graph_break()") + 1
    select = "cnn_forward and compiled"

    result, results = gate(pytester, monkeypatch, "torch", clean, select)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    assert [readresult.graph_breaks(r) for r in results] == [0]

    result, results = gate(pytester, monkeypatch, "torch", planted, select)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    frame = "keras/src/layers/core/dense.py:call"
    result.stdout.fnmatch_lines(
        [
            f"*kerasperf graph breaks: *, baseline 0 (+*); grew: {frame} (line {lineno}): "
            "0→*× Call to `torch._dynamo.graph_break()`*"
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*graph breaks that changed (baseline→measured per reason):",
            f"*{frame} (line {lineno}): 0→*× *graph_break*",
            "*graph breaks measured: * (* graphs); where dynamo broke, by reason (times per "
            "forward):",
        ]
    )
    (only,) = results
    assert (readresult.graph_breaks(only) or 0) >= 1  # one planted break; dynamo may add more
    moved = readresult.change(only, "graph_breaks")
    assert moved is not None
    [change, *_] = moved["changes"]
    assert (change["frame"], change["line"], change["before"]) == (frame, lineno, 0)


MODEL_TEST = """
import keras

from pytest_kerasperf import workloads

EXTRA_LAYER = {extra}


def build():
    keras.utils.set_random_seed(1)
    inputs = keras.Input((32, 32, 3))
    x = keras.layers.Conv2D(8, 3, padding="same", activation="relu")(inputs)
    x = keras.layers.GlobalAveragePooling2D()(x)
    if EXTRA_LAYER:
        x = keras.layers.Dense(16, activation="relu")(x)
    return keras.Model(inputs, keras.layers.Dense(10)(x))


def test_forward(kerasperf, kerasperf_cnn_input):
    kerasperf(workloads.eager_forward(build()), kerasperf_cnn_input)
"""


def test_a_model_that_gains_a_layer_fails_naming_where_its_calls_enter(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_backend("numpy")
    monkeypatch.setenv("KERAS_BACKEND", "numpy")
    monkeypatch.setenv("KERAS_HOME", str(pytester.path / "keras-home"))
    common = ("-p", "no:cacheprovider", "--kerasperf-rounds=0", "--kerasperf-json=out.json")
    pytester.makepyfile(test_model=MODEL_TEST.format(extra=False))
    assert pytester.runpytest_subprocess("--kerasperf-update-baseline", *common).ret == 0
    pytester.makepyfile(test_model=MODEL_TEST.format(extra=True))
    result = pytester.runpytest_subprocess("--kerasperf", *common)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    [result_json] = json.loads((pytester.path / "out.json").read_text())["results"]
    [base] = Baselines(pytester.path / "baselines", "numpy", VARIANT).load().values()
    before = base.profile().functions
    after = msgspec.convert(result_json["record"], Record).compact().profile().functions
    # The function that now runs one more layer is called once, as before, and makes more
    # calls itself: among them one more call of each layer (3 -> 4).
    runner = "keras/src/ops/function.py:Function._run_through_graph"
    layer_call = "keras/src/models/functional.py:operation_fn.<locals>.call"
    assert (before[layer_call][0], after[layer_call][0]) == (3, 4)
    (calls, made_before), (_, made_after) = before[runner], after[runner]
    assert calls == 1
    assert made_after > made_before
    # The explanation adds up: each Keras function's change of the calls it makes itself, and
    # one group for the calls made outside Keras, sum exactly to the change; the runner's
    # group is its own change, exactly.
    moved = readresult.calls_change(result_json)
    delta = readresult.calls_delta(result_json)
    explanation = moved["explanation"]
    groups = {group["caller"]: readresult.group_delta(group) for group in explanation["groups"]}
    assert explanation["total"] == delta == sum(groups.values()) > 0
    assert groups[runner] == made_after - made_before
    for name, own in groups.items():
        if name != "(code outside Keras)":
            assert own == after.get(name, (0, 0))[1] - before.get(name, (0, 0))[1], name
    line = next(text for text in result.stdout.lines if text.startswith("kerasperf calls: "))
    assert f"; made by (sums to +{delta:,}): " in line, line
    assert line.index("made by") < line.index("grew: ")
    points = moved["entry_points"]
    first = points[0]
    assert (first["caller"], first["callee"], first["before"], first["after"]) == (
        runner,
        "*",
        made_before,
        made_after,
    )
    # Every entry point is exact: a function called as often as before, and the change of
    # the calls it makes itself, as the two profiles' summaries hold them.
    assert points == sorted(points, key=lambda p: (-abs(p["calls_delta"]), p["caller"]))
    for point in points:
        assert before[point["caller"]][0] == after[point["caller"]][0] == point["calls"]
        assert (point["before"], point["after"]) == (
            before[point["caller"]][1],
            after[point["caller"]][1],
        )
        assert point["calls_delta"] == point["after"] - point["before"]
