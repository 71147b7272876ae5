"""--kerasperf-changed's judgement: which changes map to functions, which run every test, and
the index file read as untrusted input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_kerasperf import reach_index, selection
from pytest_kerasperf.selection import Diff, FileChange

BEFORE = '''"""A module."""
import functools

LIMIT = 3


def helper(x):
    return x + 1


class Dense:
    units = 2

    @functools.cache
    def cached(self):
        return 1

    def call(self, x):
        return helper(x)
'''


def _diff(after: str, path: str = "keras/src/layers/dense.py") -> Diff:
    """The diff of one library file from BEFORE to ``after`` (git's -U0 hunks, by difflib)."""
    import difflib

    old, new = BEFORE.splitlines(), after.splitlines()
    hunks = [f"--- a/{path}", f"+++ b/{path}"]
    matcher = difflib.SequenceMatcher(a=old, b=new)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        start = j1 + 1 if j2 > j1 else j1
        hunks.append(f"@@ -{i1 + 1},{i2 - i1} +{start},{j2 - j1} @@")
    return Diff((FileChange("M", path),), "\n".join(hunks), {path: BEFORE}, {path: after})


def test_imports_comments_and_the_docstring_are_harmless() -> None:
    after = BEFORE.replace("import functools", "import functools\nimport math  # for later")
    after = after.replace('"""A module."""', '"""A module, described."""\n# a note')
    found = selection.changes(_diff(after))
    assert found.everything == []
    assert found.functions == set()
    assert found.files == set()


def test_a_method_added_or_removed_selects_what_runs_code_of_its_file() -> None:
    """dir() of the class's instances changes (saving walks it: a method added to Dense moved
    every save+load_model by 32 calls, docs/history.md)."""
    added = BEFORE + "\n    @property\n    def extra(self):\n        return 0\n"
    renamed = BEFORE.replace("    def cached(self):", "    def cache(self):")
    for after in (added, renamed):
        found = selection.changes(_diff(after))
        assert found.everything == []
        assert found.files == {"keras/src/layers/dense.py"}
    index = _index(
        **{
            "m.py::t_dense": ["keras/src/layers/dense.py:Dense.call"],
            "m.py::t_add": ["keras/src/ops/a.py:add"],
        }
    )
    chosen = selection.select(["m.py::t_dense", "m.py::t_add"], index, found)
    assert chosen.run == {"m.py::t_dense"}


def test_a_signature_changed_selects_what_runs_code_of_its_file() -> None:
    """``inspect`` reads a signature without running the function (a layer's ``__init__`` reads
    its ``call``'s): #23364 dropped ``**kwargs`` from ``Functional.call`` and every Functional
    built made 13 calls fewer, in tests that never ran ``Functional.call``."""
    for after in (
        BEFORE.replace("def call(self, x):", "def call(self, x, **kwargs):"),
        BEFORE.replace("def call(self, x):", "def call(\n        self,\n        x=None,\n    ):"),
    ):
        found = selection.changes(_diff(after))
        assert found.everything == []
        assert found.functions == {"keras/src/layers/dense.py:Dense.call"}
        assert found.files == {"keras/src/layers/dense.py"}
    # the body alone: the function only
    found = selection.changes(_diff(BEFORE.replace("return helper(x)", "return helper(x) + 0")))
    assert found.files == set()


def test_a_new_class_or_function_is_in_no_entry_yet() -> None:
    """A new op's class: no test ran it before, and whatever calls it changed too."""
    after = BEFORE + (
        "\n\n@functools.cache\nclass Extra(Dense):\n    size = 1\n\n"
        "    @property\n    def call(self):\n        return 2\n"
    )
    found = selection.changes(_diff(after))
    assert found.everything == []
    assert found.files == set()  # Dense's own methods did not change
    assert found.functions == {"keras/src/layers/dense.py:Extra.call"}


def test_the_public_api_modules_are_imports() -> None:
    path = "keras/api/ops/__init__.py"
    source = "from keras.src.ops.numpy import add as add\n"
    grown = source + "from keras.src.ops.numpy import abs as abs\n"
    diff = Diff(
        (FileChange("M", path),),
        f"--- a/{path}\n+++ b/{path}\n@@ -1,0 +2,1 @@\n",
        {path: source},
        {path: grown},
    )
    assert selection.changes(diff).everything == []
    code = Diff(diff.files, diff.diff, {path: source}, {path: source + "CONSTANT = 1\n"})
    assert "module-level" in selection.changes(code).everything[0]


def test_a_changed_body_maps_to_its_function() -> None:
    found = selection.changes(_diff(BEFORE.replace("return x + 1", "return x + 2")))
    assert found.everything == []
    assert found.functions == {"keras/src/layers/dense.py:helper"}
    found = selection.changes(_diff(BEFORE.replace("return helper(x)", "return helper(x) * 1")))
    assert found.functions == {"keras/src/layers/dense.py:Dense.call"}


@pytest.mark.parametrize(
    ("after", "why"),
    [
        (BEFORE.replace("LIMIT = 3", "LIMIT = 4"), "module-level code or a class body"),
        (BEFORE.replace("units = 2", "units = 3"), "module-level code or a class body"),
        (BEFORE.replace("@functools.cache", "@functools.lru_cache"), "is a decorator of"),
        (BEFORE.replace("import functools", "import functools\nLIMIT = 5"), "module-level"),
        (BEFORE.replace("LIMIT = 3\n", ""), "module-level code or a class body"),
        (BEFORE.replace("def helper(x):", "def helper(x)"), "does not parse"),
    ],
)
def test_what_is_not_a_function_runs_every_test(after: str, why: str) -> None:
    found = selection.changes(_diff(after))
    assert found.everything, found.functions
    assert why in found.everything[0], found.everything


@pytest.mark.parametrize(
    ("status", "path", "runs_all"),
    [
        ("M", "README.md", False),
        ("M", "keras/src/layers/dense_test.py", False),
        ("M", "integration_tests/basic.py", False),
        ("M", "keras/src/models/model_perf_test.py", True),
        ("A", "keras/src/layers/new.py", True),
        ("D", "keras/src/layers/old.py", True),
        ("M", "keras/api/layers/__init__.py", True),
        ("M", "keras/src/layers/data.json", True),
        ("M", "requirements.txt", True),
        ("M", ".github/dependabot.yml", False),
        ("M", ".github/workflows/config/torch/keras.json", True),
        ("M", "benchmarks/kerasperf/baselines/numpy/py3.11-cpu/x.json", True),
        ("M", "pytest_kerasperf/selection.py", True),
    ],
)
def test_files_that_are_not_library_functions(status: str, path: str, runs_all: bool) -> None:
    found = selection.changes(Diff((FileChange(status, path),), "", {}, {}))
    assert bool(found.everything) == runs_all, found.everything
    assert not found.functions


def test_an_untracked_file_under_keras_runs_every_test() -> None:
    found = selection.changes(Diff((), "", {}, {}, untracked=("keras/src/new.py", "scratch.py")))
    assert found.everything == ["keras/src/new.py is new and not committed (git add it)"]


def _index(**tests: list[str]) -> reach_index.IndexFile:
    text = reach_index.encode(
        backend="numpy",
        commit="a" * 40,
        dirty=False,
        plugin="0.4.0",
        fingerprint={"python": "3.11"},
        process={"keras/src/backend/config.py:floatx"},
        tests={key: set(names) for key, names in tests.items()},
        incomplete={"m.py::t_incomplete"},
    )
    return reach_index.IndexFile(**json.loads(text))


def test_only_the_tests_that_execute_a_changed_function_run() -> None:
    index = _index(
        **{
            "m.py::t_dense": ["keras/src/layers/dense.py:Dense.call", "keras/src/ops/a.py:add"],
            "m.py::t_add": ["keras/src/ops/a.py:add"],
            "m.py::t_incomplete": [],
        }
    )
    keys = ["m.py::t_dense", "m.py::t_add", "m.py::t_incomplete", "m.py::t_new"]
    changed = selection.Changes(functions={"keras/src/layers/dense.py:Dense.call"})
    chosen = selection.select(keys, index, changed)
    assert chosen.run == {"m.py::t_dense", "m.py::t_incomplete", "m.py::t_new"}
    assert chosen.not_affected == ("m.py::t_add",)
    assert chosen.everything == ()
    nothing = selection.select(keys, index, selection.Changes())
    assert nothing.run == {"m.py::t_incomplete", "m.py::t_new"}


def test_a_function_of_the_process_set_runs_every_test() -> None:
    index = _index(**{"m.py::t_add": ["keras/src/ops/a.py:add"]})
    changed = selection.Changes(functions={"keras/src/backend/config.py:floatx"})
    chosen = selection.select(["m.py::t_add"], index, changed)
    assert chosen.run == {"m.py::t_add"}
    assert "runs at import or in the session's set-up" in chosen.everything[0]


def test_an_index_of_another_run_is_not_used() -> None:
    index = _index()
    fine = {"backend": "numpy", "fingerprint": {"python": "3.11"}, "plugin": "0.4.0"}
    assert selection.usable(index, **fine) == []  # type: ignore[arg-type]
    assert (
        "of numpy, this run of jax"
        in selection.usable(index, backend="jax", fingerprint={"python": "3.11"}, plugin="0.4.0")[0]
    )
    assert (
        "another environment (python)"
        in selection.usable(index, backend="numpy", fingerprint={"python": "3.12"}, plugin="0.4.0")[
            0
        ]
    )
    assert (
        "pytest-kerasperf 0.4.0, this is 0.5.0"
        in selection.usable(index, backend="numpy", fingerprint={"python": "3.11"}, plugin="0.5.0")[
            0
        ]
    )


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(format="other"), "not a kerasperf index"),
        (lambda d: d.update(version=99), "index version 99"),
        (lambda d: d.update(process=[10_000]), "a function past the table"),
        (lambda d: d.update(commit="not-a-sha"), "at commit"),
        (lambda d: d["tests"].update({"t": [-1]}), "Expected `int` >= 0"),
        (lambda d: d.update(extra=1), "unknown field"),
    ],
)
def test_a_bad_index_is_one_line(tmp_path: Path, mutate: object, message: str) -> None:
    data = json.loads(
        reach_index.encode(
            backend="numpy",
            commit="b" * 40,
            dirty=False,
            plugin="0.4.0",
            fingerprint={},
            process={"keras/src/a.py:f"},
            tests={"t": {"keras/src/a.py:f"}},
            incomplete=set(),
        )
    )
    mutate(data)  # type: ignore[operator]
    path = tmp_path / "index.json"
    path.write_text(json.dumps(data))
    with pytest.raises(reach_index.UnusableIndex) as caught:
        reach_index.load(path)
    text = str(caught.value)
    assert message in text, text
    assert "\n" not in text


def test_an_index_that_is_not_json_or_too_large_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "index.json"
    path.write_text("{not json")
    with pytest.raises(reach_index.UnusableIndex) as caught:
        reach_index.load(path)
    assert str(caught.value).count(str(path)) == 1, caught.value  # the path, named once
    with pytest.raises(reach_index.UnusableIndex, match=r"no such file|No such file|not found"):
        reach_index.load(tmp_path / "missing.json")


def test_a_run_that_ran_no_test_is_reported_present_with_why(tmp_path: Path) -> None:
    """A pull request whose change moves no perf test: its results file holds no result, and
    ``kerasperf report --expect`` still counts the run, with the selection's line."""
    from pytest_kerasperf.accounting import ChangedAccount, RunAccount
    from pytest_kerasperf.report import combined
    from pytest_kerasperf.results_file import encode

    changed = ChangedAccount("jax-nnx", "c" * 40, 0, 1_433, 0)
    summary = RunAccount(0, 0, {}, {}, 0, (), changed=changed)
    assert summary.strict_problems() == []  # measuring nothing was the selection's choice
    path = tmp_path / "kerasperf-results-jax-nnx.json"
    path.write_text(encode([], summary))
    report = combined.report([path], expect=["jax-nnx"])
    assert report.missing == []
    line = "jax-nnx: 0 perf tests ran, 1,433 not affected by the change since cccccccccc"
    assert any(line in text for text in report.lines), report.lines
    assert f"Selected by the change: {line}" in report.markdown
    nothing = RunAccount(0, 0, {}, {}, 0, ())
    assert nothing.strict_problems() == ["no perf test was measured"]
