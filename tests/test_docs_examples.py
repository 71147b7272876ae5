"""The docs' example messages are held to what the plugin prints.

Each kind of message the docs show as an example (a failure line, a note) has one pattern
here. The real line of a real run on numpy must match it, and so must every example of that
kind in the docs. If the message changes, this test fails for the run until the pattern
changes, and then for each doc until its example does.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.inner import Inner

DOCS = Path(__file__).resolve().parent.parent / "docs"

NUMBER = r"[\d,]+"
PATTERNS = {
    "no baseline": re.compile(
        r"note: no baseline for py\d+\.\d+-cpu: record one with `--kerasperf-update-baseline`"
    ),
    "improved": re.compile(
        rf"note: −{NUMBER} calls \(made by \(sums to −{NUMBER}\): \S+ −{NUMBER} "
        rf"\(calls it makes {NUMBER}→{NUMBER}\).*\): "
        r"record the win \(`--kerasperf-update-baseline`\)"
    ),
    "regressed": re.compile(
        rf"kerasperf calls: {NUMBER} per call, baseline {NUMBER} \(\+{NUMBER}\); "
        rf"made by \(sums to \+{NUMBER}\): \S+ \+{NUMBER} \(calls it makes {NUMBER}→{NUMBER}\)"
        rf"(, [^;]+)?; grew: \S+ \(\+{NUMBER}\)(, \S+ \(\+{NUMBER}\))*"
    ),
}
#: Where the docs show each kind: lines of these files that start with the prefix.
EXAMPLES = {
    "no baseline": ("note: no baseline for", ["quickstart.md", "reading-a-failure.md"]),
    "improved": ("note: −", ["quickstart.md", "reading-a-failure.md"]),
    "regressed": ("kerasperf calls: ", ["reading-a-failure.md", "reference.md"]),
}

MODEL = """
import numpy as np
import keras


def test_model(kerasperf):
    model = keras.Sequential([{layers}])
    x = np.ones((2, 3), "float32")
    model(x)
    kerasperf(model, x)
"""


def model_source(dense: int) -> str:
    return MODEL.format(layers=", ".join(["keras.layers.Dense(2)"] * dense))


def lines_of(result: pytest.RunResult) -> list[str]:
    return [line.strip() for line in result.stdout.lines]


def real_lines(inner: Inner) -> dict[str, list[str]]:
    inner.write(model_source(2))
    fresh = inner.run("--kerasperf", "--kerasperf-rounds", "0", "-rA")
    assert fresh.ret == pytest.ExitCode.OK, fresh.stdout.str()[-2000:]
    recorded = inner.run("--kerasperf-update-baseline", "--kerasperf-rounds", "0")
    assert recorded.ret == pytest.ExitCode.OK, recorded.stdout.str()[-2000:]
    inner.write(model_source(3))
    grown = inner.run("--kerasperf", "--kerasperf-rounds", "0")
    assert grown.ret == pytest.ExitCode.TESTS_FAILED, grown.stdout.str()[-2000:]
    inner.write(model_source(1))
    fewer = inner.run("--kerasperf", "--kerasperf-rounds", "0", "-rA")
    assert fewer.ret == pytest.ExitCode.OK, fewer.stdout.str()[-2000:]
    return {
        "no baseline": lines_of(fresh),
        "regressed": lines_of(grown),
        "improved": lines_of(fewer),
    }


def doc_examples(kind: str) -> list[tuple[str, str]]:
    prefix, files = EXAMPLES[kind]
    found = [
        (name, line.strip())
        for name in files
        for line in (DOCS / name).read_text(encoding="utf-8").splitlines()
        if line.strip().startswith(prefix)
    ]
    assert {name for name, _ in found} == set(files), f"{kind}: no example in some of {files}"
    return found


def test_the_docs_examples_are_what_a_real_run_prints(inner: Inner) -> None:
    real = real_lines(inner)
    for kind, pattern in PATTERNS.items():
        matching = [line for line in real[kind] if pattern.fullmatch(line)]
        assert matching, f"{kind}: no line of the real run matches; it printed:\n" + "\n".join(
            line for line in real[kind] if line.startswith(EXAMPLES[kind][0].split(" ")[0])
        )
        for name, line in doc_examples(kind):
            assert pattern.fullmatch(line), (
                f"docs/{name}: the {kind} example is not the output: {line}"
            )


def test_a_user_project_is_never_told_to_run_this_repositorys_make_targets() -> None:
    for name in ("quickstart.md", "reading-a-failure.md"):
        for line in (DOCS / name).read_text(encoding="utf-8").splitlines():
            if line.startswith("make "):
                pytest.fail(f"docs/{name}: {line}")
