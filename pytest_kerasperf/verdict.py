"""Judge one measurement against its baseline entry and its marker budgets.

A pure function of plain records: it knows nothing about cProfile, torch or
pytest, so every rule below is unit-tested without a model.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pytest_kerasperf.record import BreakReason, Budget, Record

Status = Literal["pass", "improved", "regressed", "over-budget", "new", "mismatch"]


@dataclass(frozen=True)
class Settings:
    comparable_fields: tuple[str, ...]  # environment fields that must match to compare counts
    latency_tolerance: float = 0.10  # relative: 0.10 fails a median 10% above the baseline
    gate_latency_on_cpu: bool = False
    updating: bool = False  # --kerasperf-update-baseline: the baseline is being replaced
    require_baseline: bool = False


@dataclass(frozen=True)
class Verdict:
    status: Status
    failures: tuple[str, ...] = ()  # one line each
    notes: tuple[str, ...] = ()
    calls_delta: int | None = None
    graph_breaks_delta: int | None = None
    latency_delta_pct: float | None = None
    function_diff: tuple[tuple[str, int, int], ...] = ()  # (function, baseline, measured)
    new_break_reasons: tuple[BreakReason, ...] = ()
    gone_break_reasons: tuple[BreakReason, ...] = ()
    mismatched: tuple[str, ...] = field(default=())

    @property
    def passed(self) -> bool:
        return not self.failures


def diff_counts(
    before: Mapping[str, int], after: Mapping[str, int]
) -> tuple[tuple[str, int, int], ...]:
    """(function, before, after) for every function whose count changed, biggest change first."""
    changed = [
        (name, before.get(name, 0), after.get(name, 0))
        for name in set(before) | set(after)
        if before.get(name, 0) != after.get(name, 0)
    ]
    changed.sort(key=lambda row: (-abs(row[2] - row[1]), row[0]))
    return tuple(changed)


def mismatched_fields(
    baseline_env: Mapping[str, str | None], env: Mapping[str, str | None], fields: Sequence[str]
) -> tuple[str, ...]:
    return tuple(
        f"{name} {baseline_env.get(name)} -> {env.get(name)}"
        for name in fields
        if baseline_env.get(name) != env.get(name)
    )


def signed(value: int) -> str:
    """``+546`` / ``\u2212546``: a signed count with thousands separators and a true minus."""
    return f"{value:+,}".replace("-", "\u2212")


def _culprits(rows: Sequence[tuple[str, int, int]], limit: int = 3) -> str:
    grown = [(name, new - old) for name, old, new in rows if new > old][:limit]
    return ", ".join(f"{name} ({signed(delta)})" for name, delta in grown)


def _latency_gated(measured: Record, settings: Settings) -> bool:
    return measured.latency is not None and (
        measured.latency.accelerator or settings.gate_latency_on_cpu
    )


def _check_budgets(
    measured: Record, budgets: Sequence[Budget], baseline: Record | None, settings: Settings
) -> tuple[list[str], list[str]]:
    failures: list[str] = []
    notes: list[str] = []
    for budget in budgets:
        name = budget.describe()
        if budget.kind == "calls":
            if budget.function is None:
                value = measured.calls
            else:
                known = set(measured.calls_by_function) | set(
                    baseline.calls_by_function if baseline else ()
                )
                if budget.function not in known:
                    close = difflib.get_close_matches(budget.function, sorted(known), n=1)
                    hint = f"; did you mean {close[0]!r}?" if close else ""
                    failures.append(
                        f"{name}: no function named {budget.function!r} was called{hint}"
                    )
                    continue
                value = measured.calls_by_function.get(budget.function, 0)
            if value > budget.limit:
                failures.append(
                    f"{name}: measured {value:,} ({signed(value - int(budget.limit))} over budget)"
                )
        elif budget.kind == "graph_breaks":
            if measured.graph_breaks is None:
                notes.append(
                    f"{name} not checked: graph breaks are measured in torch compiled mode"
                )
            elif measured.graph_breaks.breaks > budget.limit:
                over = measured.graph_breaks.breaks - int(budget.limit)
                failures.append(
                    f"{name}: measured {measured.graph_breaks.breaks} ({signed(over)} over budget)"
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
                failures.append(f"{line} (+{(median / budget.limit - 1) * 100:.1f}% over budget)")
            else:
                notes.append(f"{line}: over budget, not gated on a CPU")
    return failures, notes


def judge(
    measured: Record,
    baseline: Record | None,
    budgets: Sequence[Budget],
    settings: Settings,
) -> Verdict:
    """The verdict for one test: budgets always; the baseline when it is comparable."""
    failures, notes = _check_budgets(measured, budgets, baseline, settings)
    over_budget = bool(failures)
    regressions: list[str] = []
    improved = False
    calls_delta = graph_delta = None
    latency_pct = None
    function_diff: tuple[tuple[str, int, int], ...] = ()
    new_reasons: tuple[BreakReason, ...] = ()
    gone_reasons: tuple[BreakReason, ...] = ()
    mismatched: tuple[str, ...] = ()

    if baseline is None:
        if settings.updating:
            notes.append("no baseline entry: recorded by this run")
        elif settings.require_baseline:
            failures.append("no baseline entry: run `--kerasperf-update-baseline` to record one")
        else:
            notes.append("no baseline entry: run `--kerasperf-update-baseline` to record one")
    else:
        mismatched = mismatched_fields(
            baseline.environment, measured.environment, settings.comparable_fields
        )
        if mismatched:
            notes.append(
                "baseline measured under other versions ("
                + ", ".join(mismatched)
                + "): counts not compared; re-run `--kerasperf-update-baseline` with the pinned set"
            )
        else:
            calls_delta = measured.calls - baseline.calls
            function_diff = diff_counts(baseline.calls_by_function, measured.calls_by_function)
            if calls_delta > 0:
                culprits = _culprits(function_diff)
                regressions.append(
                    f"calls: {measured.calls:,} per call, baseline {baseline.calls:,} "
                    f"({signed(calls_delta)})" + (f"; grew: {culprits}" if culprits else "")
                )
            elif calls_delta < 0:
                improved = True
                notes.append(
                    f"{signed(calls_delta)} calls: run `--kerasperf-update-baseline` to lock it in"
                )
            elif function_diff:
                notes.append(
                    f"calls unchanged in total but {len(function_diff)} functions moved: "
                    + _culprits(function_diff)
                )
            if measured.graph_breaks is not None and baseline.graph_breaks is not None:
                graph_delta = measured.graph_breaks.breaks - baseline.graph_breaks.breaks
                before = set(baseline.graph_breaks.reasons)
                after = set(measured.graph_breaks.reasons)
                new_reasons = tuple(sorted(after - before))
                gone_reasons = tuple(sorted(before - after))
                if graph_delta > 0:
                    first = (
                        f"; new: {new_reasons[0].reason} at {new_reasons[0].frame}"
                        if new_reasons
                        else ""
                    )
                    regressions.append(
                        f"graph breaks: {measured.graph_breaks.breaks}, baseline "
                        f"{baseline.graph_breaks.breaks} ({signed(graph_delta)}){first}"
                    )
                elif graph_delta < 0:
                    improved = True
                    notes.append(
                        f"{signed(graph_delta)} graph breaks: run `--kerasperf-update-baseline` "
                        "to lock it in"
                    )
            latency_pct, latency_line = _compare_latency(measured, baseline, settings)
            if latency_line:
                (regressions if latency_line.startswith("latency:") else notes).append(latency_line)

    if settings.updating:
        notes.extend(f"baseline replaced (was: {line})" for line in regressions)
        regressions = []
    failures.extend(regressions)

    status: Status
    if regressions:
        status = "regressed"
    elif over_budget:
        status = "over-budget"
    elif baseline is None:
        status = "new"
    elif mismatched:
        status = "mismatch"
    elif improved:
        status = "improved"
    else:
        status = "pass"
    return Verdict(
        status=status,
        failures=tuple(failures),
        notes=tuple(notes),
        calls_delta=calls_delta,
        graph_breaks_delta=graph_delta,
        latency_delta_pct=latency_pct,
        function_diff=function_diff,
        new_break_reasons=new_reasons,
        gone_break_reasons=gone_reasons,
        mismatched=mismatched,
    )


def _compare_latency(
    measured: Record, baseline: Record, settings: Settings
) -> tuple[float | None, str | None]:
    """(delta %, a failure line starting with 'latency:' or a note) for the median."""
    now, then = measured.latency, baseline.latency
    if now is None or then is None:
        return None, None
    if now.device != then.device:
        return None, f"latency not compared: baseline on {then.device}, this run on {now.device}"
    if then.median_ms <= 0:
        return None, None
    pct = (now.median_ms / then.median_ms - 1) * 100
    slower = pct > settings.latency_tolerance * 100
    if slower and _latency_gated(measured, settings):
        return pct, (
            f"latency: median {now.median_ms:.3f} ms, baseline {then.median_ms:.3f} ms "
            f"({pct:+.1f}%, tolerance {settings.latency_tolerance:.0%})"
        )
    if slower:
        return pct, (f"median latency {pct:+.1f}% vs baseline on {now.device} (not gated on a CPU)")
    return pct, None
