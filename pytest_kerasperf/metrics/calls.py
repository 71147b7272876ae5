"""Python calls per workload call (cProfile): exact, in total, per function and per edge.

The count pass calls the workload under cProfile until the counts repeat
(``measure.calls.count_calls``).  Against a baseline entry, more calls fail
the test, naming where they enter and, exactly, which callers made them
(``explain``); fewer pass with a note to record the win.  Its record part is
``calls``, the whole profile (``calls_by_function``, ``call_edges``) where
measured, and the summary an entry keeps (``calls_profile.ProfileSummary``).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from pytest_kerasperf.budget import Budget, MarkerError
from pytest_kerasperf.codec import Count
from pytest_kerasperf.culprits import OWN_CALLS, EntryPoint
from pytest_kerasperf.explain import Explanation
from pytest_kerasperf.formatting import signed
from pytest_kerasperf.metrics.base import NOTHING, Change, Metric, count, noted, scoped
from pytest_kerasperf.parts.calls import ProfileSummary, is_project_code

if TYPE_CHECKING:
    from pytest_kerasperf.measure.context import Measuring
    from pytest_kerasperf.metrics.base import Judgement
    from pytest_kerasperf.record import Record
    from pytest_kerasperf.settings import Settings

GROUPS_IN_LINE = 2
FUNCTIONS_IN_LINE = 3


def max_calls(
    n: int, *, function: str | None = None, backend: str | None = None, mode: str | None = None
) -> Budget:
    """max_calls(n, *, function=None, backend=None, mode=None): fail if one workload
    call makes more than n Python calls (cProfile), in total or, with function=, in
    that function (e.g. "isinstance", "keras/src/ops/operation.py:Operation.__call__");
    backend= / mode= ("eager" or "compiled") limit it to that backend / mode."""
    limit = count(n, "n")
    if function is not None and (not isinstance(function, str) or not function):
        raise MarkerError(f"function must be a non-empty str, got {function!r}")
    return scoped("calls", limit, backend, mode, function=function)


def close_functions(wanted: str, known: Collection[str], n: int = 3) -> list[str]:
    """The profile's functions ``wanted`` may mean: those whose qualname (after ``:``) is it
    or ends in ``.wanted`` (``update_state`` -> ``mylib/blocks.py:MeanAbsLogit.update_state``),
    else the closest names (difflib), whole, by qualname or by its last part."""
    names = sorted(known)
    tail = wanted.rpartition(":")[2]
    suffix = [k for k in names if (q := k.rpartition(":")[2]) == tail or q.endswith("." + tail)]
    if suffix:
        return suffix[:n]
    by_part: dict[str, list[str]] = {}
    for name in names:
        qualname = name.rpartition(":")[2]
        for part in {name, qualname, qualname.rpartition(".")[2]}:
            by_part.setdefault(part, []).append(name)
    close = difflib.get_close_matches(wanted, names, n=n)
    for part in difflib.get_close_matches(tail, sorted(by_part), n=n):
        close += by_part[part]
    return list(dict.fromkeys(close))[:n]


class CallsChange(Change, frozen=True, tag="calls"):
    """Calls per workload call before and after, and where they changed.

    ``function_diff``: (function, before, after) for every function (or, against a
    summary, package as ``torch.*``) whose count moved, biggest change first;
    ``entry_points`` and ``explanation``: where the change entered and who made it,
    exactly; ``digest_moved``: the counts per function are equal but the profile's
    digest is not (calls moved between callers, or between functions of a package).
    """

    before: Count
    after: Count
    function_diff: tuple[tuple[str, int, int], ...] = ()
    entry_points: tuple[EntryPoint, ...] = ()
    explanation: Explanation | None = None
    digest_moved: bool = False

    @property
    def delta(self) -> int:
        return self.after - self.before

    @property
    def counts_moved(self) -> bool:
        return bool(self.delta or self.entry_points or self.digest_moved)

    def where(self, short: Callable[[str], str]) -> tuple[str, ...]:
        """The explanation in one line where it has groups or moves, else the entry points."""
        explained = self.explanation
        if explained is not None and (explained.groups or explained.moves):
            return (explained.line(short),)
        return tuple(
            f"{f'{short(p.via)} → ' if p.via else ''}{short(p.caller)} → {short(p.callee)} "
            f"{p.before:,}→{p.after:,}× (≈{signed(p.calls_delta)})"
            for p in self.entry_points
        )


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


def summary_diff(before: ProfileSummary, after: ProfileSummary) -> tuple[tuple[str, int, int], ...]:
    """``diff_counts`` of two profiles' summaries: functions, and packages as ``torch.*``."""
    counts_before = {name: calls for name, (calls, _) in before.functions.items()}
    counts_after = {name: calls for name, (calls, _) in after.functions.items()}
    counts_before.update({f"{package}.*": n for package, n in before.outside.items()})
    counts_after.update({f"{package}.*": n for package, n in after.outside.items()})
    return diff_counts(counts_before, counts_after)


def _grown_functions(rows: Sequence[tuple[str, int, int]], limit: int = FUNCTIONS_IN_LINE) -> str:
    grown = [(name, new - old) for name, old, new in rows if new > old][:limit]
    return ", ".join(f"{name} ({signed(delta)})" for name, delta in grown)


def _made_by(explanation: Explanation | None) -> str:
    """``made by (sums to +7): Layer.__call__ +7 (check 0→7)``: the exact explanation."""
    if explanation is None or not explanation.groups:
        return ""
    text = explanation.line(groups=GROUPS_IN_LINE, moves=1, separator=", ")
    return f"made by (sums to {signed(explanation.total)}): {text}"


DIGEST_NOTE = (
    "calls unchanged per function and per package, but the profile moved (its digest differs: "
    "calls moved between functions of one package or between callers); the results file "
    "(--kerasperf-json) has every function and edge"
)


TOTALS_DIGEST_NOTE = (
    "calls unchanged, but the profile moved (its digest differs from the census entry's: calls "
    "moved between functions or callers); the results file (--kerasperf-json) has every "
    "function and edge"
)


def _project_edges(record: Record) -> dict[str, dict[str, int]]:
    """The measured profile's edges from the user's own code outside Keras (``is_project_code``:
    a package of theirs, not an installed library), so that "made by" can name it; empty for a
    baseline entry, which keeps no edge."""
    return {
        caller: {callee: int(n) for callee, n in callees.items()}
        for caller, callees in record.call_edges.items()
        if is_project_code(caller)
    }


class Calls(
    Metric,
    name="calls",
    marker=max_calls,
    exact=True,
    change=CallsChange,
    column="calls (Δ)",
    series="Python calls per workload call",
):
    next_step = (
        "next: find the new calls ('made by' names each caller whose own calls changed, "
        "the biggest first); if the change is meant, re-record this test's entry (below) "
        "and say why in the pull request"
    )
    junit_property = "kerasperf_calls"

    def check(
        self, budget: Budget, measured: Record, baseline: Record | None, settings: Settings
    ) -> Judgement:
        if budget.function is None:
            value = measured.calls
        else:
            known = set(measured.calls_by_function)
            if baseline is not None:
                known |= set(baseline.calls_by_function) | set(baseline.profile().functions)
            if budget.function not in known:
                close = close_functions(budget.function, known)
                hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
                name = self.describe(budget)
                return self.failed(
                    f"{name}: no function named {budget.function!r} was called{hint}"
                )
            value = measured.calls_by_function.get(budget.function, 0)
        return self.over_budget(budget, value, f"measured {value:,}")

    def measure(self, run: Measuring) -> None:
        """The count pass: cProfile until the counts repeat (``measure.calls.count_calls``)."""
        from pytest_kerasperf.measure.calls import CountsUnstable, count_calls

        try:
            counts = count_calls(run.workload)
        except CountsUnstable as error:
            run.fail(f"kerasperf: {error}{run.why_unstable()}")
        run.fields.update(
            {
                "calls": counts.calls,
                "calls_by_function": dict(counts.calls_by_function),
                "call_edges": {caller: dict(e) for caller, e in counts.call_edges.items()},
            }
        )

    def compare(self, before: Record, after: Record) -> CallsChange:
        from pytest_kerasperf.culprits import entry_points, function_entry_points
        from pytest_kerasperf.explain import explain
        from pytest_kerasperf.explain_summaries import from_summaries

        summarized = before.is_compact or after.is_compact
        old, new = before.profile(), after.profile()
        if before.totals_only or after.totals_only:  # a census entry: no function to diff
            return CallsChange(before.calls, after.calls, digest_moved=old.sha256 != new.sha256)
        if summarized:
            rows = summary_diff(old, new)
        else:
            rows = diff_counts(before.calls_by_function, after.calls_by_function)
        moved = old.sha256 != new.sha256
        if not rows:
            return CallsChange(before.calls, after.calls, digest_moved=moved)
        points: tuple[EntryPoint, ...] = ()
        explanation = None
        if summarized:
            points = function_entry_points(old.functions, new.functions)
            explanation = from_summaries(old, new, _project_edges(after))
        elif before.call_edges and after.call_edges:
            args = (
                before.calls_by_function,
                before.call_edges,
                after.calls_by_function,
                after.call_edges,
            )
            points = entry_points(*args)
            explanation = explain(*args)
        return CallsChange(before.calls, after.calls, rows, points, explanation)

    def judge(
        self, change: Change, measured: Record, baseline: Record, settings: Settings
    ) -> Judgement:
        assert isinstance(change, CallsChange)
        if baseline.totals_only or measured.totals_only:
            return self._judge_totals(change, settings)
        if not change.function_diff:
            summarized = baseline.is_compact or measured.is_compact
            return noted(DIGEST_NOTE) if summarized and change.digest_moved else NOTHING
        made_by = _made_by(change.explanation)
        if change.delta > 0:
            parts = [made_by] if made_by else []
            grown = _grown_functions(change.function_diff)
            if grown:
                parts.append(f"grew: {grown}")
            said = "".join(f"; {part}" for part in parts)
            return self.more("calls", " per call", change.before, change.after, settings, said)
        if change.delta < 0:
            return self.fewer(
                "calls", change.before, change.after, f" ({made_by})" if made_by else ""
            )
        moved = len(change.function_diff)
        grown = _grown_functions(change.function_diff)
        return noted(f"calls unchanged in total but {moved} functions moved: {grown}")

    def _judge_totals(self, change: CallsChange, settings: Settings) -> Judgement:
        """Against a census table's entry (totals only): more calls fail, naming the command that
        names the functions (the same tests at a base ref); fewer are a win; equal calls with
        another digest are a note."""
        if change.delta > 0:
            test = f' -k "{settings.test}"' if settings.test else ""
            said = (
                "; the census entry keeps totals only: name the functions with pytest --kerasperf "
                f"--kerasperf-compare-ref <base ref>{test}"
            )
            return self.more("calls", " per call", change.before, change.after, settings, said)
        if change.delta < 0:
            return self.fewer("calls", change.before, change.after)
        return noted(TOTALS_DIGEST_NOTE) if change.digest_moved else NOTHING

    def details(self, change: Change | None, record: Record | None) -> list[str]:
        """Where calls changed (the explanation, else the entry points) and the diff of
        calls by function."""
        calls = change if isinstance(change, CallsChange) else CallsChange(0, 0)
        lines = []
        if calls.explanation is not None and calls.explanation.groups:
            lines.append(
                "where calls changed (per workload call; the groups sum exactly to the change):"
            )
            lines += [f"  {line}" for line in calls.explanation.lines(items=MAX_ITEMS)]
        elif calls.entry_points:
            if all(point.callee == OWN_CALLS for point in calls.entry_points):
                # Against a compact baseline entry: function-level culprits, exact.
                lines.append(
                    "where calls changed (functions called as often as before whose own calls "
                    "moved, per workload call):"
                )
            else:
                lines.append(
                    "where calls changed (caller → callee, times called per workload call; "
                    "≈: cProfile keeps edges, not paths):"
                )
            shown = calls.entry_points[:MAX_ENTRY_POINTS]
            lines += [f"  {point.describe()}" for point in shown]
            lines += _more(len(calls.entry_points) - MAX_ENTRY_POINTS)
        if calls.function_diff:
            lines.append("calls by function vs baseline (changed only, biggest change first):")
            rows = calls.function_diff[:MAX_DIFF_ROWS]
            width = max(len(signed(new - old)) for _, old, new in rows)
            for name, old, new in rows:
                lines.append(f"  {signed(new - old):>{width}}  {name}  ({old:,} -> {new:,})")
            lines += _more(len(calls.function_diff) - MAX_DIFF_ROWS)
        return lines

    def junit(self, record: Record, change: Change | None) -> list[tuple[str, object]]:
        delta = change.delta if isinstance(change, CallsChange) else None
        return [*super().junit(record, change), ("kerasperf_calls_delta", delta)]

    def value(self, record: Record) -> int:
        return record.calls

    def text(self, value: int | float, change: Change | None) -> str:
        delta = change.delta if isinstance(change, CallsChange) else 0
        return f"{value:,}" + (f" ({signed(delta)})" if delta else "")

    def counts_moved(self, before: Record, after: Record) -> bool:
        if before.totals_only or after.totals_only:  # a census entry: totals and the digest
            return before.calls != after.calls or before.profile_sha256 != after.profile_sha256
        return before.calls != after.calls or before.profile() != after.profile()

    def moved_words(self, before: Record, after: Record) -> list[str]:
        if before.calls != after.calls:
            delta = after.calls - before.calls
            return [f"calls {before.calls:,} -> {after.calls:,} ({signed(delta)})"]
        if not self.counts_moved(before, after):
            return []
        if before.totals_only or after.totals_only:
            return ["the profile (its digest; calls unchanged)"]
        return ["calls per function or call edges"]


def _more(hidden: int) -> list[str]:
    return [f"  ... {hidden} more (see --kerasperf-json)"] if hidden > 0 else []


#: What a test's report section shows of a change of calls; the rest is in --kerasperf-json.
MAX_DIFF_ROWS = 25
MAX_ENTRY_POINTS = 10
MAX_ITEMS = 5  # an explanation group's biggest own-count changes shown

METRIC = Calls()
