"""A gated run (``--kerasperf``): baselines, verdicts, results and the run's account.

``plugin.py`` registers a ``Gate`` only when perf tests are to be measured,
so a pytest process that does not ask for them imports none of this.  The
gate's hooks connect the measuring handle's record (``RECORD`` on the item)
with the verdict, the baseline store and the reports.  Results travel on each
report's ``user_properties`` and are collected in ``pytest_runtest_logreport``,
so they reach the process that writes files whether or not pytest-xdist is in
use; what each xdist worker collected travels in ``workeroutput``.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Generator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_kerasperf import baseline, environment, verdict
from pytest_kerasperf.accounting import Collection, RunAccount, Skip, account, stale_entries
from pytest_kerasperf.handle import Workload, timing_blocker
from pytest_kerasperf.items import budgets, is_perf_test
from pytest_kerasperf.options import Options
from pytest_kerasperf.record import Record, test_key
from pytest_kerasperf.report import github, json_report, markdown, terminal
from pytest_kerasperf.session import LATENCY_NOT_MEASURED, RECORD, WORKLOAD, Session

if TYPE_CHECKING:
    from pytest_kerasperf.measure.profile import WorkloadProfile

RESULT = "kerasperf"  # user_properties name of a measured result
SKIPPED = "kerasperf-skipped"  # user_properties name of a perf test that was not measured
PROFILE_SECTION = "kerasperf profile"  # report section of a pyinstrument profile
#: How verdict.py's failure lines for latency begin: a regression, a max_latency budget.
LATENCY_FAILURES = ("latency:", "max_latency(")


def is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


class Gate:
    """The state and hooks of a run that measures and gates perf tests."""

    def __init__(self, config: pytest.Config, state: Session) -> None:
        opts = state.options
        if sys.flags.hash_randomization:
            raise pytest.UsageError(
                "--kerasperf needs PYTHONHASHSEED=0: with random string hashing, set iteration "
                "order changes between processes and so do some libraries' call counts (jax's "
                "einsum path search); run `PYTHONHASHSEED=0 pytest --kerasperf ...`"
            )
        self.config = config
        self.state = state
        self.options: Options = opts
        self.backend = state.backend
        self.compare = _configure_compare(config, opts)
        #: variant -> key -> entry, every variant of the backend (validated up front)
        self.entries: dict[str, dict[str, Record]] = {}
        self.recorded_variants: tuple[str, ...] = ()
        if self.compare is None:
            try:
                self.entries = baseline.load_all(opts.baseline_dir, self.backend)
            except baseline.BaselineError as error:
                raise pytest.UsageError(str(error)) from None
            self.recorded_variants = tuple(self.entries)
        mismatch = environment.mismatch_for(self.backend)
        self.settings = verdict.Settings(
            mismatch=mismatch,
            latency_tolerance=opts.latency_tolerance,
            gate_latency_on_cpu=opts.gate_latency_on_cpu,
            updating=opts.updating,
            strict=opts.strict,
            recorded_variants=self.recorded_variants,
            requirements=opts.requirements,
        )
        self.policy = baseline.UpdatePolicy(
            latency_tolerance=opts.latency_tolerance, mismatch=mismatch
        )
        self.variant: str | None = None  # of the records this run measured
        self.results: list[dict[str, Any]] = []
        self.skips: list[Skip] = []
        self.collection = Collection()
        self.changes: list[baseline.Change] = []
        self.account: RunAccount | None = None
        self.update_error: str | None = None

    # ------------------------------------------------------------ the store

    def store(self, variant: str) -> baseline.Baselines:
        return baseline.Baselines(self.options.baseline_dir, self.backend, variant)

    def where(self) -> str:
        """What the run compared against, for the closing line."""
        if self.compare is not None:
            return f"REF {self.compare.label}"
        if self.variant is None:
            return str(self.options.baseline_dir / self.backend)
        return str(self.store(self.variant).directory)

    def _variant_of(self, record: Record) -> str:
        variant = environment.variant_of(record.environment, self.backend)
        if self.variant is None:
            self.variant = variant
        return variant

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
            nnx = "true" if variant.endswith("-nnx") else "false"
            words.append(f"KERAS_NNX_ENABLED={nnx}")
        return words

    def rerecord_all(self, variant: str) -> str:
        """The one command that re-records this run's selection, as this run was started."""
        words = [*self._environment_words(variant), "pytest", "--kerasperf-update-baseline"]
        if self.options.baseline_dir_given:
            words.append(f"--kerasperf-baseline-dir={self.options.baseline_dir}")
        if self.config.args_source == pytest.Config.ArgsSource.ARGS:
            if self.config.option.pyargs:
                words.append("--pyargs")
            words += [str(arg) for arg in self.config.args]
        return " ".join(shlex.quote(word) for word in words)

    def rerecord_command(self, item: pytest.Item, variant: str) -> str:
        """The command that re-records this one test's baseline entry, run where pytest ran."""
        path = os.path.relpath(item.path, item.config.invocation_params.dir)
        if path.startswith(".."):
            path = str(item.path)
        nodeid = path + item.nodeid[len(item.nodeid.split("::", 1)[0]) :]
        words = [*self._environment_words(variant), "pytest"]
        if self.options.baseline_dir_given:
            words.append(f"--kerasperf-baseline-dir={self.options.baseline_dir}")
        words += ["--kerasperf-update-baseline", nodeid]
        return " ".join(shlex.quote(word) for word in words)

    # ------------------------------------------------------------ collection

    def pytest_itemcollected(self, item: pytest.Item) -> None:
        """Perf tests that will be timed are benchmarks to pytest-benchmark too
        (``--benchmark-only`` keeps them)."""
        if (
            is_perf_test(item)
            and timing_blocker(item.config, self.options.rounds) is None
            and isinstance(item, pytest.Function)
            and "benchmark" not in item.fixturenames
        ):
            item.fixturenames.append("benchmark")

    def collected(self, config: pytest.Config, items: Sequence[pytest.Item]) -> None:
        """Keys must be unique; remember what was collected, for stale entries."""
        owners: dict[str, str] = {}
        for item in items:
            if not is_perf_test(item):
                continue
            key = test_key(item.nodeid)
            if owners.setdefault(key, item.nodeid) != item.nodeid:
                raise pytest.UsageError(
                    f"{owners[key]} and {item.nodeid} share the baseline key {key!r} "
                    "(keys drop the file's directory): rename one of the test files"
                )
        self.collection.add(test_key(item.nodeid) for item in items)
        self.collection.partial_modules |= {
            Path(arg.split("::", 1)[0]).name for arg in config.args if "::" in arg
        }

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.collection.add(test_key(item.nodeid) for item in items)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """With --kerasperf-compare-ref: measure REF and HEAD before the first test runs."""
        if self.compare is None or session.config.option.collectonly:
            return
        from pytest_kerasperf import compare_ref

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

    # --------------------------------------------------------------- verdict

    def judge(
        self, item: pytest.Item, key: str, record: Record
    ) -> tuple[verdict.Verdict, Record | None, Any, str]:
        """(verdict, what it was compared with, the A/B verdict or None, the variant)."""
        variant = self._variant_of(record)
        if self.compare is not None:
            from pytest_kerasperf import compare_ref

            result, base, ab_verdict = compare_ref.judge(
                self.compare, key, record, budgets(item), self.settings
            )
            return result, base, ab_verdict, variant
        base = self.entries.get(variant, {}).get(key)
        settings = replace(self.settings, variant=variant, rerecord_all=self.rerecord_all(variant))
        return verdict.judge(record, base, budgets(item), settings), base, None, variant

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if not is_perf_test(item):
            return report
        key = test_key(item.nodeid)
        if report.skipped and call.when in ("setup", "call"):
            reason = _skip_reason(report)
            missing = reason == self.state.framework_missing
            report.user_properties.append(
                (SKIPPED, {"key": key, "reason": reason, "framework_missing": missing})
            )
            return report
        if call.when != "call":
            return report
        # Kept for a profile of this report only: holding it would keep the test's model alive.
        workload = item.stash.get(WORKLOAD, None)
        if workload is not None:
            del item.stash[WORKLOAD]
        record = item.stash.get(RECORD, None)
        if record is None:
            if report.passed and budgets(item):
                report.outcome = "failed"
                report.longrepr = (
                    "kerasperf: this test has budget markers but never called kerasperf()"
                )
            return report
        result, base, ab_verdict, variant = self.judge(item, key, record)
        test_failed = report.failed  # the test's own failure, before our verdict
        latency_failed = any(line.startswith(LATENCY_FAILURES) for line in result.failures)
        profile_section, profile_json = None, None
        if latency_failed or self.options.profile:
            profile, why_not = take_profile(item, self.options, self.backend, record, workload)
            if profile is None:
                profile_section = f"profile not taken: {why_not}"
            else:
                profile_json = {
                    "html": shown_path(item.config, profile.html_path),
                    "text": profile.summary(),
                }
                profile_section = f"profile: {profile_json['html']}\n{profile_json['text']}"
        if report.passed and not result.passed:
            report.outcome = "failed"
            suffix = f" — profile: {profile_json['html']}" if profile_json else ""
            report.longrepr = "\n".join(
                f"kerasperf {line}{suffix if line.startswith(LATENCY_FAILURES) else ''}"
                for line in result.failures
            )
        command = None
        if self.compare is None and (
            not result.passed or result.status in ("improved", "new", "mismatch")
        ):
            command = self.rerecord_command(item, variant)
        detail = terminal.detail_section(result, record, command)
        if detail:
            report.sections.append(("kerasperf", detail))
        if profile_section is not None:
            report.sections.append((PROFILE_SECTION, profile_section))
        result_data = json_report.result_json(
            item.nodeid,
            key,
            record,
            base,
            result,
            passed=report.passed,
            test_failed=test_failed,
            latency_not_measured=item.stash.get(LATENCY_NOT_MEASURED, None),
            rerecord=command,
            location=(str(item.path), (item.location[1] or 0) + 1),
            profile=profile_json,
            variant=variant,
        )
        if self.compare is not None:
            result_data["compared_with"] = {"ref": self.compare.ref, "commit": self.compare.sha}
            result_data["ab"] = ab_verdict.to_json() if ab_verdict is not None else None
        report.user_properties.append((RESULT, result_data))
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Collect the results reports carry, in the process that writes files.

        Reports from pytest-xdist workers arrive on the controller with their
        user_properties, so it sees every result once, without a side channel.
        """
        if is_xdist_worker(self.config):
            return
        for name, value in report.user_properties:
            if name == RESULT and isinstance(value, dict):
                self.results.append(value)
                if self.variant is None and isinstance(value.get("variant"), str):
                    self.variant = value["variant"]
            elif name == SKIPPED and isinstance(value, dict):
                self.skips.append(Skip(**value))

    # ------------------------------------------------------------ the end

    def finish(self, session: pytest.Session) -> None:
        """On the process that writes files: baselines, JSON, Markdown, the strict verdict."""
        entries = self.entries.get(self.variant, {}) if self.variant else {}
        stale = stale_entries(entries, self.collection) if self.compare is None else ()
        if self.options.updating and self.variant is not None:
            # A test that failed on its own (not on a kerasperf verdict) proves nothing.
            measured = {
                r["key"]: json_report.record_of(r) for r in self.results if not r["test_failed"]
            }
            try:
                if measured or stale:
                    self.changes = self.store(self.variant).update(
                        measured, self.policy, remove=stale
                    )
            except (baseline.BaselineError, OSError) as error:
                self.update_error = str(error)
                session.exitstatus = pytest.ExitCode.USAGE_ERROR
            else:
                stale = ()  # removed from the files
        self.account = account(
            self.results,
            self.skips,
            stale,
            gate_latency_on_cpu=self.options.gate_latency_on_cpu,
            updating=self.options.updating,
            ab_not_judged=self._ab_not_judged(),
        )
        if self.options.json_path is not None:
            json_report.write(self.options.json_path, self.results, self.account)
        if self.options.markdown_path is not None or github.active():
            title = f"kerasperf ({self.backend}"
            title += f", {self.variant}" if self.variant else ""
            title += f", against REF {self.compare.label})" if self.compare is not None else ")"
            text = markdown.render(
                self.results,
                title=title,
                not_measured=sum(self.account.not_measured.values()),
                stale=self.account.stale,
            )
            if self.options.markdown_path is not None:
                baseline.write_atomic(self.options.markdown_path, text + "\n")
            if github.active():
                github.append_step_summary(text)
        if (
            self.options.strict
            and self.account.strict_problems()
            and session.exitstatus == pytest.ExitCode.OK
        ):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _ab_not_judged(self) -> int:
        """With --kerasperf-compare-ref: perf tests whose latency the A/B could not judge."""
        if self.compare is None:
            return 0
        return sum(
            1
            for r in self.results
            if r["verdict"]["compared"] and r.get("ab") is None and not r["test_failed"]
        )

    def terminal_summary(self, reporter: Any) -> None:
        changes_at = self.where()
        for line in terminal.summary_lines(self.results, self.changes, changes_at):
            reporter.write_line(line)
        profiles = sum(1 for result in self.results if result.get("profile"))
        if profiles:
            reporter.write_line(
                f"kerasperf: {profiles} pyinstrument profile{'s' if profiles != 1 else ''} "
                f"(HTML) in {shown_path(self.config, self.options.profile_dir)}"
            )
        if self.update_error:
            reporter.write_line(f"kerasperf: baseline NOT updated: {self.update_error}", red=True)
        if self.compare is not None:
            from pytest_kerasperf import compare_ref

            for line in compare_ref.summary_lines(self.compare):
                reporter.write_line(line)
        if self.account is not None:
            for line, bad in terminal.closing_lines(
                self.account,
                self.where(),
                strict=self.options.strict,
                latency=self.compare is None,
            ):
                reporter.write_line(line, red=bad, bold=bad)
        if github.active():
            workspace = Path(os.environ.get("GITHUB_WORKSPACE") or os.getcwd())
            for line in github.error_lines(self.results, workspace):
                reporter.write_line(line)


def _configure_compare(config: pytest.Config, opts: Options) -> Any:
    """The A/B state with --kerasperf-compare-ref, else None (and in a measuring process).

    The A/B machinery (git, numpy, scipy) is imported only here, when asked for.
    """
    if opts.compare_ref is None:
        return None
    from pytest_kerasperf import compare_ref

    if compare_ref.in_measuring_process():
        return None  # a process measuring for an A/B never starts one of its own
    if opts.updating:
        raise pytest.UsageError(
            "--kerasperf-compare-ref compares with REF measured in this job and writes no "
            "baseline: drop --kerasperf-update-baseline"
        )
    if getattr(config.option, "numprocesses", None) or is_xdist_worker(config):
        raise pytest.UsageError(
            "--kerasperf-compare-ref times its processes one at a time, on an otherwise idle "
            "machine: run it without -n"
        )
    return compare_ref.configure(
        opts.compare_ref, opts.compare_repo, opts.ab_processes, opts.rounds
    )


def take_profile(
    item: pytest.Item,
    options: Options,
    backend: str,
    record: Record,
    workload: Workload | None,
) -> tuple[WorkloadProfile | None, str]:
    """The test's workload run again under pyinstrument, or None and why not.

    Taken in the process that measured (an xdist worker included): the
    profile's text and path travel on the report like the result.
    """
    if workload is None:
        return None, "the measured workload was not kept"
    from pytest_kerasperf.measure.profile import html_name, profile_workload

    key = test_key(item.nodeid)
    path = options.profile_dir / html_name(key, backend, record.mode)
    try:
        profile = profile_workload(
            workload.call,
            workload.sync,
            path,
            description=f"kerasperf profile of {key} ({backend}, {record.mode})",
        )
    except Exception as error:  # a profile must never turn a verdict into a crash
        return None, f"{type(error).__name__}: {error}"
    return profile, ""


def shown_path(config: pytest.Config, path: Path) -> str:
    """``path`` relative to the directory pytest ran in when under it, else absolute."""
    relative = os.path.relpath(path, config.invocation_params.dir)
    return str(path) if relative.startswith("..") else relative


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)
