"""verdict.judge on hand-built records: every gating rule without a model or a profiler."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from pytest_kerasperf.record import BreakReason, Budget, GraphRecord, LatencyRecord, Record
from pytest_kerasperf.verdict import Settings, diff_counts, judge

FIELDS = ("python", "numpy", "optree", "torch")
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
SETTINGS = Settings(comparable_fields=FIELDS)
LOCK_IN = "run `--kerasperf-update-baseline` to lock it in"
BASE_FUNCTIONS = {"mod.py:work": 1, "mod.py:step": 10, "isinstance": 40}


def make(
    functions: Mapping[str, int] = BASE_FUNCTIONS,
    *,
    latency: LatencyRecord | None = None,
    graph: GraphRecord | None = None,
    env: Mapping[str, str | None] = ENV,
) -> Record:
    return Record(
        backend="torch",
        mode="eager",
        calls=sum(functions.values()),
        calls_by_function=dict(functions),
        graph_breaks=graph,
        latency=latency,
        environment=dict(env),
    )


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
    assert result.failures == ()
    assert result.notes == ()
    assert result.calls_delta == 0
    assert result.function_diff == ()


def test_more_calls_is_a_regression_naming_the_grown_functions() -> None:
    measured = make({**BASE_FUNCTIONS, "mod.py:helper": 2, "isinstance": 45})
    result = judge(measured, make(), [], SETTINGS)
    assert result.status == "regressed"
    assert not result.passed
    assert result.calls_delta == 7
    assert result.failures == (
        "calls: 58 per call, baseline 51 (+7); grew: isinstance (+5), mod.py:helper (+2)",
    )
    assert result.function_diff == (("isinstance", 40, 45), ("mod.py:helper", 0, 2))


def test_regression_lists_at_most_three_culprits_biggest_first() -> None:
    measured = make(grown(a=1, b=4, c=3, d=2, **{"mod.py:step": -1}))
    [line] = judge(measured, make(), [], SETTINGS).failures
    assert line.endswith("grew: b (+4), c (+3), d (+2)")
    assert "mod.py:step" not in line


def test_fewer_calls_is_an_improvement_with_a_lock_in_note() -> None:
    measured = make(grown(isinstance=-5))
    result = judge(measured, make(), [], SETTINGS)
    assert result.status == "improved"
    assert result.passed
    assert result.calls_delta == -5
    assert result.notes == (f"\u22125 calls: {LOCK_IN}",)
    assert result.function_diff == (("isinstance", 40, 35),)


def test_moved_calls_with_the_same_total_pass_with_a_note() -> None:
    measured = make(grown(isinstance=-3, **{"mod.py:step": 3}))
    result = judge(measured, make(), [], SETTINGS)
    assert result.status == "pass"
    assert result.calls_delta == 0
    assert result.notes == ("calls unchanged in total but 2 functions moved: mod.py:step (+3)",)


def test_diff_counts_orders_by_size_then_name() -> None:
    assert diff_counts({"a": 1, "b": 5, "z": 2}, {"a": 2, "b": 1, "c": 1, "z": 2}) == (
        ("b", 5, 1),
        ("a", 1, 2),
        ("c", 0, 1),
    )


# -------------------------------------------------------------- environment


@pytest.mark.parametrize("field", FIELDS)
def test_other_versions_are_a_mismatch_never_a_failure(field: str) -> None:
    old = make(env={**ENV, field: "0.0.1"}, graph=GraphRecord(graphs=1, breaks=0), latency=ms(1))
    measured = make(grown(isinstance=1000), graph=GraphRecord(graphs=9, breaks=8), latency=ms(9.0))
    result = judge(measured, old, [], SETTINGS)
    assert result.status == "mismatch"
    assert result.graph_breaks_delta is None
    assert result.passed
    assert result.failures == ()
    assert result.calls_delta is None
    assert result.function_diff == ()
    assert result.mismatched == (f"{field} 0.0.1 -> {ENV[field]}",)
    assert any("counts not compared" in note for note in result.notes)


def test_a_mismatch_still_enforces_the_budgets() -> None:
    old = make(env={**ENV, "torch": "1.0"})
    result = judge(make(), old, [Budget("calls", 10)], SETTINGS)
    assert result.status == "over-budget"
    assert result.failures == ("max_calls(10): measured 51 (+41 over budget)",)


def test_latency_is_not_compared_under_a_mismatch() -> None:
    old = make(env={**ENV, "torch": "1.0"}, latency=ms(1.0))
    result = judge(make(latency=ms(9.0)), old, [], SETTINGS)
    assert result.status == "mismatch"
    assert result.passed
    assert result.latency_delta_pct is None
    assert result.mismatched == ("torch 1.0 -> 2.5.0",)


@pytest.mark.parametrize("field", ["keras", "keras_commit", "device", "platform"])
def test_fields_outside_the_comparable_set_do_not_stop_the_comparison(field: str) -> None:
    old = make(env={**ENV, field: "something else"})
    result = judge(make(grown(isinstance=1)), old, [], SETTINGS)
    assert result.status == "regressed"
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
    assert result.latency_delta_pct == pytest.approx(20.0)
    assert result.failures == (
        "latency: median 1.200 ms, baseline 1.000 ms (+20.0%, tolerance 10%)",
    )


def test_latency_within_the_tolerance_passes() -> None:
    result = judge(make(latency=ms(1.09)), make(latency=ms(1.0)), [], SETTINGS)
    assert result.status == "pass"
    assert result.latency_delta_pct == pytest.approx(9.0)
    loose = Settings(comparable_fields=FIELDS, latency_tolerance=0.5)
    assert judge(make(latency=ms(1.4)), make(latency=ms(1.0)), [], loose).passed


def test_latency_is_only_compared_on_the_same_device() -> None:
    old = make(latency=ms(1.0, device="cuda: A100"))
    result = judge(make(latency=ms(50.0)), old, [], SETTINGS)
    assert result.status == "pass"
    assert result.passed
    assert result.latency_delta_pct is None
    assert result.notes == ("latency not compared: baseline on cuda: A100, this run on cuda: H100",)


def test_cpu_latency_is_reported_not_gated() -> None:
    result = judge(make(latency=cpu(2.0)), make(latency=cpu(1.0)), [], SETTINGS)
    assert result.passed
    assert result.status == "pass"
    assert result.latency_delta_pct == pytest.approx(100.0)
    assert result.notes == ("median latency +100.0% vs baseline on cpu: EPYC (not gated on a CPU)",)


def test_cpu_latency_is_gated_with_gate_latency_on_cpu() -> None:
    settings = Settings(comparable_fields=FIELDS, gate_latency_on_cpu=True)
    result = judge(make(latency=cpu(2.0)), make(latency=cpu(1.0)), [], settings)
    assert result.status == "regressed"
    assert result.failures == (
        "latency: median 2.000 ms, baseline 1.000 ms (+100.0%, tolerance 10%)",
    )


def test_latency_missing_on_either_side_is_not_compared() -> None:
    assert judge(make(latency=None), make(latency=ms(1.0)), [], SETTINGS).latency_delta_pct is None
    result = judge(make(latency=ms(9.0)), make(latency=None), [], SETTINGS)
    assert result.passed
    assert result.latency_delta_pct is None


# ----------------------------------------------------------------- budgets


def test_max_calls_total() -> None:
    measured = make()
    assert judge(measured, None, [Budget("calls", 51)], SETTINGS).passed
    result = judge(measured, None, [Budget("calls", 50)], SETTINGS)
    assert result.status == "over-budget"
    assert result.failures == ("max_calls(50): measured 51 (+1 over budget)",)


def test_max_calls_per_function() -> None:
    budget = Budget("calls", 39, function="isinstance")
    result = judge(make(), None, [budget], SETTINGS)
    assert result.failures == (
        "max_calls(39, function='isinstance'): measured 40 (+1 over budget)",
    )
    assert judge(make(), None, [Budget("calls", 40, function="isinstance")], SETTINGS).passed


def test_a_function_known_only_from_the_baseline_counts_as_zero() -> None:
    old = make(grown(**{"mod.py:gone": 3}))
    result = judge(make(), old, [Budget("calls", 0, function="mod.py:gone")], SETTINGS)
    assert result.passed
    assert result.status == "improved"


def test_an_unknown_function_fails_with_did_you_mean() -> None:
    result = judge(make(), None, [Budget("calls", 10, function="isinstanse")], SETTINGS)
    assert result.status == "over-budget"
    assert result.failures == (
        "max_calls(10, function='isinstanse'): no function named 'isinstanse' was called; "
        "did you mean 'isinstance'?",
    )


def test_an_unknown_function_without_a_close_name_has_no_hint() -> None:
    result = judge(make(), None, [Budget("calls", 10, function="zzzzzzzz")], SETTINGS)
    assert result.failures == (
        "max_calls(10, function='zzzzzzzz'): no function named 'zzzzzzzz' was called",
    )


def test_max_latency_is_gated_on_an_accelerator_only() -> None:
    budget = Budget("latency", 1.0)
    on_gpu = judge(make(latency=ms(2.0)), None, [budget], SETTINGS)
    assert on_gpu.failures == (
        "max_latency(1 ms): median 2.000 ms on cuda: H100 (+100.0% over budget)",
    )

    on_cpu = judge(make(latency=cpu(2.0)), None, [budget], SETTINGS)
    assert on_cpu.passed
    assert "max_latency(1 ms): median 2.000 ms on cpu: EPYC: over budget, not gated on a CPU" in (
        on_cpu.notes
    )

    gated = Settings(comparable_fields=FIELDS, gate_latency_on_cpu=True)
    assert not judge(make(latency=cpu(2.0)), None, [budget], gated).passed
    assert judge(make(latency=ms(0.5)), None, [budget], SETTINGS).passed


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
    compiled = make(graph=GraphRecord(graphs=4, breaks=3))
    result = judge(compiled, None, [budget], SETTINGS)
    assert result.failures == ("max_graph_breaks(1): measured 3 (+2 over budget)",)
    assert judge(make(graph=GraphRecord(graphs=2, breaks=1)), None, [budget], SETTINGS).passed


# ------------------------------------------------------------ graph breaks


def test_more_graph_breaks_is_a_regression_naming_the_new_reason() -> None:
    old_reason = BreakReason("data-dependent branch", "layer.py:10")
    new_reason = BreakReason("print() call", "model.py:42")
    old = make(graph=GraphRecord(graphs=2, breaks=1, reasons=(old_reason,)))
    measured = make(graph=GraphRecord(graphs=3, breaks=2, reasons=(old_reason, new_reason)))
    result = judge(measured, old, [], SETTINGS)
    assert result.status == "regressed"
    assert result.graph_breaks_delta == 1
    assert result.new_break_reasons == (new_reason,)
    assert result.gone_break_reasons == ()
    assert result.failures == (
        "graph breaks: 2, baseline 1 (+1); new: print() call at model.py:42",
    )


def test_fewer_graph_breaks_is_an_improvement() -> None:
    reason = BreakReason("data-dependent branch", "layer.py:10")
    old = make(graph=GraphRecord(graphs=2, breaks=1, reasons=(reason,)))
    result = judge(make(graph=GraphRecord(graphs=1, breaks=0)), old, [], SETTINGS)
    assert result.status == "improved"
    assert result.graph_breaks_delta == -1
    assert result.gone_break_reasons == (reason,)
    assert result.notes == (f"\u22121 graph breaks: {LOCK_IN}",)


# ------------------------------------------------- updating and new entries


def test_updating_turns_regressions_into_notes() -> None:
    settings = Settings(comparable_fields=FIELDS, updating=True)
    result = judge(make(grown(isinstance=2), latency=ms(5.0)), make(latency=ms(1.0)), [], settings)
    assert result.passed
    assert result.failures == ()
    assert result.status == "pass"
    assert result.notes == (
        "baseline replaced (was: calls: 53 per call, baseline 51 (+2); grew: isinstance (+2))",
        "baseline replaced (was: latency: median 5.000 ms, baseline 1.000 ms "
        "(+400.0%, tolerance 10%))",
    )


def test_updating_still_enforces_the_budgets() -> None:
    settings = Settings(comparable_fields=FIELDS, updating=True)
    result = judge(make(), make(), [Budget("calls", 1)], settings)
    assert not result.passed
    assert result.status == "over-budget"


NO_BASELINE = "no baseline entry: run `--kerasperf-update-baseline` to record one"


def test_no_baseline_is_new_with_a_note() -> None:
    result = judge(make(), None, [], SETTINGS)
    assert result.status == "new"
    assert result.passed
    assert result.notes == (NO_BASELINE,)
    assert result.calls_delta is None


def test_require_baseline_fails_a_test_without_one() -> None:
    settings = Settings(comparable_fields=FIELDS, require_baseline=True)
    result = judge(make(), None, [], settings)
    assert not result.passed
    assert result.failures == (NO_BASELINE,)
    assert result.status == "new"
    assert judge(make(), make(), [], settings).passed


def test_require_baseline_with_a_budget_failure_is_over_budget() -> None:
    settings = Settings(comparable_fields=FIELDS, require_baseline=True)
    result = judge(make(), None, [Budget("calls", 1)], settings)
    assert result.status == "over-budget"
    assert result.failures == ("max_calls(1): measured 51 (+50 over budget)", NO_BASELINE)


def test_require_baseline_does_not_fail_while_updating() -> None:
    settings = Settings(comparable_fields=FIELDS, require_baseline=True, updating=True)
    result = judge(make(), None, [], settings)
    assert result.passed
    assert result.status == "new"
    assert result.notes == ("no baseline entry: recorded by this run",)
