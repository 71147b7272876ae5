"""What every metric is: the shape of one module of ``metrics/``.

A metric (calls, graph breaks, recompiles, latency, instructions, the plain
twin's overhead) owns, in its own module: its marker (a typed function whose
signature is the marker's API), the check of that marker's budget, its
measuring pass, its part of the record (typed, so that its codec and JSON
schema are generated), ``compare(before, after) -> Change``, what a change
means against a baseline entry (its failure kind is its name), its rule for
rewriting a baseline entry, and its words in the run's account and closing
lines.  ``metrics/__init__.py`` lists them; everything else loops over that
list (pytest-codspeed's ``instruments/`` and pytest-benchmark's hookspecs are
the model).

This module imports nothing heavy: markers are parsed in every pytest process.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Protocol, TypeVar

import msgspec

from pytest_kerasperf.budget import BACKENDS, FAILURE_KINDS, MODES, Budget, MarkerError, scope
from pytest_kerasperf.formatting import signed

if TYPE_CHECKING:
    from pytest_kerasperf.measure.context import Measuring, ToCompile
    from pytest_kerasperf.record import Record
    from pytest_kerasperf.settings import Settings
#: The failure of a test whose counts could not be compared (under --kerasperf-strict).
NOT_COMPARED = "not_compared"
#: The failure of a win the baseline entry does not hold yet (under --kerasperf-ratchet).
WIN_NOT_RECORDED = "win_not_recorded"
#: What a failure is about (``metrics.FAILURE_KINDS``); another kind in a file is refused.
FailureKind = Annotated[str, msgspec.Meta(pattern=f"^({'|'.join(FAILURE_KINDS)})$")]


def count(value: object, what: str) -> int:
    """A marker's non-negative int argument, or MarkerError."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise MarkerError(f"{what} must be a non-negative int, got {value!r}")
    return value


def scoped(kind: str, limit: float, backend: object, mode: object, **extra: Any) -> Budget:
    """A budget of ``kind`` scoped to ``backend=`` / ``mode=`` (checked)."""
    return Budget(
        kind,
        limit,
        backend=scope(backend, "backend", BACKENDS),
        mode=scope(mode, "mode", MODES),
        **extra,
    )


def keywords_text(budget: Budget) -> str:
    """``, function='isinstance', backend='torch'``: a budget's keyword arguments as its
    marker was written (``metric=`` where it is not the default)."""
    metric = None if budget.metric == "latency" else budget.metric
    return "".join(
        f", {name}={value!r}"
        for name, value in (
            ("function", budget.function),
            ("metric", metric),
            ("backend", budget.backend),
            ("mode", budget.mode),
        )
        if value is not None
    )


class Failure(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One failing metric or budget: what it is about, and the line that says it.

    The kind (a metric's name, or ``not_compared``), not the text, is what code
    looks at; the text is for the reader.
    """

    kind: FailureKind
    text: str  # one line, without the ``kerasperf `` prefix of the report

    def __str__(self) -> str:
        return self.text


class Judgement(msgspec.Struct, frozen=True):
    """What one metric says about one measurement: failures, notes, and its wins (what
    improved against the baseline, by how much: ``calls 16,003 → 15,467 (−536)``)."""

    failures: tuple[Failure, ...] = ()
    notes: tuple[str, ...] = ()
    wins: tuple[str, ...] = ()

    def __add__(self, other: Judgement) -> Judgement:
        return Judgement(
            self.failures + other.failures,
            self.notes + other.notes,
            self.wins + other.wins,
        )


NOTHING = Judgement()


def noted(*notes: str) -> Judgement:
    """Notes, nothing failing."""
    return Judgement(notes=notes)


class Change(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="metric"):
    """What moved in one metric between two records (``Metric.compare``).

    Each metric's change is a subclass tagged with the metric's name, so a
    verdict's changes travel as one list of a tagged union.
    """

    @property
    def counts_moved(self) -> bool:
        """Did an exact count move (a noisy metric's change never says so)?"""
        return False

    def where(self, short: Callable[[str], str]) -> tuple[str, ...]:
        """Where it moved, one short line each (functions named by ``short``), for the
        views of a history (a sweep's ``where it changed``, bisect's ``where:``)."""
        return ()


C = TypeVar("C", bound=Change)


class JudgedVerdict(Protocol):
    """What an account reads of a test's verdict (``verdict.Verdict`` is one)."""

    @property
    def not_compared(self) -> str | None: ...

    def change(self, kind: type[C]) -> C | None: ...


class Judged(Protocol):
    """What a metric's account reads of one perf test's result (``outcome.Outcome`` is one):
    typed here, below the outcome, so that no metric imports the modules built on it."""

    @property
    def record(self) -> Record: ...

    @property
    def verdict(self) -> JudgedVerdict: ...

    @property
    def latency_not_measured(self) -> str | None: ...


class Metric:
    """One metric.  Subclasses override what applies to them; the defaults do nothing.

    What it is, it says where it is declared (``class Calls(Metric, name="calls", ...)``)."""

    name: ClassVar[str]  # also the kind of its failures
    #: the marker's typed function (its signature is the marker's API, its docstring the
    #: ``--markers`` help) and its name (``max_calls``), or None
    marker_function: ClassVar[Callable[..., Budget] | None] = None
    marker_name: ClassVar[str | None] = None
    #: does a change of this metric count as "the counts moved" (exact metrics)?
    exact: ClassVar[bool] = False
    #: is a win of this metric that was not recorded a failure under --kerasperf-ratchet?
    #: (by default, where it is exact; latency is noise-bound: never)
    ratchet: ClassVar[bool] = False
    #: the types of its ``compare`` result and of its part of the run's account (the codec's
    #: tagged unions are made of these)
    change_type: ClassVar[type[Change] | None] = None
    account_type: ClassVar[type[MetricAccount] | None] = None
    #: its column of the summary table (``calls (Δ)``), or None
    column: ClassVar[str | None] = None
    #: how its marker's limit is written (``1,740``)
    limit_format: ClassVar[str] = "{:,.0f}"
    #: the ``next: ...`` line of its failure against the baseline (``advice``), or None where
    #: the generic lines say it; ``next_step_on_budget``: of a budget exceeded too
    next_step: ClassVar[str | None] = None
    next_step_on_budget: ClassVar[bool] = False
    #: what its ``value`` is, as a chart's axis says it (``graph breaks per forward``); a
    #: metric that says it is followed over commits by the lab (sweeps, bisect, per-PR tables)
    series: ClassVar[str | None] = None
    #: its name in words (``graph breaks``)
    label: ClassVar[str]
    #: its junitxml property, of its ``value`` (``kerasperf_calls``), or None
    junit_property: ClassVar[str | None] = None

    def __init_subclass__(
        cls,
        *,
        name: str,
        marker: Callable[..., Budget] | None = None,
        exact: bool = False,
        ratchet: bool | None = None,
        change: type[Change] | None = None,
        account: type[MetricAccount] | None = None,
        column: str | None = None,
        limit_format: str = "{:,.0f}",
        series: str | None = None,
    ) -> None:
        super().__init_subclass__()
        cls.name, cls.exact, cls.column, cls.limit_format = name, exact, column, limit_format
        cls.series, cls.label = series, name.replace("_", " ")
        cls.ratchet = exact if ratchet is None else ratchet
        cls.change_type, cls.account_type = change, account
        if marker is not None:
            cls.marker_function, cls.marker_name = staticmethod(marker), marker.__name__

    # ---- the marker
    def describe(self, budget: Budget) -> str:
        """The budget as its marker was written: ``max_calls(1,740, backend='torch')``."""
        limit = self.limit_format.format(budget.limit)
        return f"{self.marker_name}({limit}{keywords_text(budget)})"

    def check(
        self, budget: Budget, measured: Record, baseline: Record | None, settings: Settings
    ) -> Judgement:
        """The budget against the measurement (every run, baseline or not)."""
        return NOTHING

    def health(self, measured: Record, budgets: Sequence[Budget]) -> Judgement:
        """What fails a measurement with or without a marker (its budgets of this metric
        that apply are given, for the failure's name): a compiler that gave up."""
        return NOTHING

    def counts_gave_up(self, measured: Record) -> str | None:
        """Why the frames a compiler gave up on are this metric's cost, counted and gated
        here rather than as compile health, or None."""
        return None

    # ---- what it says
    def failed(self, text: str) -> Judgement:
        """One failure of this metric."""
        return Judgement(failures=(Failure(self.name, text),))

    def over_budget(self, budget: Budget, value: int, what: str, said: str = "") -> Judgement:
        """``max_calls(1,740): measured 1,800 (+60 over budget)``, or NOTHING within it."""
        if value <= budget.limit:
            return NOTHING
        over = signed(value - int(budget.limit))
        return self.failed(f"{self.describe(budget)}: {what} ({over} over budget){said}")

    def not_checked(self, budget: Budget, why: str) -> Judgement:
        """The note of a budget this measurement cannot check."""
        return noted(f"{self.describe(budget)} not checked: {why}")

    @staticmethod
    def won(note: str, win: str) -> Judgement:
        """A win against the baseline: the note ``{note}: record the win (...)``, and the win."""
        return Judgement(
            notes=(f"{note}: record the win (`--kerasperf-update-baseline`)",), wins=(win,)
        )

    def fewer(self, what: str, before: int, after: int, said: str = "") -> Judgement:
        """An exact count went down: ``-3 graph breaks: record the win (...)``, and the win
        ``graph breaks 5 → 2 (-3)``; ``said`` follows the count in the note."""
        delta = signed(after - before)
        return self.won(f"{delta} {what}{said}", f"{what} {before:,} → {after:,} ({delta})")

    def more(
        self, what: str, per: str, before: int, after: int, settings: Settings, said: str = ""
    ) -> Judgement:
        """An exact count went up: ``calls: 1,800 per call, baseline 1,740 (+60)...``."""
        delta = signed(after - before)
        return self.failed(f"{what}: {after:,}{per}, {settings.against} {before:,} ({delta}){said}")

    # ---- measuring
    def before_compile(self, backend: str, target: ToCompile) -> object | None:
        """What it takes of a function the test is about to compile, before the compile,
        or None (graph breaks: ``torch._dynamo.explain``, which resets the compiler).  The
        handle keeps it with the compiled function, and ``measure`` finds it in
        ``run.taken(name)`` for every test that uses the function."""
        return None

    def measure(self, run: Measuring) -> None:
        """Its pass over the workload: put its part of the record into ``run.fields``."""

    # ---- comparing two records
    def compare(self, before: Record, after: Record) -> Change | None:
        """What moved between two records of one test; None where nothing is comparable."""
        return None

    def judge(
        self, change: Change, measured: Record, baseline: Record, settings: Settings
    ) -> Judgement:
        """What the change means against a baseline entry (or REF)."""
        return NOTHING

    def judge_missing(self, measured: Record, baseline: Record, settings: Settings) -> Judgement:
        """Measured, but the baseline has nothing to compare with (``compare`` gave None)."""
        return NOTHING

    def not_compared(self, measured: Record, change: Change | None) -> str | None:
        """Why a value this run measured was not compared (counted in the account), or None."""
        return None

    # ---- rewriting a baseline entry
    def counts_moved(self, before: Record, after: Record) -> bool:
        """An exact metric: do the two records differ?"""
        return False

    def moved(self, before: Record, after: Record, settings: Settings) -> bool:
        """A noisy metric: did it move beyond its tolerance (so the entry is rewritten)?"""
        return False

    def merge(
        self, before: Record, after: Record, counts_moved: bool, settings: Settings
    ) -> Record:
        """The entry to store: ``after``, with what of ``before`` this metric keeps."""
        return after

    def moved_words(self, before: Record, after: Record) -> list[str]:
        """What moved, for the ``updated`` line of a rewritten entry."""
        return []

    # ---- reporting
    def change_in(self, verdict: JudgedVerdict) -> Change | None:
        """Its change in a verdict, or None."""
        return verdict.change(self.change_type) if self.change_type else None

    def advice(self, budget: bool) -> str | None:
        """The ``next: ...`` line for its failure (``budget``: a marker's budget exceeded,
        else a move against the baseline), or None where the generic lines say it."""
        return self.next_step if self.next_step_on_budget or not budget else None

    def details(self, change: Change | None, record: Record | None) -> list[str]:
        """Its lines of a test's report section, after the failures and notes."""
        return []

    def junit(self, record: Record, change: Change | None) -> list[tuple[str, object]]:
        """Its ``kerasperf_*`` properties for junitxml (``--kerasperf-junit-properties``); one
        of value None is left out of the file."""
        return [(self.junit_property, self.value(record))] if self.junit_property else []

    def cell(self, record: Record, change: Change | None) -> str:
        """Its cell of the summary table (``16,003 (+546)``): its value and change, or ``-``."""
        value = self.value(record)
        return "-" if value is None else self.text(value, change)

    # ---- its value over commits (the lab's sweeps, bisect and per-PR tables)
    def value(self, record: Record) -> int | float | None:
        """Its number in a record, or None where the record did not measure it."""
        return None

    def text(self, value: int | float, change: Change | None) -> str:
        """A value with its change, as a table's cell shows it (``5 (+1)``)."""
        return self.limit_format.format(value)

    # ---- the run's account
    def account(self, outcomes: Sequence[Judged], settings: Settings) -> MetricAccount | None:
        """Its part of the run's account, or None where this run has nothing to say."""
        return None


class MetricAccount(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="metric"):
    """A metric's part of the run's account; its closing line and strict problems."""

    def closing_line(self) -> tuple[str, bool] | None:
        """(line, is it a problem) for the end of the run, or None."""
        return None

    def strict_problems(self, updating: bool) -> list[str]:
        """What fails a --kerasperf-strict run."""
        return []


def counted(counts: Mapping[str, int]) -> str:
    """``reason: n, reason: n``."""
    return ", ".join(f"{reason}: {n}" for reason, n in counts.items())
