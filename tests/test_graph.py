"""Graph-break records: one entry per (reason, Keras function), counted."""

from __future__ import annotations

from pytest_kerasperf.measure.graph import _one_line_reason, combine
from pytest_kerasperf.record import BreakReason, GraphRecord

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


def test_a_reason_is_one_line_with_its_explanations_first_sentence_and_no_address() -> None:
    text = (
        f"{SKIPPED}\n  Explanation: Dynamo does not know how to trace <obj at 0x7f00aa>. "
        "This function is either a Python builtin or an extension.\n  Hint: ...\n"
    )
    assert _one_line_reason(text) == f"{SKIPPED}: Dynamo does not know how to trace <obj>"
    assert _one_line_reason(f"{SKIPPED}\n  Hint: x\n") == SKIPPED
    assert _one_line_reason("  \n") == "<no reason given>"
