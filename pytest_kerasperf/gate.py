"""A gated run (``--kerasperf``): the plugin object and the run's state.

``plugin.py`` registers a ``Gate`` only when perf tests are to be measured,
so a pytest process that does not ask for them imports none of this.  The
gate holds one ``comparison.Comparison`` (the committed baselines, or REF)
and a ``GateRun``; each hook is a few lines connecting the measuring
handle's record (``MEASURED`` on the item) with the comparison and the run.
Outcomes stay objects in the process that measured them; a pytest-xdist
worker sends its outcomes, skips and collection to the controller once, at
its end (``worker_output``, as syrupy does), and nothing perf-specific goes on
a report's ``user_properties`` (so into junitxml) unless
``--kerasperf-junit-properties`` asks for a few numbers.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import pytest

from pytest_kerasperf import baseline, comparison, untrusted
from pytest_kerasperf.accounting import ChangedAccount, Collection, RunAccount, Skip, account
from pytest_kerasperf.codec import to_data
from pytest_kerasperf.comparison import Comparison, shown_path
from pytest_kerasperf.fixtures import framework_missing
from pytest_kerasperf.handle import MEASURED, WORKLOAD, Workload
from pytest_kerasperf.items import budgets, is_perf_test, item_key, node_id
from pytest_kerasperf.metrics.latency import timing_blocker
from pytest_kerasperf.options import Options
from pytest_kerasperf.outcome import Outcome, Profile, outcome_data
from pytest_kerasperf.record import Record
from pytest_kerasperf.report import github, json_report, markdown, terminal
from pytest_kerasperf.report.junit import junit_properties
from pytest_kerasperf.state import PluginState

if TYPE_CHECKING:
    from pytest_kerasperf.changed import Indexing
    from pytest_kerasperf.measure.canonical import KerasState

PROFILE_SECTION = "kerasperf profile"  # report section of a pyinstrument profile


@dataclass
class GateRun:
    """What a gated run saw, in the process that writes files, and what it makes of it."""

    options: Options
    backend: str
    outcomes: list[Outcome] = field(default_factory=list)
    skips: list[Skip] = field(default_factory=list)
    collection: Collection = field(default_factory=Collection)
    finished: comparison.Finished = field(default_factory=comparison.Finished)
    account: RunAccount | None = None
    changed: ChangedAccount | None = None  # --kerasperf-changed: what ran and why

    def finish(self, against: Comparison) -> pytest.ExitCode:
        """Baselines, the account, JSON and Markdown; the exit status this adds."""
        self.finished = against.finish(self.outcomes, self.collection)
        self.account = account(
            self.outcomes,
            self.skips,
            self.finished.stale,
            against.settings,
            ab_not_judged=self.finished.ab_not_judged,
            shard=self.options.shard,
            changed=self.changed,
        )
        if self.options.json_path is not None:
            json_report.write(self.options.json_path, self.outcomes, self.account)
        if self.options.markdown_path is not None or github.active():
            text = markdown.render(
                self.outcomes,
                title=f"kerasperf ({', '.join(filter(None, (self.backend, against.title())))})",
                not_measured=sum(self.account.not_measured.values()),
                stale=self.account.stale,
                selections=[terminal.changed_line(self.changed, prefix=False)]
                if self.changed
                else [],
            )
            if self.options.markdown_path is not None:
                baseline.write_atomic(self.options.markdown_path, text + "\n")
            if github.active():
                github.append_step_summary(text)
        if self.finished.error is not None:
            return pytest.ExitCode.USAGE_ERROR
        if self.options.strict and self.account.strict_problems():
            return pytest.ExitCode.TESTS_FAILED
        return pytest.ExitCode.OK


class Gate:
    """The hooks of a run that measures and gates perf tests."""

    def __init__(self, config: pytest.Config, state: PluginState) -> None:
        if sys.flags.hash_randomization:
            raise pytest.UsageError(
                "--kerasperf needs PYTHONHASHSEED=0: with random string hashing, set iteration "
                "order changes between processes and so do some libraries' call counts (jax's "
                "einsum path search); run `PYTHONHASHSEED=0 pytest --kerasperf ...`"
            )
        if state.options.instructions:  # counted under callgrind: said once, before any test
            from pytest_kerasperf.measure import instructions

            try:
                instructions.directory()
                instructions.Hooks()
            except instructions.InstructionsUnavailable as error:
                raise pytest.UsageError(str(error)) from None
        if state.options.isolate and not hasattr(os, "fork"):
            raise pytest.UsageError("--kerasperf-isolate forks a process per test: no os.fork here")
        self.config = config
        self.state = state
        self.options = state.options
        self.against: Comparison = comparison.choose(config, state.options, state.backend)
        config.pluginmanager.register(self.against, "kerasperf-comparison")
        self.run = GateRun(state.options, state.backend)
        #: Keras's global state as this process had it before its first test (``canonical``)
        self.canonical: KerasState | None = None
        self.indexing: Indexing | None = None
        if state.options.index_out is not None:
            from pytest_kerasperf.changed import Indexing

            self.indexing = Indexing()
            config.pluginmanager.register(self.indexing, "kerasperf-indexing")

    # ------------------------------------------------------------ collection

    def pytest_itemcollected(self, item: pytest.Item) -> None:
        """Perf tests that will be timed are benchmarks to pytest-benchmark too
        (``--benchmark-only`` keeps them)."""
        if (
            is_perf_test(item)
            and timing_blocker(item.config, self.options.rounds, self.options.instructions) is None
            and isinstance(item, pytest.Function)
            and "benchmark" not in item.fixturenames
        ):
            item.fixturenames.append("benchmark")

    def collected(self, config: pytest.Config, items: Sequence[pytest.Item]) -> None:
        """Keys must be unique; remember what was collected, for stale entries."""
        owners: dict[str, str] = {}
        for item in filter(is_perf_test, items):
            key = item_key(item)
            if owners.setdefault(key, node_id(item)) != node_id(item):
                raise pytest.UsageError(
                    f"{owners[key]} and {node_id(item)} share the baseline key {key!r} "
                    "(keys drop the file's directory): rename one of the test files"
                )
        self.run.collection.add(item_key(item) for item in items)
        self.run.collection.partial_modules |= {
            Path(arg.split("::", 1)[0]).name for arg in config.args if "::" in arg
        }

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.run.collection.add(item_key(item) for item in items)

    # ------------------------------------------------------- canonical state

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        """Before the first test of a process that runs perf tests: the canonical state."""
        if session.config.option.collectonly or not self.state.perf_tests:
            return
        if self.config.pluginmanager.has_plugin("dsession"):
            return  # an xdist controller runs no test
        from pytest_kerasperf.measure import canonical
        from pytest_kerasperf.protocol import Isolation, OwnThread

        isolate = self.options.isolate
        if self.indexing is not None:  # what a fresh process runs: every test's
            from pytest_kerasperf.measure import reach

            with reach.watching(self.indexing.reach, None):
                self.canonical = canonical.prepare(self.state.backend, start=not isolate)
                self.indexing.prepared(self.config, self.state.backend)
        else:
            self.canonical = canonical.prepare(self.state.backend, start=not isolate)
        self.config.pluginmanager.register(OwnThread(), "kerasperf-own-thread")
        if isolate and self.canonical is not None:
            self.config.pluginmanager.register(Isolation(session, self), "kerasperf-isolation")

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Each perf test starts from the canonical state, whatever ran before it."""
        if self.canonical is not None and is_perf_test(item):
            from pytest_kerasperf.measure import canonical

            canonical.restore(self.canonical)

    # --------------------------------------------------------------- verdict

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if not is_perf_test(item):
            return report
        if report.skipped and call.when in ("setup", "call"):
            missing = framework_missing(call.excinfo)
            self.run.skips.append(Skip(item_key(item), _skip_reason(report), missing))
        elif call.when == "call":
            self._judge(item, report)
        return report

    def _judge(self, item: pytest.Item, report: pytest.TestReport) -> None:
        """Turn the test's record into its outcome: verdict, failure, report sections."""
        # Kept for a profile of this report only: holding it would keep the test's model alive.
        workload = item.stash.get(WORKLOAD, None)
        if workload is not None:
            del item.stash[WORKLOAD]
        measured = item.stash.get(MEASURED, None)
        if measured is None:
            if report.passed and budgets(item):
                report.outcome = "failed"
                report.longrepr = (
                    "kerasperf: this test has budget markers but never called kerasperf()"
                )
            return
        record = measured.record
        key = item_key(item)
        judged = self.against.judge(item, key, record, budgets(item))
        verdict = judged.verdict
        test_failed = report.failed  # the test's own failure, before our verdict
        profile, profile_section = None, None
        if verdict.failed_on("latency") or self.options.profile:
            profile, profile_section = self._profile(item, record, workload)
        if report.passed and not verdict.passed:
            report.outcome = "failed"
            suffix = f" — profile: {profile.html}" if profile else ""
            report.longrepr = "\n".join(
                f"kerasperf {failure}{suffix if failure.kind == 'latency' else ''}"
                for failure in verdict.failures
            )
        command = self.against.rerecord(item, judged)
        where = f"{item.location[0]}:{(item.location[1] or 0) + 1}"
        detail = terminal.detail_section(verdict, record, command, where)
        if detail:
            report.sections.append(("kerasperf", detail))
        if profile_section is not None:
            report.sections.append((PROFILE_SECTION, profile_section))
        outcome = Outcome(
            nodeid=node_id(item),
            key=key,
            record=record,
            verdict=verdict,
            passed=report.passed,
            variant=judged.variant,
            baseline=judged.baseline,
            test_failed=test_failed,
            latency_not_measured=measured.latency_not_measured,
            rerecord=command,
            location=(str(item.path), (item.location[1] or 0) + 1),
            profile=profile,
            compared_with=judged.compared_with,
            ab=judged.ab,
        )
        self.run.outcomes.append(outcome)
        if self.options.junit_properties:
            report.user_properties.extend(junit_properties(outcome))

    def _profile(
        self, item: pytest.Item, record: Record, workload: Workload | None
    ) -> tuple[Profile | None, str]:
        """The workload run again under pyinstrument, and its report section (or why not).

        Taken in the process that measured (an xdist worker included): the profile's text and
        path travel on the report like the result."""
        if workload is None:
            return None, "profile not taken: the measured workload was not kept"
        from pytest_kerasperf.measure.profile import html_name, profile_workload

        key, backend = item_key(item), self.state.backend
        try:
            taken = profile_workload(
                workload.call,
                workload.sync,
                self.options.profile_dir / html_name(key, backend, record.mode),
                description=f"kerasperf profile of {key} ({backend}, {record.mode})",
            )
        except Exception as error:  # a profile must never turn a verdict into a crash
            return None, f"profile not taken: {type(error).__name__}: {error}"
        profile = Profile(html=shown_path(item.config, taken.html_path), text=taken.summary())
        return profile, f"profile: {profile.html}\n{profile.text}"

    # ---------------------------------------------------------------- xdist

    def worker_output(self) -> str:
        """What an xdist worker sends the controller at its end: its outcomes, skips and
        collection, as JSON (the results file's own codec)."""
        data = {
            "collection": to_data(self.run.collection),
            "outcomes": [outcome_data(outcome) for outcome in self.run.outcomes],
            "skips": self.run.skips,
            "reach": None if self.indexing is None else self.indexing.worker_output(),
        }
        return msgspec.json.encode(data).decode()

    def merge_worker(self, text: str) -> None:
        """On the controller: a worker's ``worker_output``."""
        data = msgspec.json.decode(text)
        self.run.collection.merge(msgspec.convert(data["collection"], Collection))
        self.run.outcomes += msgspec.convert(data["outcomes"], list[Outcome])
        self.run.skips += msgspec.convert(data["skips"], list[Skip])
        if self.indexing is not None and data.get("reach") is not None:
            self.indexing.merge_worker(data["reach"])

    # ------------------------------------------------------------ the end

    def finish(self, session: pytest.Session) -> None:
        changed = self.run.changed = self.state.changed
        if (
            changed is not None
            and changed.not_affected
            and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED
        ):  # the change moves no perf test: said in the summary, not "no tests"
            session.exitstatus = pytest.ExitCode.OK
        status = self.run.finish(self.against)
        if self.indexing is not None and self.options.index_out is not None:
            self.indexing.write(
                self.options.index_out, self.config.rootpath, self.state.backend, self.run.outcomes
            )
        if status == pytest.ExitCode.USAGE_ERROR or (
            status != pytest.ExitCode.OK and session.exitstatus == pytest.ExitCode.OK
        ):  # the baseline update failed
            session.exitstatus = status

    def terminal_summary(self, reporter: Any) -> None:
        """The end of the terminal report."""
        run, where = self.run, self.against.where()
        for line in terminal.summary_lines(run.outcomes, run.finished.changes, where):
            reporter.write_line(line)
        profiles = sum(1 for outcome in run.outcomes if outcome.profile is not None)
        if profiles:
            reporter.write_line(
                f"kerasperf: {profiles} pyinstrument profile{'s' if profiles != 1 else ''} "
                f"(HTML) in {shown_path(self.config, self.options.profile_dir)}"
            )
        if run.finished.error is not None:
            reporter.write_line(f"kerasperf: baseline NOT updated: {run.finished.error}", red=True)
        for line in run.finished.lines:
            reporter.write_line(line)
        if run.account is not None:
            closing = terminal.closing_lines(
                run.account,
                where,
                strict=self.options.strict,
                printed_elsewhere=run.finished.printed_elsewhere,
            )
            for line, bad in closing:
                reporter.write_line(line, red=bad, bold=bad)
        if github.active():
            workspace = Path(os.environ.get("GITHUB_WORKSPACE") or os.getcwd())
            for error in github.error_lines(run.outcomes, workspace):
                reporter.write_line(error)


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return untrusted.printable(str(longrepr[2]).removeprefix("Skipped: "))
    return untrusted.printable(str(longrepr))
