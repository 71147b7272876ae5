"""What a gated run compares each measurement with: one object, two kinds.

``BaselineComparison`` judges against the committed entries of the run's variant and, with
``--kerasperf-update-baseline``, rewrites them at the end; ``RefComparison``
(``--kerasperf-compare-ref REF``) against REF of the Keras repository, measured in the same job.
``gate.Gate`` holds one, chosen in ``pytest_configure``, and never asks which (as pytest's
``StepwisePlugin`` or syrupy's session keep their mode in one object).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from pytest_kerasperf import baseline, environment, judging, verdict
from pytest_kerasperf.ab.result import ABResult
from pytest_kerasperf.accounting import Collection, stale_entries
from pytest_kerasperf.budget import Budget
from pytest_kerasperf.options import Options
from pytest_kerasperf.outcome import BaselineSummary, ComparedWith, Outcome
from pytest_kerasperf.record import Record
from pytest_kerasperf.settings import Settings

if TYPE_CHECKING:
    from pytest_kerasperf.compare_ref import CompareRef


@dataclass(frozen=True)
class Judged:
    """A verdict and what it was made against."""

    verdict: verdict.Verdict
    variant: str
    baseline: BaselineSummary | None = None
    compared_with: ComparedWith | None = None
    ab: ABResult | None = None  # the A/B latency verdict


@dataclass
class Finished:
    """What the end of a run did, and what the comparison has to add to its account."""

    stale: tuple[str, ...] = ()  # entries the run proved stale and did not remove
    changes: list[baseline.EntryChange] = field(default_factory=list)
    error: str | None = None  # the update failed: nothing was written
    ab_not_judged: int = 0  # tests compared whose latency A/B could not be judged (fails strict)
    lines: list[str] = field(default_factory=list)  # lines of its own for the end of the run
    #: metrics whose closing line the comparison printed itself (an A/B's latency)
    printed_elsewhere: frozenset[str] = frozenset()


def settings_for(options: Options, backend: str, **extra: Any) -> Settings:
    """The one build of a run's settings: its options (each one a setting of the same name),
    the backend's count-relevant fields."""
    given = {f.name for f in fields(Settings)} & {f.name for f in fields(Options)}
    return Settings(
        mismatch=environment.mismatch_for(backend),
        accept_from=options.json_path.name if options.json_path else None,
        **{name: getattr(options, name) for name in given},
        **extra,
    )


class Comparison(Protocol):
    """What a gated run compares with (``RefComparison`` is also a plugin: it measures REF
    when collection finishes)."""

    settings: Settings

    def where(self) -> str:
        """What the closing line names: a variant directory, or REF."""

    def title(self) -> str:
        """What the Markdown report's title adds: ``py3.11-cpu``, ``against REF main``."""

    def judge(
        self, item: pytest.Item, key: str, record: Record, budgets: Sequence[Budget]
    ) -> Judged:
        """The verdict of one test's measurement."""

    def rerecord(self, item: pytest.Item, judged: Judged) -> str | None:
        """The command that re-records this test, when re-recording is the fix."""

    def finish(self, outcomes: Sequence[Outcome], collection: Collection) -> Finished:
        """At the end, in the process that writes files."""


class BaselineComparison:
    """The committed baselines: one entry per test and variant (baseline.Baselines)."""

    def __init__(self, config: pytest.Config, options: Options, backend: str) -> None:
        self.config = config
        self.options = options
        self.backend = backend
        try:
            #: variant -> key -> entry, every variant of the backend, validated up front
            self.entries = baseline.load_all(options.baseline_dir, backend, options.tables)
        except baseline.BaselineError as error:
            raise pytest.UsageError(str(error)) from None
        self.settings = settings_for(options, backend, recorded_variants=tuple(self.entries))
        self.variant: str | None = None  # of the records this run measured

    def store(self, variant: str) -> baseline.Baselines:
        return baseline.Baselines(
            self.options.baseline_dir, self.backend, variant, self.options.tables
        )

    def where(self) -> str:
        if self.variant is None:
            return str(self.options.baseline_dir / self.backend)
        return str(self.store(self.variant).directory)

    def title(self) -> str:
        return self.variant or ""

    def judge(
        self, item: pytest.Item, key: str, record: Record, budgets: Sequence[Budget]
    ) -> Judged:
        variant = environment.variant_of(record.environment, self.backend)
        self.variant = self.variant or variant
        entry = self.entries.get(variant, {}).get(key)
        settings = replace(
            self.settings,
            variant=variant,
            rerecord_all=self._rerecord_all(variant),
            record_win=self._rerecord_test(item, variant),
            test=key.rsplit("::", 1)[-1],
        )
        return Judged(
            verdict=judging.judge(record, entry, budgets, settings),
            variant=variant,
            baseline=BaselineSummary.of(entry) if entry is not None else None,
        )

    def rerecord(self, item: pytest.Item, judged: Judged) -> str | None:
        """The command that re-records this one test's entry, run where pytest ran."""
        if judged.verdict.passed and judged.verdict.status not in ("improved", "new", "mismatch"):
            return None
        return self._rerecord_test(item, judged.variant)

    def _rerecord_test(self, item: pytest.Item, variant: str) -> str:
        nodeid = shown_path(item.config, item.path) + "::" + item.nodeid.split("::", 1)[1]
        words = [*self._environment_words(variant), "pytest", *self._baseline_dir()]
        return shlex.join([*words, "--kerasperf-update-baseline", nodeid])

    def _rerecord_all(self, variant: str) -> str:
        """The one command that re-records this run's selection, as this run was started."""
        words = [*self._environment_words(variant), "pytest", "--kerasperf-update-baseline"]
        words += self._baseline_dir()
        if self.config.args_source == pytest.Config.ArgsSource.ARGS:
            if self.config.option.pyargs:
                words.append("--pyargs")
            words += [str(arg) for arg in self.config.args]
        return shlex.join(words)

    def _baseline_dir(self) -> list[str]:
        if not self.options.baseline_dir_given:
            return []
        return [f"--kerasperf-baseline-dir={self.options.baseline_dir}"]

    def _environment_words(self, variant: str) -> list[str]:
        """How this run chose its backend and variant, for a command that re-records it.

        The backend as this run got it: ``KERAS_BACKEND``, else the ``KERAS_HOME`` whose
        ``keras.json`` named it (Keras's CI configs); NNX said either way on jax, so a
        developer's own ``keras.json`` cannot put the entries in the other variant.
        """
        words = ["PYTHONHASHSEED=0"]
        if not os.environ.get("KERAS_BACKEND") and os.environ.get("KERAS_HOME"):
            words.append(f"KERAS_HOME={os.environ['KERAS_HOME']}")
        else:
            words.append(f"KERAS_BACKEND={self.backend}")
        if self.backend == "jax":
            words.append(f"KERAS_NNX_ENABLED={'true' if variant.endswith('-nnx') else 'false'}")
        return words

    def finish(self, outcomes: Sequence[Outcome], collection: Collection) -> Finished:
        """Stale entries of the run's variant; with --kerasperf-update-baseline, the update."""
        if self.variant is None:
            for outcome in outcomes:  # on an xdist controller, from the workers' outcomes
                self.variant = self.variant or outcome.variant
        if self.variant is None:
            return Finished()
        stale = stale_entries(self.entries.get(self.variant, {}), collection)
        if not self.options.updating:
            return Finished(stale=stale)
        # A test that failed on its own (not on a kerasperf verdict) proves nothing.
        measured = {o.key: o.record for o in outcomes if not o.test_failed}
        if not measured and not stale:
            return Finished()
        try:
            changes = self.store(self.variant).update(measured, self.settings, remove=stale)
        except (baseline.BaselineError, OSError) as error:
            return Finished(stale=stale, error=str(error))
        return Finished(changes=changes)


class RefComparison:
    """``--kerasperf-compare-ref REF``: REF measured in this job, latency by an A/B."""

    def __init__(self, compare: CompareRef, options: Options, backend: str) -> None:
        self.compare = compare
        self.backend = backend
        # Against REF nothing is committed: a win is the change's, there is nothing to record.
        self.settings = replace(settings_for(options, backend), ratchet=False)

    def where(self) -> str:
        return f"REF {self.compare.label}"

    def title(self) -> str:
        return f"against REF {self.compare.label}"

    def judge(
        self, item: pytest.Item, key: str, record: Record, budgets: Sequence[Budget]
    ) -> Judged:
        from pytest_kerasperf import compare_ref

        result, base, ab_verdict = compare_ref.judge(
            self.compare, key, record, budgets, self.settings
        )
        return Judged(
            verdict=result,
            variant=environment.variant_of(record.environment, self.backend),
            baseline=BaselineSummary.of(base) if base is not None else None,
            compared_with=ComparedWith(self.compare.ref, self.compare.sha),
            ab=ab_verdict.result() if ab_verdict is not None else None,
        )

    def rerecord(self, item: pytest.Item, judged: Judged) -> str | None:
        return None  # nothing committed is compared: nothing to re-record

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """REF and the Keras under test, in interleaved processes, before the first test."""
        from pytest_kerasperf import compare_ref
        from pytest_kerasperf.items import is_perf_test

        if session.config.option.collectonly:
            return
        items = [item for item in session.items if is_perf_test(item)]
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")

        def log(line: str) -> None:
            if reporter is not None:
                reporter.write_line(f"kerasperf compare-ref: {line}")

        log(
            f"measuring {len(items)} perf test{'s' if len(items) != 1 else ''} at REF "
            f"{self.compare.label} and under test, {self.compare.processes} processes per side"
        )
        compare_ref.measure(self.compare, items, self.backend, log)

    def finish(self, outcomes: Sequence[Outcome], collection: Collection) -> Finished:
        """No committed entry is read, none can be stale; what the A/B measured and judged."""
        from pytest_kerasperf import compare_ref

        not_judged = sum(
            1 for o in outcomes if o.verdict.compared and o.ab is None and not o.test_failed
        )
        return Finished(
            ab_not_judged=not_judged,
            lines=compare_ref.summary_lines(self.compare),
            printed_elsewhere=frozenset({"latency"}),
        )


def choose(config: pytest.Config, options: Options, backend: str) -> Comparison:
    """The run's comparison: REF with --kerasperf-compare-ref, else the committed baselines.

    The A/B machinery (git, numpy, scipy) is imported only when REF is asked for.
    """
    if options.compare_ref is None:
        return BaselineComparison(config, options, backend)
    from pytest_kerasperf import compare_ref

    if compare_ref.in_measuring_process():
        # A process measuring for an A/B (or a sweep) never starts one of its own.
        return BaselineComparison(config, options, backend)
    if options.updating:
        raise pytest.UsageError(
            "--kerasperf-compare-ref compares with REF measured in this job and writes no "
            "baseline: drop --kerasperf-update-baseline"
        )
    if getattr(config.option, "numprocesses", None) or hasattr(config, "workerinput"):
        raise pytest.UsageError(
            "--kerasperf-compare-ref times its processes one at a time, on an otherwise idle "
            "machine: run it without -n"
        )
    compare = compare_ref.configure(
        options.compare_ref, options.compare_repo, options.ab_processes, options.rounds
    )
    return RefComparison(compare, options, backend)


def shown_path(config: pytest.Config, path: Path) -> str:
    """``path`` relative to the directory pytest ran in when under it, else absolute."""
    relative = os.path.relpath(path, config.invocation_params.dir)
    return str(path) if relative.startswith("..") else relative
