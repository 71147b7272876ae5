"""Judge one measurement against its baseline entry and its marker budgets.

A pure function of plain records: it knows nothing about cProfile, torch or
pytest, so every rule is unit-tested without a model.  The rules of each
metric live in its module (``metrics/``); here is only what is common: the
budgets first, then whether there is anything to compare with, then each
metric's change (``changes.diff``) and what it means, then the status.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_kerasperf import changes
from pytest_kerasperf.metrics import BY_NAME, METRICS
from pytest_kerasperf.metrics.base import NOT_COMPARED, WIN_NOT_RECORDED, Failure, Judgement
from pytest_kerasperf.record import Budget, Record
from pytest_kerasperf.settings import Settings
from pytest_kerasperf.verdict import Status, Verdict

__all__ = ["judge"]


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


def _nothing_to_compare(settings: Settings) -> tuple[str, Judgement]:
    """(why not compared, what it says) when there is no baseline entry (or REF measured none)."""
    if settings.missing is not None:
        reason = settings.missing
        if settings.strict:
            strict = f"not compared: {reason} (--kerasperf-strict)"
            return reason, Judgement(failures=(Failure(NOT_COMPARED, strict),))
        return reason, Judgement(notes=(f"not compared: {reason}",))
    reason = _no_baseline(settings)
    if settings.updating:
        return reason, Judgement(notes=(f"{reason}: recorded by this run",))
    if settings.strict:
        line = (
            f"{reason} (--kerasperf-strict): record one with `--kerasperf-update-baseline` or "
            "`kerasperf accept`"
        )
        return reason, Judgement(failures=(Failure(NOT_COMPARED, line),))
    return reason, Judgement(notes=(f"{reason}: record one with `--kerasperf-update-baseline`",))


def _mismatch(mismatched: tuple[str, ...], settings: Settings) -> Judgement:
    line = (
        "baseline measured under another count-relevant environment ("
        + ", ".join(mismatched)
        + "): counts not compared"
    )
    if settings.updating:
        return Judgement(notes=(line + "; recorded anew by this run",))
    if settings.strict:
        text = line + " (--kerasperf-strict); " + _mismatch_fix(settings)
        return Judgement(failures=(Failure(NOT_COMPARED, text),))
    return Judgement(notes=(line + "; " + _mismatch_fix(settings),))


def _unrecorded(win: str, settings: Settings) -> Failure:
    """A win the baseline entry does not hold yet (--kerasperf-ratchet): what improved, by
    how much, and the command that records it."""
    how = f"`{settings.record_win}`" if settings.record_win else "`--kerasperf-update-baseline`"
    if settings.accept_from:
        how += f", or `kerasperf accept {settings.accept_from}` with this job's results"
    text = f"{win}: a win not recorded (--kerasperf-ratchet); record it: {how}"
    return Failure(WIN_NOT_RECORDED, text)


def judge(
    measured: Record,
    baseline: Record | None,
    budgets: Sequence[Budget],
    settings: Settings,
) -> Verdict:
    """The verdict for one test: budgets always; the baseline when it is comparable."""
    checked = Judgement()
    applying = [b for b in budgets if b.applies(measured.backend, measured.mode)]
    for metric in METRICS:
        checked += metric.health(measured, [b for b in applying if b.kind == metric.name])
    for budget in applying:
        checked += BY_NAME[budget.kind].check(budget, measured, baseline, settings)
    over_budget = bool(checked.failures)
    against = Judgement()
    mismatched: tuple[str, ...] = ()
    not_compared: str | None = None
    moved: tuple[changes.AnyChange, ...] = ()
    unrecorded: tuple[Failure, ...] = ()  # --kerasperf-ratchet: the wins not recorded
    if baseline is None:
        not_compared, said = _nothing_to_compare(settings)
        checked += said
    elif mismatched := settings.mismatch(baseline.environment, measured.environment):
        not_compared = "environment differs: " + ", ".join(mismatched)
        checked += _mismatch(mismatched, settings)
    else:
        diff = changes.diff(baseline, measured)
        moved = diff.changes
        for metric in METRICS:
            change = diff.of(metric)
            if change is None:
                said = metric.judge_missing(measured, baseline, settings)
            else:
                said = metric.judge(change, measured, baseline, settings)
            against += said
            if metric.ratchet and settings.ratchet and not settings.updating:
                unrecorded += tuple(_unrecorded(win, settings) for win in said.wins)

    regressions = against.failures
    notes = checked.notes + against.notes
    if settings.updating:
        notes += tuple(f"baseline replaced (was: {failure})" for failure in regressions)
        regressions = ()
    status: Status
    if regressions:
        status = "regressed"
    elif over_budget:
        status = "over-budget"
    elif unrecorded:
        status = "win-not-recorded"
    elif baseline is None:
        status = "new"
    elif mismatched:
        status = "mismatch"
    elif against.wins:
        status = "improved"
    else:
        status = "pass"
    return Verdict(
        status=status,
        failures=checked.failures + regressions + unrecorded,
        notes=notes,
        compared=not_compared is None,
        not_compared=not_compared,
        mismatched=mismatched,
        changes=moved,
    )
