"""pytest wiring: the hooks that connect options, fixtures, the verdict and the reports.

Measuring lives in ``handle.py`` and ``measure/``, judging in ``verdict.py``
and ``accounting.py``, rendering in ``report/``; the fixtures in
``fixtures.py``, the options in ``options.py``.  This module only connects
them.  Results travel on each report's ``user_properties`` and are collected
in ``pytest_runtest_logreport``, so they reach the process that writes files
whether or not pytest-xdist is in use; what each xdist worker collected
travels in ``workeroutput``.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from pytest_kerasperf import (
    backends,
    baseline,
    compare_ref,
    environment,
    fixtures,
    markers,
    options,
    verdict,
)
from pytest_kerasperf.accounting import Collection, Skip, account, stale_entries
from pytest_kerasperf.handle import timing_blocker
from pytest_kerasperf.items import PERF_MARKER, budgets, declared_mode, is_perf_test
from pytest_kerasperf.measure.profile import WorkloadProfile, html_name, profile_workload
from pytest_kerasperf.record import Record
from pytest_kerasperf.report import github, json_report, markdown, terminal
from pytest_kerasperf.session import (
    LATENCY_NOT_MEASURED,
    RECORD,
    SESSION,
    WORKLOAD,
    Session,
    Workload,
)

RESULT = "kerasperf"  # user_properties name of a measured result
SKIPPED = "kerasperf-skipped"  # user_properties name of a perf test that was not measured
WORKER_OUTPUT = "kerasperf"  # workeroutput key of a worker's collection
PROFILE_SECTION = "kerasperf profile"  # report section of a pyinstrument profile
#: How verdict.py's failure lines for latency begin: a regression, a max_latency budget.
LATENCY_FAILURES = ("latency:", "max_latency(")


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    for line in markers.help_lines():
        config.addinivalue_line("markers", line)
    config.pluginmanager.register(fixtures, "kerasperf-fixtures")
    opts = options.options(config)
    if opts.enabled and sys.flags.hash_randomization:
        raise pytest.UsageError(
            "--kerasperf needs PYTHONHASHSEED=0: with random string hashing, set iteration "
            "order changes between processes and so do some libraries' call counts (jax's "
            "einsum path search); run `PYTHONHASHSEED=0 pytest --kerasperf ...`"
        )
    backend = backends.active_backend()
    path = baseline.baseline_path(opts.baseline_dir, backend)
    entries = {}
    compare = _configure_compare(config, opts)
    if opts.enabled and compare is None:
        try:
            entries = baseline.load(path, backend)
        except baseline.BaselineError as error:
            raise pytest.UsageError(str(error)) from None
    mismatch = environment.mismatch_for(backend)
    state = Session(
        options=opts,
        backend=backend,
        baseline_path=path,
        baseline=entries,
        settings=verdict.Settings(
            mismatch=mismatch,
            latency_tolerance=opts.latency_tolerance,
            gate_latency_on_cpu=opts.gate_latency_on_cpu,
            updating=opts.updating,
            strict=opts.strict,
        ),
        policy=baseline.UpdatePolicy(latency_tolerance=opts.latency_tolerance, mismatch=mismatch),
    )
    state.compare = compare
    config.stash[SESSION] = state
    if not _is_xdist_worker(config):
        if opts.enabled:
            config.pluginmanager.register(ResultsCollector(state), "kerasperf-results")
        if config.pluginmanager.has_plugin("xdist"):
            config.pluginmanager.register(WorkerCollections(state), "kerasperf-xdist")


def _configure_compare(config: pytest.Config, opts: options.Options) -> Any:
    """The A/B state with --kerasperf-compare-ref, else None (and in a measuring process)."""
    if opts.compare_ref is None or compare_ref.in_measuring_process():
        return None  # a process measuring for an A/B never starts one of its own
    if opts.updating:
        raise pytest.UsageError(
            "--kerasperf-compare-ref compares with REF measured in this job and writes no "
            "baseline: drop --kerasperf-update-baseline"
        )
    if getattr(config.option, "numprocesses", None) or _is_xdist_worker(config):
        raise pytest.UsageError(
            "--kerasperf-compare-ref times its processes one at a time, on an otherwise idle "
            "machine: run it without -n"
        )
    return compare_ref.configure(
        opts.compare_ref, opts.compare_repo, opts.ab_processes, opts.rounds
    )


# --------------------------------------------------------------- collection


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``[eager]`` and ``[compiled]`` where the backend has both; ``[eager]`` on numpy."""
    if "kerasperf_mode" in metafunc.fixturenames:
        backend = metafunc.config.stash[SESSION].backend
        metafunc.parametrize(
            "kerasperf_mode", fixtures.modes(backend), indirect=True, scope="session"
        )


def pytest_itemcollected(item: pytest.Item) -> None:
    """Mark every perf test ``kerasperf`` (for ``-m``, which runs before modifyitems).

    Perf tests that will be timed are also benchmarks to pytest-benchmark
    (``--benchmark-only`` keeps them).
    """
    if not is_perf_test(item):
        return
    if item.get_closest_marker(PERF_MARKER) is None:
        item.add_marker(PERF_MARKER)
    state = item.config.stash[SESSION]
    if (
        state.options.enabled
        and timing_blocker(item.config, state.options.rounds) is None
        and isinstance(item, pytest.Function)
        and "benchmark" not in item.fixturenames
    ):
        item.fixturenames.append("benchmark")


def pytest_deselected(items: list[pytest.Item]) -> None:
    if items and SESSION in items[0].config.stash:
        items[0].config.stash[SESSION].collection.add(
            baseline.test_key(item.nodeid) for item in items
        )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    state = config.stash[SESSION]
    try:
        _check_collected(state, items)
    except pytest.UsageError as error:
        if not _is_xdist_worker(config):
            raise
        # A worker that raised would crash; the controller prints it as one line.
        state.usage_error = str(error)
        config.hook.pytest_deselected(items=list(items))
        items.clear()
        return
    state.collection.add(baseline.test_key(item.nodeid) for item in items)
    state.collection.partial_modules |= {
        Path(arg.split("::", 1)[0]).name for arg in config.args if "::" in arg
    }


def pytest_collection_finish(session: pytest.Session) -> None:
    """With --kerasperf-compare-ref: measure REF and HEAD before the first test runs."""
    state = session.config.stash.get(SESSION, None)
    if state is None or state.compare is None or not state.options.enabled:
        return
    if session.config.option.collectonly:
        return
    items = [item for item in session.items if is_perf_test(item)]
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")

    def log(line: str) -> None:
        if reporter is not None:
            reporter.write_line(f"kerasperf compare-ref: {line}")

    log(
        f"measuring {len(items)} perf test{'s' if len(items) != 1 else ''} at REF "
        f"{state.compare.label} and under test, {state.compare.processes} processes per side"
    )
    compare_ref.measure(state.compare, items, state.backend, log)


def _check_collected(state: Session, items: list[pytest.Item]) -> None:
    """Budget and mode markers parse, baseline keys are unique; skip perf tests if not enabled."""
    skip = pytest.mark.skip(reason="perf test: run with --kerasperf to measure and gate it")
    owners: dict[str, str] = {}
    for item in items:
        budgets(item)  # a wrong marker argument is a collection error, run or not
        if not is_perf_test(item):
            continue
        declared_mode(item)
        state.perf_tests += 1
        if not state.options.enabled:
            item.add_marker(skip)
            continue
        key = baseline.test_key(item.nodeid)
        if owners.setdefault(key, item.nodeid) != item.nodeid:
            raise pytest.UsageError(
                f"{owners[key]} and {item.nodeid} share the baseline key {key!r} "
                "(keys drop the file's directory): rename one of the test files"
            )


# ------------------------------------------------------------------ verdict


def rerecord_command(item: pytest.Item, state: Session) -> str:
    """The command that re-records this one test's baseline entry, run where pytest ran."""
    path = os.path.relpath(item.path, item.config.invocation_params.dir)
    if path.startswith(".."):
        path = str(item.path)
    nodeid = path + item.nodeid[len(item.nodeid.split("::", 1)[0]) :]
    words = ["PYTHONHASHSEED=0", f"KERAS_BACKEND={state.backend}", "pytest"]
    if state.options.baseline_dir_given:
        words.append(f"--kerasperf-baseline-dir={state.options.baseline_dir}")
    words += ["--kerasperf-update-baseline", nodeid]
    return " ".join(shlex.quote(word) for word in words)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if SESSION not in item.config.stash:
        return report
    state = item.config.stash[SESSION]
    if not state.options.enabled or not is_perf_test(item):
        return report
    key = baseline.test_key(item.nodeid)
    if report.skipped and call.when in ("setup", "call"):
        reason = _skip_reason(report)
        missing = reason == state.framework_missing
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
            report.longrepr = "kerasperf: this test has budget markers but never called kerasperf()"
        return report
    ab_verdict = None
    if state.compare is not None:
        result, base, ab_verdict = compare_ref.judge(
            state.compare, key, record, budgets(item), state.settings
        )
    else:
        base = state.baseline.get(key)
        result = verdict.judge(record, base, budgets(item), state.settings)
    test_failed = report.failed  # the test's own failure, before our verdict
    latency_failed = any(line.startswith(LATENCY_FAILURES) for line in result.failures)
    profile_section, profile_json = None, None
    if latency_failed or state.options.profile:
        profile, why_not = take_profile(item, state, record, workload)
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
    if state.compare is None and (
        not result.passed or result.status in ("improved", "new", "mismatch")
    ):
        command = rerecord_command(item, state)
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
    )
    if state.compare is not None:
        result_data["compared_with"] = {"ref": state.compare.ref, "commit": state.compare.sha}
        result_data["ab"] = ab_verdict.to_json() if ab_verdict is not None else None
    report.user_properties.append((RESULT, result_data))
    return report


def take_profile(
    item: pytest.Item, state: Session, record: Record, workload: Workload | None
) -> tuple[WorkloadProfile | None, str]:
    """The test's workload run again under pyinstrument, or None and why not.

    Taken in the process that measured (an xdist worker included): the
    profile's text and path travel on the report like the result.
    """
    if workload is None:
        return None, "the measured workload was not kept"
    key = baseline.test_key(item.nodeid)
    path = state.options.profile_dir / html_name(key, state.backend, record.mode)
    try:
        profile = profile_workload(
            workload.call,
            workload.sync,
            path,
            description=f"kerasperf profile of {key} ({state.backend}, {record.mode})",
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


class ResultsCollector:
    """Collects the results that reports carry, in the process that writes files.

    Reports from pytest-xdist workers arrive here with their user_properties,
    so the controller sees every result once, without a side channel.
    """

    def __init__(self, state: Session) -> None:
        self._state = state

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, value in report.user_properties:
            if name == RESULT and isinstance(value, dict):
                self._state.results.append(value)
            elif name == SKIPPED and isinstance(value, dict):
                self._state.skips.append(Skip(**value))


class WorkerCollections:
    """On the xdist controller: what each worker collected, for stale-entry detection."""

    def __init__(self, state: Session) -> None:
        self._state = state

    def pytest_testnodedown(self, node: Any, error: object) -> None:
        output = getattr(node, "workeroutput", {}).get(WORKER_OUTPUT)
        if output:
            data = json.loads(output)
            self._state.collection.merge(Collection.from_json(data["collection"]))
            self._state.perf_tests = max(self._state.perf_tests, int(data["perf_tests"]))
            self._state.usage_error = self._state.usage_error or data.get("usage_error")


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if SESSION not in config.stash:
        return
    state = config.stash[SESSION]
    if _is_xdist_worker(config):
        config.workeroutput[WORKER_OUTPUT] = json.dumps(  # type: ignore[attr-defined]
            {
                "collection": state.collection.to_json(),
                "perf_tests": state.perf_tests,
                "usage_error": state.usage_error,
            }
        )
        return
    if state.usage_error:
        # Raised on an xdist worker: the one line pytest prints for a usage error.
        sys.stderr.write(f"ERROR: {state.usage_error}\n")
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
        return
    if not state.options.enabled:
        return
    stale = stale_entries(state.baseline, state.collection) if state.compare is None else ()
    if state.options.updating:
        # A test that failed on its own (not on a kerasperf verdict) proves nothing.
        measured = {
            r["key"]: json_report.record_of(r) for r in state.results if not r["test_failed"]
        }
        try:
            if measured or stale:
                state.changes = baseline.update(
                    state.baseline_path, state.backend, measured, state.policy, remove=stale
                )
        except (baseline.BaselineError, OSError) as error:
            state.update_error = str(error)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
        else:
            stale = ()  # removed from the file
    state.account = account(
        state.results,
        state.skips,
        stale,
        gate_latency_on_cpu=state.options.gate_latency_on_cpu,
        updating=state.options.updating,
    )
    if state.options.json_path is not None:
        json_report.write(state.options.json_path, state.results, state.account)
    if state.options.markdown_path is not None or github.active():
        text = markdown.render(
            state.results,
            title=f"kerasperf ({state.backend})"
            if state.compare is None
            else f"kerasperf ({state.backend}, against REF {state.compare.label})",
            not_measured=sum(state.account.not_measured.values()),
            stale=state.account.stale,
        )
        if state.options.markdown_path is not None:
            baseline.write_atomic(state.options.markdown_path, text + "\n")
        if github.active():
            github.append_step_summary(text)
    if (
        state.options.strict
        and state.account.strict_problems()
        and session.exitstatus == pytest.ExitCode.OK
    ):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if SESSION not in config.stash or _is_xdist_worker(config):
        return
    state = config.stash[SESSION]
    if state.usage_error:
        return
    if not state.options.enabled:
        if state.perf_tests:
            terminalreporter.write_line(
                f"kerasperf: {state.perf_tests} perf test{'s' if state.perf_tests != 1 else ''} "
                "not run (pass --kerasperf to measure and gate them)"
            )
        return
    for line in terminal.summary_lines(state.results, state.changes, state.baseline_path):
        terminalreporter.write_line(line)
    profiles = sum(1 for result in state.results if result.get("profile"))
    if profiles:
        terminalreporter.write_line(
            f"kerasperf: {profiles} pyinstrument profile{'s' if profiles != 1 else ''} (HTML) "
            f"in {shown_path(config, state.options.profile_dir)}"
        )
    if state.update_error:
        terminalreporter.write_line(
            f"kerasperf: baseline NOT updated: {state.update_error}", red=True
        )
    if state.compare is not None:
        for line in compare_ref.summary_lines(state.compare):
            terminalreporter.write_line(line)
    if state.account is not None:
        against = state.baseline_path if state.compare is None else f"REF {state.compare.label}"
        for line, bad in terminal.closing_lines(
            state.account, against, strict=state.options.strict, latency=state.compare is None
        ):
            terminalreporter.write_line(line, red=bad, bold=bad)
    if github.active():
        workspace = Path(os.environ.get("GITHUB_WORKSPACE") or os.getcwd())
        for line in github.error_lines(state.results, workspace):
            terminalreporter.write_line(line)
