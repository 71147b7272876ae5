"""Perf coverage of a diff as text and Markdown (``history/coverage.py``): the diff's lines
mapped to functions, and a fork's names shown as text, never as markup."""

from __future__ import annotations

from pytest_kerasperf import diff_coverage as coverage

SOURCE = """\
import os

def top():
    return 1

class Layer:
    @property
    def name(self):
        return "x"

    def call(self, x):
        def inner(t):
            return t
        return inner(x)
"""


def test_changed_lines_map_to_the_innermost_function_and_module_code() -> None:
    diff = (
        "diff --git a/keras/src/a.py b/keras/src/a.py\n"
        "+++ b/keras/src/a.py\n"
        "@@ -1 +1 @@\n"  # import os: module level
        "@@ -4 +4 @@\n"  # top
        "@@ -7,0 +7,1 @@\n"  # the decorator of Layer.name
        "@@ -13 +13 @@\n"  # inner
        "+++ b/keras/src/a_test.py\n"
        "@@ -1 +1 @@\n"
    )
    lines = coverage.changed_lines(diff)
    assert lines == {"keras/src/a.py": {1, 4, 7, 13}, "keras/src/a_test.py": {1}}
    functions, module_level, unparsable = coverage.changed_functions(
        lines, {"keras/src/a.py": SOURCE, "keras/src/a_test.py": SOURCE}
    )
    assert functions == {
        "keras/src/a.py:top",
        "keras/src/a.py:Layer.name",
        "keras/src/a.py:Layer.call.<locals>.inner",
    }
    assert module_level == {"keras/src/a.py"}
    assert unparsable == set()


def test_a_file_that_does_not_parse_is_listed_not_raised() -> None:
    lines = {"keras/src/b.py": {1}, "keras/src/c.py": {1}}
    sources = {"keras/src/b.py": "def (:\n", "keras/src/c.py": "x = 1\0\n"}
    _, _, unparsable = coverage.changed_functions(lines, sources)
    assert unparsable == {"keras/src/b.py", "keras/src/c.py"}


def test_markdown_shows_a_forks_names_as_text() -> None:
    hostile = "keras/src/x.py:f](https://evil.example) @keras-team <img src=x>`"
    found = coverage.measure(
        {"keras/src/x.py": {2}},
        {"keras/src/x.py": "def f():\n    pass\n"},
        {"keras/src/x.py:f": {"test_x.py::t[@maintainer [a](https://evil.example)] (numpy)"}},
    )
    found.unwatched.append(hostile)
    text = coverage.render(found, "a..b", markdown=True)
    assert "](https://evil.example)" not in text
    assert "<img" not in text
    assert "@keras-team" not in text
    assert "@maintainer" not in text
    assert "1 watched, 1 not watched by any perf test" in text
    plain = coverage.render(found, "a..b")
    assert hostile in plain  # a terminal shows the name as it is


def test_function_spans_find_defs_inside_compound_statements() -> None:
    """A def can sit in any statement's body (if, try, with, for, match): each is found."""
    source = (
        "if X:\n"
        "    def a():\n"
        "        pass\n"
        "try:\n"
        "    pass\n"
        "except ImportError:\n"
        "    def b():\n"
        "        f = lambda: 1\n"
        "        return f\n"
        "else:\n"
        "    pass\n"
        "finally:\n"
        "    class C:\n"
        "        with open('x') as f:\n"
        "            def m(self):\n"
        "                for i in ():\n"
        "                    def inner():\n"
        "                        pass\n"
        "match X:\n"
        "    case 1:\n"
        "        def d():\n"
        "            pass\n"
    )
    names = [span.qualname for span in coverage.function_spans(source)]
    assert names == ["a", "b", "C.m", "C.m.<locals>.inner", "d"]
