"""Where new calls enter: entry points from caller -> callee edges, on hand-built graphs."""

from __future__ import annotations

import pytest

from pytest_kerasperf.culprits import entry_points, is_python_function, subtree_sizes

# A functional model's forward, reduced: the graph runner calls each layer once,
# each layer calls a helper and isinstance.
RUN = "keras/src/ops/function.py:Function._run_through_graph"
CALL = "keras/src/layers/layer.py:Layer.__call__"
HELPER = "keras/src/utils/helper.py:check"


def model(
    layers: int, *, helper_per_layer: int = 0
) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    counts = {"root.py:forward": 1, RUN: 1, CALL: layers, "isinstance": 3 * layers}
    edges: dict[str, dict[str, int]] = {
        "root.py:forward": {RUN: 1},
        RUN: {CALL: layers},
        CALL: {"isinstance": 3 * layers},
    }
    if helper_per_layer:
        counts[HELPER] = helper_per_layer * layers
        counts["len"] = helper_per_layer * layers
        edges[CALL][HELPER] = helper_per_layer * layers
        edges[HELPER] = {"len": helper_per_layer * layers}
    return counts, edges


def test_subtree_sizes_count_the_call_and_everything_below_it() -> None:
    counts, edges = model(4)
    sizes = subtree_sizes(counts, edges)
    assert sizes["isinstance"] == 1
    assert sizes[CALL] == 4  # itself and three isinstance calls
    assert sizes[RUN] == 1 + 4 * 4
    assert sizes["root.py:forward"] == 2 + 16


def test_one_more_layer_enters_where_the_graph_runner_calls_it() -> None:
    before, after = model(6), model(7)
    [point] = entry_points(*before, *after)
    assert (point.caller, point.callee, point.before, point.after) == (RUN, CALL, 6, 7)
    assert point.calls_delta == 4  # Layer.__call__ and its three isinstance calls
    assert point.describe() == f"{RUN} → {CALL} 6→7× (≈+4 calls at and below)"


def test_a_new_helper_call_enters_in_the_function_that_calls_it() -> None:
    before, after = model(5), model(5, helper_per_layer=1)
    [point] = entry_points(*before, *after)
    assert (point.caller, point.callee, point.before, point.after) == (CALL, HELPER, 0, 5)
    assert point.calls_delta == 10  # five helper calls, five len calls below them


def test_fewer_calls_give_negative_entry_points() -> None:
    before, after = model(5, helper_per_layer=2), model(5, helper_per_layer=1)
    [point] = entry_points(*before, *after)
    assert (point.caller, point.callee, point.calls_delta) == (CALL, HELPER, -10)
    assert point.describe().endswith("10→5× (≈\u221210 calls at and below)")


def test_python_callers_come_before_builtin_ones_and_a_builtin_names_its_caller() -> None:
    key = "root.py:key"
    before_counts = {"root.py:forward": 1, "sorted": 1, key: 3, "len": 1}
    before_edges = {"root.py:forward": {"sorted": 1, "len": 1}, "sorted": {key: 3}}
    after_counts = {"root.py:forward": 1, "sorted": 1, key: 5, "len": 3}
    after_edges = {"root.py:forward": {"sorted": 1, "len": 3}, "sorted": {key: 5}}
    points = entry_points(before_counts, before_edges, after_counts, after_edges)
    assert [(p.caller, p.callee, p.via) for p in points] == [
        ("root.py:forward", "len", None),
        ("sorted", key, "root.py:forward"),
    ]
    assert points[1].describe() == (
        f"root.py:forward → sorted → {key} 3→5× (≈+2 calls at and below)"
    )


def test_recursion_is_cut_where_it_closes_a_cycle() -> None:
    walk = "tree.py:walk"
    counts = {"root.py:f": 1, walk: 7, "len": 7}
    edges = {"root.py:f": {walk: 1}, walk: {walk: 6, "len": 7}}
    sizes = subtree_sizes(counts, edges)
    assert sizes[walk] == pytest.approx(2.0)  # itself and one len per call
    assert entry_points(counts, edges, counts, edges) == ()


@pytest.mark.parametrize(
    ("name", "python"),
    [
        ("keras/src/layers/layer.py:Layer.__call__", True),
        ("<frozen abc>:ABCMeta.__instancecheck__", True),
        ("isinstance", False),
        ("torch._C._get_tracing_state", False),
    ],
)
def test_python_functions_are_named_by_file(name: str, python: bool) -> None:
    assert is_python_function(name) is python
