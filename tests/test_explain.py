"""Explanations that add up: own-count changes by caller, on three real changes of real models.

``tests/probe.py explanations`` profiles the CNN's eager forward on numpy
three ways: a planted extra call at the top of ``Dense.call``, a pass-through
wrapper around ``Conv2D.call`` taken away (the kind of change Keras #23183
made to every op call), and a functional model that gains a layer.  Each
explanation must sum exactly to the change of calls; moved calls must be
shown as moved and add nothing.  The pure cases below pin the rules.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from pytest_kerasperf.explain import OUTSIDE, TOP, Explanation, explain
from pytest_kerasperf.explain_summaries import from_summaries
from pytest_kerasperf.record import ProfileSummary
from tests.realrun import probe

DENSE_CALL = "keras/src/layers/core/dense.py:Dense.call"
CONV_CALL = "keras/src/layers/convolutional/base_conv.py:BaseConv.call"
WRAPPER = "tests/probe.py:_passthrough.<locals>.error_handler"


@pytest.fixture(scope="module")
def explained(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return probe("numpy", "explanations", tmp_path_factory.mktemp("keras-home"))


def _checked(case: dict[str, Any]) -> Explanation:
    """The explanation, after checking that it sums exactly to the measured change."""
    explanation = msgspec.convert(case["explanation"], Explanation)
    assert explanation.total == case["after"] - case["before"]
    assert sum(group.delta for group in explanation.groups) == explanation.total
    # Own counts: each function's change is split over its callers, no call counted twice.
    own: dict[str, int] = {}
    for group in explanation.groups:
        for item in group.items:
            own[item.callee] = own.get(item.callee, 0) + item.delta
    before, after = case["before_functions"], case["after_functions"]
    for name in set(before) | set(after):
        assert own.get(name, 0) == after.get(name, 0) - before.get(name, 0), name
    return explanation


def test_a_planted_extra_call_is_one_new_call_where_it_was_planted(
    explained: dict[str, Any],
) -> None:
    explanation = _checked(explained["planted"])
    assert explanation.total == 2  # the planted wrapper of Dense.call and its helper: one each
    items = {
        (i.callee.rsplit(":", 1)[-1], i.before, i.after)
        for g in explanation.groups
        for i in g.items
    }
    assert items == {
        ("explanations.<locals>.planted", 0, 1),
        ("_planted_helper", 0, 1),
    }
    # Dense.call is called as often as before, from the planted function now: a move.
    [move] = explanation.moves
    assert (move.callee, move.calls) == (DENSE_CALL, 1)
    assert move.target.endswith("explanations.<locals>.planted")


def test_a_removed_wrapper_is_its_own_calls_gone_and_the_wrapped_calls_moved(
    explained: dict[str, Any],
) -> None:
    explanation = _checked(explained["removed_wrapper"])
    assert explanation.total == -3  # three Conv2D layers, one wrapper call each
    [group] = explanation.groups
    assert [(i.callee, i.before, i.after) for i in group.items] == [(WRAPPER, 3, 0)]
    [move] = explanation.moves
    assert (move.callee, move.calls, move.source) == (CONV_CALL, 3, WRAPPER)
    assert move.target == group.caller  # the wrapper's caller now calls Conv2D.call itself
    assert "moved" in explanation.lines()[-1]


def test_an_added_layer_is_explained_call_for_call(explained: dict[str, Any]) -> None:
    explanation = _checked(explained["added_layer"])
    assert explanation.total > 0
    own = {i.callee: i.delta for g in explanation.groups for i in g.items}
    assert own[DENSE_CALL] == 1  # the new layer's call, once per forward
    assert own["keras/src/activations/activations.py:relu"] == 1
    assert explanation.moves == ()


# ------------------------------------------------------------------ the rules, pinned


def test_moves_pair_losses_with_gains_and_own_changes_stay_with_their_caller() -> None:
    before_counts = {"root.py:run": 1, "w.py:wrap": 2, "f.py:f": 2, "isinstance": 6}
    before_edges = {
        "root.py:run": {"w.py:wrap": 2, "isinstance": 1},
        "w.py:wrap": {"f.py:f": 2, "isinstance": 2},
        "f.py:f": {"isinstance": 3},
    }
    after_counts = {"root.py:run": 1, "f.py:f": 2, "isinstance": 5}
    after_edges = {"root.py:run": {"f.py:f": 2, "isinstance": 2}, "f.py:f": {"isinstance": 3}}
    explanation = explain(before_counts, before_edges, after_counts, after_edges)
    assert explanation.total == -3
    groups = {g.caller: {i.callee: i.delta for i in g.items} for g in explanation.groups}
    assert groups == {
        "root.py:run": {"w.py:wrap": -2, "isinstance": 1},
        "w.py:wrap": {"isinstance": -2},
    }
    assert [(m.callee, m.calls, m.source, m.target) for m in explanation.moves] == [
        ("f.py:f", 2, "w.py:wrap", "root.py:run")
    ]
    # run is called as often as before and its own calls changed (it stopped calling wrap):
    # the cause leads, though wrap's group is bigger (wrap is no longer called: a consequence).
    assert explanation.line() == (
        "root.py:run −1 (w.py:wrap 2→0, isinstance 1→2); w.py:wrap −2 (isinstance 2→0); "
        "moved: f.py:f 2× from w.py:wrap to root.py:run"
    )


def test_calls_with_no_profiled_caller_are_their_own_group() -> None:
    explanation = explain({"a.py:f": 1}, {}, {"a.py:f": 2}, {})
    assert [(g.caller, g.delta) for g in explanation.groups] == [(TOP, 1)]


def test_from_summaries_each_keras_function_and_the_rest_sum_to_the_total() -> None:
    layer, check = "keras/src/layers/layer.py:Layer.__call__", "keras/src/layers/layer.py:check"
    before = ProfileSummary({layer: (3, 30)}, {"builtins": 100}, "a")
    after = ProfileSummary({layer: (3, 33), check: (3, 0)}, {"builtins": 104}, "b")
    explanation = from_summaries(before, after)
    assert explanation.total == after.calls - before.calls == 7
    assert [(g.caller, g.delta) for g in explanation.groups] == [(layer, 3), (OUTSIDE, 4)]
    assert "Layer.__call__ +3 (calls it makes 30→33)" in explanation.line()


def test_an_explanation_that_does_not_add_up_is_refused() -> None:
    data = {"total": 5, "groups": [{"caller": "a.py:f", "made": 4, "items": []}], "moves": []}
    with pytest.raises(msgspec.ValidationError, match="sums to 4, not 5"):
        msgspec.convert(data, Explanation)
