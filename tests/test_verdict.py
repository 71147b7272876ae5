"""judging.judge on hand-built records: every gating rule without a model or a profiler."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import msgspec
import pytest
from msgspec.structs import replace

from pytest_kerasperf.codec import to_data
from pytest_kerasperf.culprits import EntryPoint
from pytest_kerasperf.judging import judge
from pytest_kerasperf.metrics.calls import CallsChange, diff_counts
from pytest_kerasperf.metrics.graph_breaks import BreakChange, GraphBreaksChange
from pytest_kerasperf.metrics.latency import LatencyChange
from pytest_kerasperf.record import (
    BreakReason,
    Budget,
    GraphRecord,
    LatencyRecord,
    PlainTwinRecord,
    Record,
)
from pytest_kerasperf.settings import Settings
from pytest_kerasperf.verdict import Verdict

FIELDS = ("python", "numpy", "optree", "torch")


def breaks_delta(verdict: Verdict) -> int | None:
    """The move of graph breaks in a verdict (its metric's change), None when not compared."""
    change = verdict.change(GraphBreaksChange)
    return None if change is None else change.delta


def latency_pct(verdict: Verdict) -> float | None:
    """The move of latency in a verdict (its metric's change), None when not compared."""
    change = verdict.change(LatencyChange)
    return None if change is None else change.pct


def calls_delta(verdict: Verdict) -> int | None:
    """The move of calls in a verdict (the calls change), None when not compared."""
    change = verdict.change(CallsChange)
    return None if change is None else change.delta


def entry_points(verdict: Verdict) -> tuple[EntryPoint, ...]:
    """Where the calls' change entered (the calls change), () when not compared."""
    change = verdict.change(CallsChange)
    return () if change is None else change.entry_points


def function_diff(verdict: Verdict) -> tuple[tuple[str, int, int], ...]:
    """The functions whose calls moved (the calls change), () when not compared."""
    change = verdict.change(CallsChange)
    return () if change is None else change.function_diff


def break_changes(verdict: Verdict) -> tuple[BreakChange, ...]:
    change = verdict.change(GraphBreaksChange)
    return () if change is None else change.changes


def field_mismatch(
    before: Mapping[str, str | None], after: Mapping[str, str | None]
) -> tuple[str, ...]:
    """The verdict's fingerprint hook, here: these fields compared as they are."""
    return tuple(
        f"{name} {before.get(name)} -> {after.get(name)}"
        for name in FIELDS
        if before.get(name) != after.get(name)
    )


ENV: dict[str, str | None] = {
    "python": "3.11.7",
    "numpy": "2.0.0",
    "optree": "0.13.0",
    "torch": "2.5.0",
    "keras": "3.15.1",
    "keras_commit": "abc123",
    "device": "cuda: H100",
    "accelerator": "yes",
}
SETTINGS = Settings(mismatch=field_mismatch)
LOCK_IN = "record the win (`--kerasperf-update-baseline`)"
BASE_FUNCTIONS = {"mod.py:work": 1, "mod.py:step": 10, "isinstance": 40}


ROOT = "mod.py:work"


def make(
    functions: Mapping[str, int] = BASE_FUNCTIONS,
    *,
    latency: LatencyRecord | None = None,
    graph: GraphRecord | None = None,
    env: Mapping[str, str | None] = ENV,
    mode: str = "eager",
) -> Record:
    """A record whose root ``mod.py:work`` calls every other function directly."""
    return Record(
        backend="torch",
        mode=mode,
        calls=sum(functions.values()),
        calls_by_function=dict(functions),
        graph_breaks=graph,
        latency=latency,
        environment=dict(env),
        call_edges={ROOT: {name: n for name, n in functions.items() if name != ROOT and n}},
    )


def entry(callee: str, before: int, after: int) -> str:
    delta = f"{after - before:+,}".replace("-", "\u2212")
    return f"{ROOT} → {callee} {before}→{after}× (≈{delta} calls at and below)"


def ms(median: float, *, device: str = "cuda: H100", accelerator: bool = True) -> LatencyRecord:
    return LatencyRecord(
        median_ms=median, iqr_ms=0.01, rounds=50, device=device, accelerator=accelerator
    )


def cpu(median: float) -> LatencyRecord:
    return ms(median, device="cpu: EPYC", accelerator=False)


def grown(**extra: int) -> dict[str, int]:
    functions = dict(BASE_FUNCTIONS)
    for name, delta in extra.items():
        functions[name] = functions.get(name, 0) + delta
    return functions


# ------------------------------------------------------------------ counts


def test_identical_counts_pass() -> None:
    result = judge(make(), make(), [], SETTINGS)
    assert result.status == "pass"
    assert result.passed
    assert result.compared
    assert result.not_compared is None
    assert result.failure_lines == ()
    assert result.notes == ()
    assert calls_delta(result) == 0
    assert function_diff(result) == ()
    assert entry_points(result) == ()


def test_more_calls_is_a_regression_naming_where_they_enter_first() -> None:
    measured = make({**BASE_FUNCTIONS, "mod.py:helper": 2, "isinstance": 45})
    result = judge(measured, make(), [], SETTINGS)
    assert result.status == "regressed"
    assert not result.passed
    assert calls_delta(result) == 7
    assert result.failure_lines == (
        "calls: 58 per call, baseline 51 (+7); made by (sums to +7): "
        "mod.py:work +7 (isinstance 40→45, mod.py:helper 0→2); "
        "grew: isinstance (+5), mod.py:helper (+2)",
    )
    assert function_diff(result) == (("isinstance", 40, 45), ("mod.py:helper", 0, 2))
    assert [(p.caller, p.callee, p.calls_delta) for p in entry_points(result)] == [
        (ROOT, "isinstance", 5),
        (ROOT, "mod.py:helper", 2),
    ]


def test_regression_lists_at_most_three_grown_functions_biggest_first() -> None:
    measured = make(grown(a=1, b=4, c=3, d=2, **{"mod.py:step": -1}))
    [line] = judge(measured, make(), [], SETTINGS).failure_lines
    assert line.endswith("grew: b (+4), c (+3), d (+2)")
    # One group (every call is made by mod.py:work): its three biggest changes, and the rest
    # counted, so that what is listed adds up to the +9.
    assert "made by (sums to +9): mod.py:work +9 (b 0→4, c 0→3, d 0→2, 2 more ±0);" in line


def test_fewer_calls_is_an_improvement_with_a_note_to_record_it() -> None:
    measured = make(grown(isinstance=-5))
    result = judge(measured, make(), [], SETTINGS)
    assert result.status == "improved"
    assert result.passed
    assert calls_delta(result) == -5
    assert result.notes == (
        f"\u22125 calls (made by (sums to \u22125): mod.py:work \u22125 (isinstance 40→35)): "
        f"{LOCK_IN}",
    )
    assert function_diff(result) == (("isinstance", 40, 35),)


def test_moved_calls_with_the_same_total_pass_with_a_note() -> None:
    measured = make(grown(isinstance=-3, **{"mod.py:step": 3}))
    result = judge(measured, make(), [], SETTINGS)
    assert result.status == "pass"
    assert calls_delta(result) == 0
    assert result.notes == ("calls unchanged in total but 2 functions moved: mod.py:step (+3)",)


def test_diff_counts_orders_by_size_then_name() -> None:
    assert diff_counts({"a": 1, "b": 5, "z": 2}, {"a": 2, "b": 1, "c": 1, "z": 2}) == (
        ("b", 5, 1),
        ("a", 1, 2),
        ("c", 0, 1),
    )


def test_a_baseline_without_call_edges_still_names_the_grown_functions() -> None:
    old = make()
    old = replace(old, call_edges={})
    result = judge(make(grown(isinstance=2)), old, [], SETTINGS)
    assert result.failure_lines == ("calls: 53 per call, baseline 51 (+2); grew: isinstance (+2)",)


# -------------------------------------------------------------- environment


@pytest.mark.parametrize("field", FIELDS)
def test_another_environment_is_not_compared_and_passes_with_a_note(field: str) -> None:
    old = make(env={**ENV, field: "0.0.1"}, graph=GraphRecord(graphs=1, breaks=0), latency=ms(1))
    measured = make(grown(isinstance=1000), graph=GraphRecord(graphs=9, breaks=8), latency=ms(9.0))
    result = judge(measured, old, [], SETTINGS)
    assert result.status == "mismatch"
    assert breaks_delta(result) is None
    assert result.passed
    assert not result.compared
    assert result.not_compared == f"environment differs: {field} 0.0.1 -> {ENV[field]}"
    assert result.failure_lines == ()
    assert calls_delta(result) is None
    assert function_diff(result) == ()
    assert result.mismatched == (f"{field} 0.0.1 -> {ENV[field]}",)
    assert result.notes == (
        f"baseline measured under another count-relevant environment ({field} 0.0.1 -> "
        f"{ENV[field]}): counts not compared; run with the pinned set",
    )


def test_another_environment_fails_under_strict_with_one_line_naming_the_fields() -> None:
    old = make(env={**ENV, "python": "3.12.1", "torch": "2.14.0"})
    strict = Settings(mismatch=field_mismatch, strict=True)
    result = judge(make(), old, [], strict)
    assert not result.passed
    assert result.status == "mismatch"
    assert result.failure_lines == (
        "baseline measured under another count-relevant environment (python 3.12.1 -> 3.11.7, "
        "torch 2.14.0 -> 2.5.0): counts not compared (--kerasperf-strict); run with the pinned set",
    )


def test_a_mismatch_still_enforces_the_budgets() -> None:
    old = make(env={**ENV, "torch": "1.0"})
    result = judge(make(), old, [Budget("calls", 10)], SETTINGS)
    assert result.status == "over-budget"
    assert result.failure_lines == ("max_calls(10): measured 51 (+41 over budget)",)


def test_latency_is_not_compared_under_a_mismatch() -> None:
    old = make(env={**ENV, "torch": "1.0"}, latency=ms(1.0))
    result = judge(make(latency=ms(9.0)), old, [], SETTINGS)
    assert result.status == "mismatch"
    assert result.passed
    assert latency_pct(result) is None
    assert result.mismatched == ("torch 1.0 -> 2.5.0",)


@pytest.mark.parametrize("field", ["keras", "keras_commit", "device", "platform"])
def test_fields_outside_the_fingerprint_do_not_stop_the_comparison(field: str) -> None:
    old = make(env={**ENV, field: "something else"})
    result = judge(make(grown(isinstance=1)), old, [], SETTINGS)
    assert result.status == "regressed"
    assert result.compared
    assert result.mismatched == ()


def test_a_field_missing_on_one_side_is_a_mismatch() -> None:
    old = make(env={k: v for k, v in ENV.items() if k != "optree"})
    result = judge(make(), old, [], SETTINGS)
    assert result.status == "mismatch"
    assert result.mismatched == (f"optree None -> {ENV['optree']}",)


# ----------------------------------------------------------------- latency


def test_latency_regression_on_an_accelerator_fails() -> None:
    result = judge(make(latency=ms(1.2)), make(latency=ms(1.0)), [], SETTINGS)
    assert result.status == "regressed"
    assert latency_pct(result) == pytest.approx(20.0)
    assert result.failure_lines == (
        "latency: median 1.200 ms, baseline 1.000 ms (+20.0%, tolerance 10%)",
    )


def test_latency_within_the_tolerance_passes() -> None:
    result = judge(make(latency=ms(1.09)), make(latency=ms(1.0)), [], SETTINGS)
    assert result.status == "pass"
    assert latency_pct(result) == pytest.approx(9.0)
    loose = Settings(mismatch=field_mismatch, latency_tolerance=0.5)
    assert judge(make(latency=ms(1.4)), make(latency=ms(1.0)), [], loose).passed


def test_latency_is_only_compared_on_the_same_device() -> None:
    old = make(latency=ms(1.0, device="cuda: A100"))
    result = judge(make(latency=ms(50.0)), old, [], SETTINGS)
    assert result.status == "pass"
    assert result.passed
    assert latency_pct(result) is None
    assert result.notes == ("latency not compared: baseline on cuda: A100, this run on cuda: H100",)


def test_cpu_latency_is_reported_not_gated() -> None:
    result = judge(make(latency=cpu(2.0)), make(latency=cpu(1.0)), [], SETTINGS)
    assert result.passed
    assert result.status == "pass"
    assert latency_pct(result) == pytest.approx(100.0)
    assert result.notes == ("median latency +100.0% vs baseline on cpu: EPYC (not gated on a CPU)",)


def test_cpu_latency_is_gated_with_gate_latency_on_cpu() -> None:
    settings = Settings(mismatch=field_mismatch, gate_latency_on_cpu=True)
    result = judge(make(latency=cpu(2.0)), make(latency=cpu(1.0)), [], settings)
    assert result.status == "regressed"
    assert result.failure_lines == (
        "latency: median 2.000 ms, baseline 1.000 ms (+100.0%, tolerance 10%)",
    )


def test_latency_missing_on_either_side_is_not_compared() -> None:
    assert latency_pct(judge(make(latency=None), make(latency=ms(1.0)), [], SETTINGS)) is None
    result = judge(make(latency=ms(9.0)), make(latency=None), [], SETTINGS)
    assert result.passed
    assert latency_pct(result) is None


# ----------------------------------------------------------------- budgets


def test_max_calls_total() -> None:
    measured = make()
    assert judge(measured, None, [Budget("calls", 51)], SETTINGS).passed
    result = judge(measured, None, [Budget("calls", 50)], SETTINGS)
    assert result.status == "over-budget"
    assert result.failure_lines == ("max_calls(50): measured 51 (+1 over budget)",)


def test_max_calls_per_function() -> None:
    budget = Budget("calls", 39, function="isinstance")
    result = judge(make(), None, [budget], SETTINGS)
    assert result.failure_lines == (
        "max_calls(39, function='isinstance'): measured 40 (+1 over budget)",
    )
    assert judge(make(), None, [Budget("calls", 40, function="isinstance")], SETTINGS).passed


def test_scoped_budgets_apply_only_to_their_backend_and_mode() -> None:
    budgets = [
        Budget("calls", 10, backend="torch", mode="eager"),
        Budget("calls", 20, backend="jax"),
        Budget("calls", 30, mode="compiled"),
        Budget("calls", 40),
    ]
    eager = judge(make(), None, budgets, SETTINGS)
    assert eager.failure_lines == (
        "max_calls(10, backend='torch', mode='eager'): measured 51 (+41 over budget)",
        "max_calls(40): measured 51 (+11 over budget)",
    )
    compiled = judge(make(mode="compiled"), None, budgets, SETTINGS)
    assert compiled.failure_lines == (
        "max_calls(30, mode='compiled'): measured 51 (+21 over budget)",
        "max_calls(40): measured 51 (+11 over budget)",
    )
    assert judge(make(), None, [Budget("calls", 1, backend="numpy")], SETTINGS).passed


def test_a_function_known_only_from_the_baseline_counts_as_zero() -> None:
    old = make(grown(**{"mod.py:gone": 3}))
    result = judge(make(), old, [Budget("calls", 0, function="mod.py:gone")], SETTINGS)
    assert result.passed
    assert result.status == "improved"


def test_an_unknown_function_fails_with_did_you_mean() -> None:
    result = judge(make(), None, [Budget("calls", 10, function="isinstanse")], SETTINGS)
    assert result.status == "over-budget"
    assert result.failure_lines == (
        "max_calls(10, function='isinstanse'): no function named 'isinstanse' was called; "
        "did you mean 'isinstance'?",
    )


def test_an_unknown_function_without_a_close_name_has_no_hint() -> None:
    result = judge(make(), None, [Budget("calls", 10, function="zzzzzzzz")], SETTINGS)
    assert result.failure_lines == (
        "max_calls(10, function='zzzzzzzz'): no function named 'zzzzzzzz' was called",
    )


def test_max_latency_is_gated_on_an_accelerator_only() -> None:
    budget = Budget("latency", 1.0)
    on_gpu = judge(make(latency=ms(2.0)), None, [budget], SETTINGS)
    assert on_gpu.failure_lines == (
        "max_latency(1 ms): median 2.000 ms on cuda: H100 (+100.0% over budget)",
    )

    on_cpu = judge(make(latency=cpu(2.0)), None, [budget], SETTINGS)
    assert on_cpu.passed
    assert "max_latency(1 ms): median 2.000 ms on cpu: EPYC: over budget, not gated on a CPU" in (
        on_cpu.notes
    )

    gated = Settings(mismatch=field_mismatch, gate_latency_on_cpu=True)
    assert not judge(make(latency=cpu(2.0)), None, [budget], gated).passed
    assert judge(make(latency=ms(0.5)), None, [budget], SETTINGS).passed


def test_scoped_max_latency() -> None:
    budget = Budget("latency", 1.0, backend="torch", mode="compiled")
    assert judge(make(latency=ms(2.0)), None, [budget], SETTINGS).passed
    result = judge(make(latency=ms(2.0), mode="compiled"), None, [budget], SETTINGS)
    assert result.failure_lines == (
        "max_latency(1 ms, backend='torch', mode='compiled'): median 2.000 ms on cuda: H100 "
        "(+100.0% over budget)",
    )


def test_max_latency_without_a_measurement_is_a_note() -> None:
    result = judge(make(latency=None), make(), [Budget("latency", 1.0)], SETTINGS)
    assert result.passed
    assert result.notes == ("max_latency(1 ms) not checked: latency was not measured",)


def test_max_graph_breaks() -> None:
    budget = Budget("graph_breaks", 1)
    eager = judge(make(), make(), [budget], SETTINGS)
    assert eager.passed
    assert eager.notes == (
        "max_graph_breaks(1) not checked: graph breaks are measured in torch compiled mode",
    )
    compiled = make(graph=GraphRecord(graphs=4, breaks=3), mode="compiled")
    result = judge(compiled, None, [budget], SETTINGS)
    assert result.failure_lines == ("max_graph_breaks(1): measured 3 (+2 over budget)",)
    assert judge(make(graph=GraphRecord(graphs=2, breaks=1)), None, [budget], SETTINGS).passed
    scoped = Budget("graph_breaks", 0, mode="eager")
    assert judge(compiled, None, [scoped], SETTINGS).passed


# ------------------------------------------------------------ graph breaks

BRANCH = "Data-dependent branching"
PRINT = "print() call"


def graph(*reasons: BreakReason) -> GraphRecord:
    breaks = sum(r.count for r in reasons)
    return GraphRecord(graphs=breaks + 1, breaks=breaks, reasons=reasons)


def test_more_graph_breaks_name_the_reason_whose_count_grew() -> None:
    old = make(graph=graph(BreakReason(BRANCH, "layer.py:call", 1, 10)))
    measured = make(
        graph=graph(
            BreakReason(BRANCH, "layer.py:call", 1, 10),
            BreakReason(PRINT, "model.py:forward", 12, 42),
        )
    )
    result = judge(measured, old, [], SETTINGS)
    assert result.status == "regressed"
    assert breaks_delta(result) == 12
    assert result.failure_lines == (
        f"graph breaks: 13, baseline 1 (+12); grew: model.py:forward (line 42): 0→12× {PRINT}",
    )
    assert [(c.frame, c.before, c.after) for c in break_changes(result)] == [
        ("model.py:forward", 0, 12)
    ]


def test_a_break_that_moved_lines_in_its_function_is_the_same_break() -> None:
    old = make(graph=graph(BreakReason(BRANCH, "layer.py:call", 3, 10)))
    moved = make(graph=graph(BreakReason(BRANCH, "layer.py:call", 3, 57)))
    result = judge(moved, old, [], SETTINGS)
    assert result.status == "pass"
    assert break_changes(result) == ()
    assert result.notes == ()


def test_one_reason_grew_when_the_total_did_not_is_a_note() -> None:
    old = make(graph=graph(BreakReason(BRANCH, "a.py:f", 2, 1), BreakReason(PRINT, "b.py:g", 1, 1)))
    new = make(graph=graph(BreakReason(BRANCH, "a.py:f", 1, 1), BreakReason(PRINT, "b.py:g", 2, 1)))
    result = judge(new, old, [], SETTINGS)
    assert result.passed
    assert result.notes == (
        f"graph breaks unchanged in total but their reasons moved: b.py:g (line 1): 1→2× {PRINT}",
    )


def test_more_breaks_without_a_grown_reason_say_so() -> None:
    reasons = (BreakReason(BRANCH, "a.py:f", 1, 1),)
    old = make(graph=GraphRecord(graphs=5, breaks=4, reasons=reasons))
    new = make(graph=GraphRecord(graphs=9, breaks=8, reasons=reasons))
    result = judge(new, old, [], SETTINGS)
    assert result.failure_lines == (
        "graph breaks: 8, baseline 4 (+4); 4 without a reason in dynamo's graph-break log",
    )


def test_breaks_and_the_reasons_named_for_them_add_up() -> None:
    """Four more breaks, three reasons grew by one each: the line names two, counts the
    third, and says that one break came without a reason."""
    reasons = (
        BreakReason(BRANCH, "a.py:f", 1, 1),
        BreakReason(PRINT, "b.py:g", 1, 2),
        BreakReason(PRINT, "c.py:h", 1, 3),
    )
    old = make(graph=GraphRecord(graphs=1, breaks=0))
    new = make(graph=GraphRecord(graphs=5, breaks=4, reasons=reasons))
    result = judge(new, old, [], SETTINGS)
    assert result.failure_lines == (
        f"graph breaks: 4, baseline 0 (+4); grew: a.py:f (line 1): 0→1× {BRANCH}; "
        f"b.py:g (line 2): 0→1× {PRINT}; 1 more reasons (+1); "
        "1 without a reason in dynamo's graph-break log",
    )
    # More reasons than breaks (dynamo's log names breaks explain does not count): said too.
    new = make(graph=GraphRecord(graphs=3, breaks=2, reasons=reasons))
    (line,) = judge(new, old, [], SETTINGS).failure_lines
    assert line.endswith(
        "; the reasons count 1 more (dynamo's log names breaks explain does not count)"
    )


def test_max_graph_breaks_on_a_model_the_test_compiled_itself_names_the_fixture() -> None:
    """torch, compiled, no breaks measured: the test compiled its model itself (a ``fit``
    with ``jit_compile=True``); breaks are measured for the fixtures' forwards only."""
    result = judge(make(mode="compiled"), None, [Budget("graph_breaks", 0)], SETTINGS)
    assert result.passed
    (note,) = [n for n in result.notes if n.startswith("max_graph_breaks")]
    assert note == (
        "max_graph_breaks(0) not checked: graph breaks are measured only for forwards built "
        "with the `kerasperf_compile` fixture (and the `kerasperf_*_train_step` fixtures), not "
        "for a model the test compiles itself (`jit_compile=True`)"
    )


def test_fewer_graph_breaks_is_an_improvement() -> None:
    old = make(graph=graph(BreakReason(BRANCH, "layer.py:call", 1, 10)))
    result = judge(make(graph=GraphRecord(graphs=1, breaks=0)), old, [], SETTINGS)
    assert result.status == "improved"
    assert breaks_delta(result) == -1
    assert [(c.frame, c.before, c.after) for c in break_changes(result)] == [
        ("layer.py:call", 1, 0)
    ]
    assert result.notes == (f"\u22121 graph breaks: {LOCK_IN}",)


# ------------------------------------------------- updating and new entries


def test_updating_turns_regressions_into_notes() -> None:
    settings = Settings(mismatch=field_mismatch, updating=True)
    result = judge(make(grown(isinstance=2), latency=ms(5.0)), make(latency=ms(1.0)), [], settings)
    assert result.passed
    assert result.failure_lines == ()
    assert result.status == "pass"
    assert result.notes == (
        "baseline replaced (was: calls: 53 per call, baseline 51 (+2); made by (sums to +2): "
        "mod.py:work +2 (isinstance 40→42); grew: isinstance (+2))",
        "baseline replaced (was: latency: median 5.000 ms, baseline 1.000 ms "
        "(+400.0%, tolerance 10%))",
    )


def test_updating_still_enforces_the_budgets() -> None:
    settings = Settings(mismatch=field_mismatch, updating=True)
    result = judge(make(), make(), [Budget("calls", 1)], settings)
    assert not result.passed
    assert result.status == "over-budget"


def test_updating_records_a_baseline_from_another_environment() -> None:
    settings = Settings(mismatch=field_mismatch, updating=True, strict=True)
    result = judge(make(), make(env={**ENV, "torch": "1.0"}), [], settings)
    assert result.passed
    assert result.notes == (
        "baseline measured under another count-relevant environment (torch 1.0 -> 2.5.0): "
        "counts not compared; recorded anew by this run",
    )


NO_BASELINE = "no baseline entry: record one with `--kerasperf-update-baseline`"
STRICT_NO_BASELINE = (
    "no baseline entry (--kerasperf-strict): record one with `--kerasperf-update-baseline` "
    "or `kerasperf accept`"
)


def test_no_baseline_is_new_with_a_note() -> None:
    result = judge(make(), None, [], SETTINGS)
    assert result.status == "new"
    assert result.passed
    assert not result.compared
    assert result.not_compared == "no baseline entry"
    assert result.notes == (NO_BASELINE,)
    assert calls_delta(result) is None


def test_strict_fails_a_test_without_a_baseline_entry() -> None:
    settings = Settings(mismatch=field_mismatch, strict=True)
    result = judge(make(), None, [], settings)
    assert not result.passed
    assert result.failure_lines == (STRICT_NO_BASELINE,)
    assert result.status == "new"
    assert judge(make(), make(), [], settings).passed


def test_strict_with_a_budget_failure_is_over_budget() -> None:
    settings = Settings(mismatch=field_mismatch, strict=True)
    result = judge(make(), None, [Budget("calls", 1)], settings)
    assert result.status == "over-budget"
    assert result.failure_lines == (
        "max_calls(1): measured 51 (+50 over budget)",
        STRICT_NO_BASELINE,
    )


def test_strict_does_not_fail_a_new_entry_while_updating() -> None:
    settings = Settings(mismatch=field_mismatch, strict=True, updating=True)
    result = judge(make(), None, [], settings)
    assert result.passed
    assert result.status == "new"
    assert result.notes == ("no baseline entry: recorded by this run",)


def _compiled(recompiles: int | None, causes: tuple[str, ...] = ()) -> Record:
    return replace(make(mode="compiled"), recompiles=recompiles, recompile_causes=causes)


def test_more_recompiles_than_the_baseline_is_a_regression_naming_the_cause() -> None:
    cause = "jax.jit traced <lambda>: at x, now f32[2,9,8] and before f32[2,8,8]"
    result = judge(_compiled(1, (cause,)), _compiled(0), [], SETTINGS)
    assert result.status == "regressed"
    assert result.failure_lines == (
        f"recompiles: 1 per call after warm-up, baseline 0 (+1); cause: {cause}",
    )


def test_fewer_recompiles_is_an_improvement_and_equal_is_silent() -> None:
    fewer = judge(_compiled(0), _compiled(2), [], SETTINGS)
    assert fewer.status == "improved"
    assert fewer.notes == (f"−2 recompiles per call: {LOCK_IN}",)
    same = judge(_compiled(0), _compiled(0), [], SETTINGS)
    assert (same.status, same.notes) == ("pass", ())


def test_a_baseline_without_a_recompile_count_gets_a_note_only_when_it_matters() -> None:
    assert judge(_compiled(0), _compiled(None), [], SETTINGS).notes == ()
    noted = judge(_compiled(3, ("tf.function traced f",)), _compiled(None), [], SETTINGS)
    assert noted.passed
    assert noted.notes == (
        "3 recompiles per call after warm-up; the baseline entry has no count; "
        "cause: tf.function traced f",
    )


def test_max_recompiles_budget() -> None:
    budget = Budget("recompiles", 0)
    over = judge(_compiled(2, ("2× tf.function traced f",)), None, [budget], SETTINGS)
    assert over.failure_lines[0] == (
        "max_recompiles(0): 2 per call after warm-up (+2 over budget); "
        "cause: 2× tf.function traced f"
    )
    eager = judge(make(), None, [budget], SETTINGS)
    assert eager.notes[0] == (
        "max_recompiles(0) not checked: recompiles are counted in compiled mode"
    )


def _with_twin(keras_ms: float, plain_ms: float | None, plain_calls: int) -> Record:
    def latency(ms: float) -> LatencyRecord:
        return LatencyRecord(ms, 0.1, 5, "cpu: test", False)

    twin = PlainTwinRecord(
        framework="torch",
        name="plain torch LM forward (eager)",
        calls=plain_calls,
        latency=None if plain_ms is None else latency(plain_ms),
    )
    return replace(make(latency=latency(keras_ms)), plain_twin=twin)


def test_max_overhead_compares_keras_with_its_plain_twin_on_any_device() -> None:
    record = _with_twin(3.0, 2.0, 17)  # 51 calls: 3.00× calls, 1.50× latency
    assert record.calls_overhead == pytest.approx(3.0)
    assert record.latency_overhead == pytest.approx(1.5)
    ok = judge(record, None, [Budget("overhead", 1.6)], SETTINGS)
    assert ok.failure_lines == ()
    slow = judge(record, None, [Budget("overhead", 1.4)], SETTINGS)
    assert slow.failure_lines == (
        "max_overhead(1.4): Keras 1.50× plain torch LM forward (eager) "
        "(median 3.000 ms vs 2.000 ms)",
    )
    calls = judge(record, None, [Budget("overhead", 2.5, metric="calls")], SETTINGS)
    assert calls.failure_lines == (
        "max_overhead(2.5, metric='calls'): Keras 3.00× plain torch LM forward (eager) "
        "(51 calls vs 17)",
    )


def test_max_overhead_without_a_twin_or_a_latency_is_a_note() -> None:
    budget = Budget("overhead", 1.6)
    assert judge(make(), None, [budget], SETTINGS).notes[0] == (
        "max_overhead(1.6) not checked: the test named no plain twin"
    )
    untimed = judge(_with_twin(3.0, None, 17), None, [budget], SETTINGS)
    assert untimed.notes[0] == "max_overhead(1.6) not checked: latency was not measured"


def test_each_failure_says_what_it_is_about() -> None:
    """A failure carries its kind: code decides on it (a latency failure gets a profile),
    never on the text of the line."""
    slower = judge(make(grown(isinstance=2), latency=ms(2.0)), make(latency=ms(1.0)), [], SETTINGS)
    assert [f.kind for f in slower.failures] == ["calls", "latency"]
    assert slower.failed_on("latency")
    assert slower.failed_on("calls")
    assert not slower.failed_on("graph_breaks")
    budgets = [Budget("calls", 10), Budget("overhead", 1.4)]
    over = judge(
        _with_twin(3.0, 2.0, 17), None, budgets, dataclasses.replace(SETTINGS, strict=True)
    )
    assert [f.kind for f in over.failures] == ["calls", "overhead", "not_compared"]
    late = judge(make(latency=ms(2.0)), make(latency=ms(2.0)), [Budget("latency", 0.5)], SETTINGS)
    assert [f.kind for f in late.failures] == ["latency"]
    assert [str(f) for f in over.failures] == list(over.failure_lines)
    again = msgspec.convert(to_data(over), Verdict)
    assert again == over


# ------------------------------------------------------------------ the ratchet

RATCHET = dataclasses.replace(
    SETTINGS, ratchet=True, record_win="pytest --kerasperf-update-baseline t"
)


def test_a_win_not_recorded_fails_under_the_ratchet_and_passes_without() -> None:
    fewer = make(grown(isinstance=-5))
    loose = judge(fewer, make(), [], SETTINGS)
    assert loose.passed
    assert loose.status == "improved"
    ratcheted = judge(fewer, make(), [], RATCHET)
    assert not ratcheted.passed
    assert ratcheted.status == "win-not-recorded"
    assert [f.kind for f in ratcheted.failures] == ["win_not_recorded"]
    assert ratcheted.failure_lines == (
        "calls 51 → 46 (\u22125): a win not recorded (--kerasperf-ratchet); record it: "
        "`pytest --kerasperf-update-baseline t`",
    )
    # The note that says it is still there; updating records the win instead of failing.
    assert any(LOCK_IN in note for note in ratcheted.notes)
    updating = judge(fewer, make(), [], dataclasses.replace(RATCHET, updating=True))
    assert updating.passed


def test_the_ratchet_fails_fewer_graph_breaks_too_but_never_a_faster_latency() -> None:
    old = make(graph=GraphRecord(graphs=5, breaks=4), latency=ms(2.0))
    new = make(graph=GraphRecord(graphs=4, breaks=3), latency=ms(1.0))
    result = judge(new, old, [], RATCHET)
    assert result.status == "win-not-recorded"
    assert [line.split(":")[0] for line in result.failure_lines] == ["graph breaks 4 → 3 (\u22121)"]
    faster = judge(make(latency=ms(1.0)), make(latency=ms(2.0)), [], RATCHET)
    assert faster.passed
    assert faster.status == "pass"


def test_a_regression_beside_a_win_is_a_regression() -> None:
    fewer_calls = make(grown(isinstance=-5), graph=GraphRecord(graphs=6, breaks=5))
    result = judge(fewer_calls, make(graph=GraphRecord(graphs=5, breaks=4)), [], RATCHET)
    assert result.status == "regressed"
    assert [f.kind for f in result.failures] == ["graph_breaks", "win_not_recorded"]


def test_each_metric_failing_gets_its_own_next_step_and_junit_numbers() -> None:
    """Calls and graph breaks grown against the baseline and a budget exceeded: one ``next:``
    line for the budget and one per metric (``Metric.advice``); junitxml gets the status, the
    calls and their change, the breaks and the median latency (``Metric.junit``)."""
    from pytest_kerasperf.budget import Budget
    from pytest_kerasperf.outcome import Outcome
    from pytest_kerasperf.report.junit import junit_properties
    from pytest_kerasperf.report.next_steps import next_steps

    reasons = (BreakReason(PRINT, "b.py:g", 2, 3),)
    old = make(graph=GraphRecord(graphs=1, breaks=0), mode="compiled", latency=cpu(1.0))
    new = make(
        grown(isinstance=3),
        graph=GraphRecord(graphs=3, breaks=2, reasons=reasons),
        mode="compiled",
        latency=cpu(1.5),
    )
    verdict = judge(new, old, [Budget("graph_breaks", 1)], SETTINGS)
    assert {failure.kind for failure in verdict.failures} == {"calls", "graph_breaks"}
    steps = next_steps(verdict, "test_x.py:3")
    assert steps[0].startswith(
        "next: bring the count under the budget, or change the budget "
        "in the test's marker (test_x.py:3)"
    )
    assert steps[1].startswith("next: find the new calls")
    assert steps[2] == (
        "next: each break's frame and reason are listed with the breaks measured; "
        "docs/reading-a-failure.md#common-graph-breaks lists the common ones and how Keras "
        "removed them"
    )
    assert len(steps) == 3  # the breaks' budget and their move: one line
    outcome = Outcome("t.py::t", "t.py::t", new, verdict, True)
    assert junit_properties(outcome) == [
        ("kerasperf_status", verdict.status),
        ("kerasperf_calls", new.calls),
        ("kerasperf_calls_delta", 3),
        ("kerasperf_graph_breaks", 2),
        ("kerasperf_latency_median_ms", 1.5),
    ]
