"""Graph-break records: one entry per (reason, Keras function), counted."""

from __future__ import annotations

import pytest

from pytest_kerasperf.measure.graph import _one_line_reason, combine
from pytest_kerasperf.record import BreakReason, GraphRecord
from tests.realrun import require_backend

SKIPPED = "Attempted to call function marked as skipped"


def test_reasons_of_several_forwards_are_summed_per_reason_and_function() -> None:
    lm = GraphRecord(12, 11, (BreakReason(SKIPPED, "keras/src/backend/torch/nn.py:f", 3, 1406),))
    other = GraphRecord(
        3,
        2,
        (
            BreakReason(SKIPPED, "keras/src/backend/torch/nn.py:f", 1, 1410),
            BreakReason("print", "keras/src/x.py:g", 1, 7),
        ),
    )
    combined = combine([lm, other])
    assert combined is not None
    assert (combined.graphs, combined.breaks) == (15, 13)
    assert [(r.frame, r.reason, r.count, r.line) for r in combined.reasons] == [
        ("keras/src/backend/torch/nn.py:f", SKIPPED, 4, 1406),
        ("keras/src/x.py:g", "print", 1, 7),
    ]
    assert combine([]) is None


def test_a_forward_that_made_no_graph_adds_no_break() -> None:
    """explain's -1 for no graph: two such forwards are still -1 (the record's bounds refuse
    -2), and beside a forward that made graphs they add nothing to its breaks."""
    nothing = GraphRecord(0, -1, ())
    two = GraphRecord(3, 2, (BreakReason("print", "keras/src/x.py:g", 2, 7),))
    both_empty = combine([nothing, nothing])
    assert both_empty is not None
    assert (both_empty.graphs, both_empty.breaks) == (0, -1)
    mixed = combine([nothing, two])
    assert mixed is not None
    assert (mixed.graphs, mixed.breaks) == (3, 2)
    assert sum(reason.count for reason in mixed.reasons) == mixed.breaks


def test_a_reason_is_one_line_with_its_explanations_first_sentence_and_no_address() -> None:
    text = (
        f"{SKIPPED}\n  Explanation: Dynamo does not know how to trace <obj at 0x7f00aa>. "
        "This function is either a Python builtin or an extension.\n  Hint: ...\n"
    )
    assert _one_line_reason(text) == f"{SKIPPED}: Dynamo does not know how to trace <obj>"
    assert _one_line_reason(f"{SKIPPED}\n  Hint: x\n") == SKIPPED
    assert _one_line_reason("  \n") == "<no reason given>"


#: A model that breaks the graph where its layer calls ``graph_break()``; the test checks
#: that measuring its breaks leaves torch's logging as it found it.
LOGGING_KEPT = """
import logging

import numpy as np
import pytest
import keras


class Break(keras.layers.Layer):
    def call(self, x):
        import torch._dynamo

        torch._dynamo.graph_break()
        return x * 2


MODEL = keras.Sequential([keras.Input((4,)), keras.layers.Dense(4), Break()])
X = np.ones((2, 4), dtype="float32")


def torch_logging():
    return {
        name: (logger.level, logger.propagate, logger.disabled, list(logger.handlers))
        for name, logger in list(logging.root.manager.loggerDict.items())
        if name.startswith("torch") and isinstance(logger, logging.Logger)
    }


@pytest.mark.max_graph_breaks(0)
@pytest.mark.kerasperf(mode="compiled")
def test_forward(kerasperf, kerasperf_compile):
    before = torch_logging()
    forward = kerasperf_compile(MODEL, X)
    kerasperf(lambda: forward(X))
    after = torch_logging()
    changed = sorted(name for name in before if after[name] != before[name])
    assert not changed, changed
"""


def test_measuring_graph_breaks_leaves_torchs_logging_as_found(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_backend("torch")
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    monkeypatch.setenv("KERAS_HOME", str(pytester.path / "keras-home"))
    monkeypatch.setenv("PYTHONHASHSEED", "0")
    monkeypatch.delenv("TORCH_LOGS", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    pytester.makepyfile(test_breaks=LOGGING_KEPT)
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--kerasperf",
        "--kerasperf-rounds=0",
        f"--kerasperf-baseline-dir={pytester.path / 'b'}",
        timeout=600,
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    output = result.stdout.str()
    # It fails on its budget alone: the logging check in the test body passed.
    result.stdout.fnmatch_lines(["*kerasperf max_graph_breaks(0): measured * over budget)"])
    assert "AssertionError" not in output, output[-3000:]
    # pytest captures every non-propagating logger, dynamo's structured trace among them:
    # none of its DEBUG records reach the failure's output.
    assert "torch.__trace" not in output, f"{output.count('torch.__trace')} trace lines"
