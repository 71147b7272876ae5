"""Judge one measurement against its baseline entry and its marker budgets.

A pure function of plain records: it knows nothing about cProfile, torch or
pytest, so every rule below is unit-tested without a model.  It returns a
``verdict.Verdict``; what moved comes from ``changes``.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_kerasperf.changes import BreakChange, break_changes, diff_counts, summary_diff
from pytest_kerasperf.culprits import EntryPoint, entry_points, function_entry_points
from pytest_kerasperf.explain import Explanation, explain, from_summaries
from pytest_kerasperf.formatting import signed
from pytest_kerasperf.record import Budget, Record
from pytest_kerasperf.verdict import Failure, Settings, Status, Verdict

__all__ = ["judge"]

GROUPS_IN_LINE = 2
FUNCTIONS_IN_LINE = 3


def _grown_functions(rows: Sequence[tuple[str, int, int]], limit: int = FUNCTIONS_IN_LINE) -> str:
    grown = [(name, new - old) for name, old, new in rows if new > old][:limit]
    return ", ".join(f"{name} ({signed(delta)})" for name, delta in grown)


def _made_by(explanation: Explanation | None) -> str:
    """``made by (sums to +7): Layer.__call__ +7 (check 0→7)``: the exact explanation."""
    if explanation is None or not explanation.groups:
        return ""
    text = explanation.line(groups=GROUPS_IN_LINE, moves=1, separator=", ")
    return f"made by (sums to {signed(explanation.total)}): {text}"


def _latency_gated(measured: Record, settings: Settings) -> bool:
    return measured.latency is not None and (
        measured.latency.accelerator or settings.gate_latency_on_cpu
    )


def _check_budgets(
    measured: Record, budgets: Sequence[Budget], baseline: Record | None, settings: Settings
) -> tuple[list[Failure], list[str]]:
    failures: list[Failure] = []
    notes: list[str] = []
    for budget in budgets:
        if not budget.applies(measured.backend, measured.mode):
            continue
        name = budget.describe()
        if budget.kind == "calls":
            if budget.function is None:
                value = measured.calls
            else:
                known = set(measured.calls_by_function)
                if baseline is not None:
                    known |= set(baseline.calls_by_function) | set(baseline.profile().functions)
                if budget.function not in known:
                    close = difflib.get_close_matches(budget.function, sorted(known), n=1)
                    hint = f"; did you mean {close[0]!r}?" if close else ""
                    failures.append(
                        Failure(
                            "calls",
                            f"{name}: no function named {budget.function!r} was called{hint}",
                        )
                    )
                    continue
                value = measured.calls_by_function.get(budget.function, 0)
            if value > budget.limit:
                failures.append(
                    Failure(
                        "calls",
                        f"{name}: measured {value:,} ({signed(value - int(budget.limit))} over "
                        "budget)",
                    )
                )
        elif budget.kind == "graph_breaks":
            if measured.graph_breaks is None:
                notes.append(
                    f"{name} not checked: graph breaks are measured in torch compiled mode"
                )
            elif measured.graph_breaks.breaks > budget.limit:
                over = measured.graph_breaks.breaks - int(budget.limit)
                failures.append(
                    Failure(
                        "graph_breaks",
                        f"{name}: measured {measured.graph_breaks.breaks} ({signed(over)} over "
                        "budget)",
                    )
                )
        elif budget.kind == "recompiles":
            if measured.recompiles is None:
                notes.append(f"{name} not checked: recompiles are counted in compiled mode")
            elif measured.recompiles > budget.limit:
                over = measured.recompiles - int(budget.limit)
                failures.append(
                    Failure(
                        "recompiles",
                        f"{name}: {measured.recompiles} per call after warm-up "
                        f"({signed(over)} over budget)" + _causes(measured),
                    )
                )
        elif budget.kind == "overhead":
            _check_overhead(measured, budget, failures, notes)
        elif budget.kind == "instructions":
            if measured.instructions is None:
                notes.append(
                    f"{name} not checked: instructions are counted under callgrind "
                    "(--kerasperf-instructions)"
                )
            elif measured.instructions.median > budget.limit:
                over = measured.instructions.median - int(budget.limit)
                failures.append(
                    Failure(
                        "instructions",
                        f"{name}: measured {measured.instructions.median:,} ({signed(over)} "
                        "over budget)",
                    )
                )
        else:
            if measured.latency is None:
                notes.append(f"{name} not checked: latency was not measured")
                continue
            median = measured.latency.median_ms
            line = f"{name}: median {median:.3f} ms on {measured.latency.device}"
            if median <= budget.limit:
                continue
            if _latency_gated(measured, settings):
                over_pct = (median / budget.limit - 1) * 100
                failures.append(Failure("latency", f"{line} (+{over_pct:.1f}% over budget)"))
            else:
                notes.append(f"{line}: over budget, not gated on a CPU")
    return failures, notes


def _causes(measured: Record) -> str:
    if not measured.recompile_causes:
        return ""
    return f"; cause: {'; '.join(measured.recompile_causes[:2])}"


def _check_overhead(
    measured: Record, budget: Budget, failures: list[Failure], notes: list[str]
) -> None:
    """Keras / plain framework, measured in the same process and run: gated on any device."""
    name = budget.describe()
    ref = measured.plain_twin
    if ref is None:
        notes.append(f"{name} not checked: the test named no plain twin")
        return
    if budget.metric == "calls":
        ratio, what = measured.calls_overhead, f"{measured.calls:,} calls vs {ref.calls:,}"
    else:
        ratio = measured.latency_overhead
        if ratio is None or measured.latency is None or ref.latency is None:
            notes.append(f"{name} not checked: latency was not measured")
            return
        what = f"median {measured.latency.median_ms:.3f} ms vs {ref.latency.median_ms:.3f} ms"
    if ratio is not None and ratio > budget.limit:
        failures.append(Failure("overhead", f"{name}: Keras {ratio:.2f}× {ref.name} ({what})"))


@dataclass
class _AgainstBaseline:
    regressions: list[Failure]
    notes: list[str]
    improved: bool = False
    calls_delta: int | None = None
    graph_delta: int | None = None
    latency_pct: float | None = None
    instructions_pct: float | None = None
    instructions_skip: str | None = None
    points: tuple[EntryPoint, ...] = ()
    explanation: Explanation | None = None
    function_diff: tuple[tuple[str, int, int], ...] = ()
    breaks: tuple[BreakChange, ...] = ()


def _compare_calls(
    measured: Record, baseline: Record, out: _AgainstBaseline, against: str = "baseline"
) -> None:
    out.calls_delta = measured.calls - baseline.calls
    summarized = baseline.is_compact or measured.is_compact
    if summarized:
        before, after = baseline.profile(), measured.profile()
        out.function_diff = summary_diff(before, after)
        if not out.function_diff and before.sha256 != after.sha256:
            out.notes.append(
                "calls unchanged per function and per package, but the profile moved (its "
                "digest differs: calls moved between functions of one package or between "
                "callers); the results file (--kerasperf-json) has every function and edge"
            )
            return
    else:
        out.function_diff = diff_counts(baseline.calls_by_function, measured.calls_by_function)
    if not out.function_diff:
        return
    explanation: Explanation | None = None
    if summarized:
        out.points = function_entry_points(
            baseline.profile().functions, measured.profile().functions
        )
        explanation = from_summaries(baseline.profile(), measured.profile())
    elif baseline.call_edges and measured.call_edges:
        out.points = entry_points(
            baseline.calls_by_function,
            baseline.call_edges,
            measured.calls_by_function,
            measured.call_edges,
        )
        explanation = explain(
            baseline.calls_by_function,
            baseline.call_edges,
            measured.calls_by_function,
            measured.call_edges,
        )
    out.explanation = explanation
    made_by = _made_by(explanation)
    if out.calls_delta > 0:
        parts = []
        if made_by:
            parts.append(made_by)
        grown = _grown_functions(out.function_diff)
        if grown:
            parts.append(f"grew: {grown}")
        out.regressions.append(
            Failure(
                "calls",
                f"calls: {measured.calls:,} per call, {against} {baseline.calls:,} "
                f"({signed(out.calls_delta)})" + "".join(f"; {part}" for part in parts),
            )
        )
    elif out.calls_delta < 0:
        out.improved = True
        out.notes.append(
            f"{signed(out.calls_delta)} calls"
            + (f" ({made_by})" if made_by else "")
            + ": record the win (`--kerasperf-update-baseline`)"
        )
    else:
        out.notes.append(
            f"calls unchanged in total but {len(out.function_diff)} functions moved: "
            + _grown_functions(out.function_diff)
        )


def _compare_graph_breaks(
    measured: Record, baseline: Record, out: _AgainstBaseline, against: str = "baseline"
) -> None:
    now, then = measured.graph_breaks, baseline.graph_breaks
    if now is None or then is None:
        return
    out.graph_delta = now.breaks - then.breaks
    out.breaks = break_changes(then, now)
    grown = [c for c in out.breaks if c.after > c.before]
    named = "; ".join(c.describe() for c in grown[:2])
    if out.graph_delta > 0 and not grown:
        named = "no reason's count grew in dynamo's graph-break log"
    if out.graph_delta > 0:
        out.regressions.append(
            Failure(
                "graph_breaks",
                f"graph breaks: {now.breaks}, {against} {then.breaks} ({signed(out.graph_delta)})"
                + (f"; grew: {named}" if named else ""),
            )
        )
    elif out.graph_delta == 0 and out.breaks:
        out.notes.append(f"graph breaks unchanged in total but their reasons moved: {named}")
    elif out.graph_delta < 0:
        out.improved = True
        out.notes.append(
            f"{signed(out.graph_delta)} graph breaks: record the win "
            "(`--kerasperf-update-baseline`)"
        )


def _compare_recompiles(
    measured: Record, baseline: Record, out: _AgainstBaseline, against: str = "baseline"
) -> None:
    """Compile events per call after warm-up: exact, like graph breaks."""
    now, then = measured.recompiles, baseline.recompiles
    if now is None or then is None:
        if now and then is None:
            out.notes.append(
                f"{now} recompiles per call after warm-up; the baseline entry has no count"
                + _causes(measured)
            )
        return
    if now > then:
        out.regressions.append(
            Failure(
                "recompiles",
                f"recompiles: {now} per call after warm-up, {against} {then} "
                f"({signed(now - then)})" + _causes(measured),
            )
        )
    elif now < then:
        out.improved = True
        out.notes.append(
            f"{signed(now - then)} recompiles per call: record the win "
            "(`--kerasperf-update-baseline`)"
        )


def _compare_latency(
    measured: Record, baseline: Record, settings: Settings, out: _AgainstBaseline
) -> None:
    now, then = measured.latency, baseline.latency
    if now is None or then is None:
        return
    if now.device != then.device:
        out.notes.append(
            f"latency not compared: baseline on {then.device}, this run on {now.device}"
        )
        return
    if then.median_ms <= 0:
        return
    out.latency_pct = pct = (now.median_ms / then.median_ms - 1) * 100
    if pct <= settings.latency_tolerance * 100:
        return
    if _latency_gated(measured, settings):
        out.regressions.append(
            Failure(
                "latency",
                f"latency: median {now.median_ms:.3f} ms, baseline {then.median_ms:.3f} ms "
                f"({pct:+.1f}%, tolerance {settings.latency_tolerance:.0%})",
            )
        )
    else:
        out.notes.append(
            f"median latency {pct:+.1f}% vs baseline on {now.device} (not gated on a CPU)"
        )


def _compare_instructions(
    measured: Record, baseline: Record, settings: Settings, out: _AgainstBaseline
) -> None:
    """Instructions per call (callgrind), gated on any device within the tolerance."""
    now = measured.instructions
    if now is None:
        return
    then = baseline.instructions_under(now.tool)
    recorded = baseline.instruction_counts()
    if not recorded:
        out.instructions_skip = "no count in the baseline entry"
        out.notes.append(
            f"instructions not compared: {now.median:,} per call; the baseline entry has no "
            "count (record one with `kerasperf callgrind -- pytest --kerasperf-update-baseline "
            "...`)"
        )
        return
    if then is None:
        tools = ", ".join(c.tool for c in recorded)
        out.instructions_skip = f"counted under {tools} in the baseline entry"
        out.notes.append(
            f"instructions not compared: baseline counted under {tools}, this run under "
            f"{now.tool} (record this machine's count with `kerasperf callgrind -- pytest "
            "--kerasperf-update-baseline ...`: the entry keeps the others)"
        )
        return
    if then.median <= 0:
        return
    out.instructions_pct = pct = (now.median / then.median - 1) * 100
    calls = (
        "calls unchanged"
        if out.calls_delta == 0
        else f"calls {signed(out.calls_delta)}"
        if out.calls_delta is not None
        else ""
    )
    line = (
        f"instructions: {now.median:,} per call, {settings.against} {then.median:,} "
        f"({pct:+.3f}%, tolerance {settings.instructions_tolerance:.3%}); {calls}"
    ).rstrip("; ")
    if pct > settings.instructions_tolerance * 100:
        out.regressions.append(Failure("instructions", line))
    elif pct < -settings.instructions_tolerance * 100:
        out.improved = True
        out.notes.append(f"{line}: record the win (`--kerasperf-update-baseline`)")


def _no_baseline(settings: Settings) -> str:
    """``no baseline for py3.12-cpu (recorded: py3.11-cpu)``, or ``no baseline entry``."""
    if settings.variant is None:
        return "no baseline entry"
    others = [v for v in settings.recorded_variants if v != settings.variant]
    recorded = f" (recorded: {', '.join(others)})" if others else ""
    return f"no baseline for {settings.variant}{recorded}"


def _mismatch_fix(settings: Settings) -> str:
    """What to do about a mismatch: the pinned file to install, the one command to re-record."""
    install = (
        f"install the pinned set (`pip install -r {settings.requirements}`)"
        if settings.requirements
        else "run with the pinned set"
    )
    if settings.rerecord_all:
        return f"{install}, or, if the pins moved on purpose, re-record: `{settings.rerecord_all}`"
    return install


def judge(
    measured: Record,
    baseline: Record | None,
    budgets: Sequence[Budget],
    settings: Settings,
) -> Verdict:
    """The verdict for one test: budgets always; the baseline when it is comparable."""
    failures, notes = _check_budgets(measured, budgets, baseline, settings)
    over_budget = bool(failures)
    out = _AgainstBaseline(regressions=[], notes=notes)
    mismatched: tuple[str, ...] = ()
    not_compared: str | None = None

    if baseline is None:
        not_compared = _no_baseline(settings)
        if settings.updating:
            notes.append(f"{not_compared}: recorded by this run")
        elif settings.strict:
            failures.append(
                Failure(
                    "not_compared",
                    f"{not_compared} (--kerasperf-strict): record one with "
                    "`--kerasperf-update-baseline` or `kerasperf accept`",
                )
            )
        else:
            notes.append(f"{not_compared}: record one with `--kerasperf-update-baseline`")
    else:
        mismatched = settings.mismatch(baseline.environment, measured.environment)
        if mismatched:
            not_compared = "environment differs: " + ", ".join(mismatched)
            line = (
                "baseline measured under another count-relevant environment ("
                + ", ".join(mismatched)
                + "): counts not compared"
            )
            if settings.updating:
                notes.append(line + "; recorded anew by this run")
            elif settings.strict:
                failures.append(
                    Failure(
                        "not_compared",
                        line + " (--kerasperf-strict); " + _mismatch_fix(settings),
                    )
                )
            else:
                notes.append(line + "; " + _mismatch_fix(settings))
        else:
            _compare_calls(measured, baseline, out, settings.against)
            _compare_graph_breaks(measured, baseline, out, settings.against)
            _compare_recompiles(measured, baseline, out, settings.against)
            _compare_latency(measured, baseline, settings, out)
            _compare_instructions(measured, baseline, settings, out)

    if settings.updating:
        notes.extend(f"baseline replaced (was: {failure})" for failure in out.regressions)
        out.regressions = []
    failures.extend(out.regressions)

    status: Status
    if out.regressions:
        status = "regressed"
    elif over_budget:
        status = "over-budget"
    elif baseline is None:
        status = "new"
    elif mismatched:
        status = "mismatch"
    elif out.improved:
        status = "improved"
    else:
        status = "pass"
    return Verdict(
        status=status,
        failures=tuple(failures),
        notes=tuple(notes),
        compared=not_compared is None,
        not_compared=not_compared,
        calls_delta=out.calls_delta,
        graph_breaks_delta=out.graph_delta,
        latency_delta_pct=out.latency_pct,
        instructions_delta_pct=out.instructions_pct,
        instructions_not_compared=(
            None
            if measured.instructions is None or out.instructions_pct is not None
            else out.instructions_skip or not_compared or "not compared"
        ),
        entry_points=out.points,
        explanation=out.explanation,
        function_diff=out.function_diff,
        break_changes=out.breaks,
        mismatched=mismatched,
    )
