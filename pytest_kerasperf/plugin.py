"""pytest wiring: options, markers, fixtures, the verdict in makereport, the summary.

Measuring lives in ``measure/``, judging in ``verdict.py``, rendering in
``report/``; this module only connects them.  Results travel on each report's
``user_properties`` and are collected in ``pytest_runtest_logreport``, so they
reach the process that writes files whether or not pytest-xdist is in use.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_kerasperf import backends, baseline, environment, markers, verdict, workloads
from pytest_kerasperf.baseline import Change
from pytest_kerasperf.measure import (
    CountsUnstable,
    count_calls,
    from_benchmark_stats,
    graph_breaks,
)
from pytest_kerasperf.record import Budget, GraphRecord, Record
from pytest_kerasperf.report import json_report, terminal

PROPERTY = "kerasperf"
MODES = ("eager", "compiled")


# ----------------------------------------------------------------- options


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {value}")
    return value


def _tolerance(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction such as 0.1, got {text!r}") from None
    if not 0 <= value < 10:
        raise argparse.ArgumentTypeError(f"expected a fraction such as 0.1, got {value}")
    return value


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kerasperf", "Keras performance gate (pytest-kerasperf)")
    group.addoption(
        "--kerasperf",
        action="store_true",
        help="run perf tests (those using the kerasperf fixture or its markers) and gate them "
        "against the committed baselines; without it they are skipped. Needs PYTHONHASHSEED=0",
    )
    group.addoption(
        "--kerasperf-update-baseline",
        action="store_true",
        help="re-measure the perf tests that run and rewrite their baseline entries "
        "(implies --kerasperf); other entries are left untouched",
    )
    group.addoption(
        "--kerasperf-baseline-dir",
        metavar="DIR",
        help="directory of the baseline files <backend>.json, relative to rootdir "
        "(default: ini kerasperf_baseline_dir, else 'baselines')",
    )
    group.addoption(
        "--kerasperf-json", metavar="PATH", help="write every perf result to PATH as JSON"
    )
    group.addoption(
        "--kerasperf-require-baseline",
        action="store_true",
        help="fail a perf test that has no baseline entry (default: pass with a note)",
    )
    group.addoption(
        "--kerasperf-latency-tolerance",
        type=_tolerance,
        metavar="FRACTION",
        help="relative slowdown of the median allowed before a latency regression "
        "(default: ini kerasperf_latency_tolerance, else 0.10)",
    )
    group.addoption(
        "--kerasperf-gate-latency-on-cpu",
        action="store_true",
        help="also fail on latency regressions and max_latency measured on a CPU "
        "(default: only on an accelerator; CPU latency is reported)",
    )
    group.addoption(
        "--kerasperf-warmup",
        type=_non_negative_int,
        metavar="N",
        help="untimed calls before timing (default: ini kerasperf_warmup, else 10)",
    )
    group.addoption(
        "--kerasperf-rounds",
        type=_non_negative_int,
        metavar="N",
        help="timed calls, each followed by a device sync; 0 skips timing "
        "(default: ini kerasperf_rounds, else 50)",
    )
    parser.addini("kerasperf_baseline_dir", "directory of the baseline files", default="baselines")
    parser.addini("kerasperf_latency_tolerance", "relative latency tolerance", default="0.10")
    parser.addini(
        "kerasperf_gate_latency_on_cpu", "gate latency on a CPU too", type="bool", default=False
    )
    parser.addini("kerasperf_warmup", "untimed calls before timing", default="10")
    parser.addini("kerasperf_rounds", "timed calls", default="50")


# ------------------------------------------------------------------- state


@dataclass
class Session:
    enabled: bool
    updating: bool
    backend: str
    baseline_path: Path
    baseline: dict[str, Record]
    settings: verdict.Settings
    warmup: int
    rounds: int
    json_path: Path | None
    results: list[dict[str, Any]] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    env: dict[str, str | None] | None = None
    update_error: str | None = None
    compiled: dict[int, tuple[Any, Callable[..., Any], GraphRecord | None]] = field(
        default_factory=dict
    )


SESSION = pytest.StashKey[Session]()
RECORD = pytest.StashKey[Record]()
GRAPHS = pytest.StashKey[list[GraphRecord]]()


def _option(config: pytest.Config, name: str, ini: str, convert: Callable[[str], Any]) -> Any:
    value = config.getoption(name)
    if value is not None:
        return value
    raw = str(config.getini(ini))
    try:
        return convert(raw)
    except argparse.ArgumentTypeError as error:
        raise pytest.UsageError(f"ini option {ini} = {raw!r}: {error}") from None


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    for line in markers.help_lines():
        config.addinivalue_line("markers", line)
    updating = bool(config.getoption("kerasperf_update_baseline"))
    enabled = updating or bool(config.getoption("kerasperf"))
    if updating and (_is_xdist_worker(config) or config.getoption("numprocesses", None)):
        raise pytest.UsageError(
            "--kerasperf-update-baseline cannot run under pytest-xdist: workers would race on "
            "the baseline files; rerun it without -n (or with -n 0)"
        )
    if enabled and sys.flags.hash_randomization:
        raise pytest.UsageError(
            "--kerasperf needs PYTHONHASHSEED=0: with random string hashing, set iteration "
            "order changes between processes and so do some libraries' call counts (jax's "
            "einsum path search); run `PYTHONHASHSEED=0 pytest --kerasperf ...`"
        )
    backend = backends.active_backend()
    raw_dir = config.getoption("kerasperf_baseline_dir") or str(
        config.getini("kerasperf_baseline_dir")
    )
    baseline_dir = Path(raw_dir)
    if not baseline_dir.is_absolute():
        baseline_dir = config.rootpath / baseline_dir
    path = baseline.baseline_path(baseline_dir, backend)
    entries: dict[str, Record] = {}
    if enabled:
        try:
            entries = baseline.load(path, backend)
        except baseline.BaselineError as error:
            raise pytest.UsageError(str(error)) from None
    gate_cpu = bool(config.getoption("kerasperf_gate_latency_on_cpu")) or bool(
        config.getini("kerasperf_gate_latency_on_cpu")
    )
    json_path = config.getoption("kerasperf_json")
    state = Session(
        enabled=enabled,
        updating=updating,
        backend=backend,
        baseline_path=path,
        baseline=entries,
        settings=verdict.Settings(
            comparable_fields=backends.comparable_fields(backend),
            latency_tolerance=_option(
                config, "kerasperf_latency_tolerance", "kerasperf_latency_tolerance", _tolerance
            ),
            gate_latency_on_cpu=gate_cpu,
            updating=updating,
            require_baseline=bool(config.getoption("kerasperf_require_baseline")),
        ),
        warmup=_option(config, "kerasperf_warmup", "kerasperf_warmup", _non_negative_int),
        rounds=_option(config, "kerasperf_rounds", "kerasperf_rounds", _non_negative_int),
        json_path=Path(json_path) if json_path else None,
    )
    config.stash[SESSION] = state
    if enabled and not _is_xdist_worker(config):
        config.pluginmanager.register(ResultsCollector(state), "kerasperf-results")


# --------------------------------------------------------------- collection


def _budgets(item: pytest.Item) -> list[Budget]:
    found = []
    for name in markers.MARKERS:
        for mark in item.iter_markers(name):
            try:
                found.append(markers.budget_from_mark(name, mark.args, dict(mark.kwargs)))
            except markers.MarkerError as error:
                args = ", ".join(
                    [repr(a) for a in mark.args] + [f"{k}={v!r}" for k, v in mark.kwargs.items()]
                )
                raise pytest.UsageError(
                    f"{item.nodeid}: bad marker @pytest.mark.{name}({args}): {error}"
                ) from None
    return found


def _is_perf_test(item: pytest.Item) -> bool:
    fixtures = getattr(item, "fixturenames", ())
    return "kerasperf" in fixtures or any(item.get_closest_marker(name) for name in markers.MARKERS)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    state = config.stash[SESSION]
    skip = pytest.mark.skip(reason="perf test: run with --kerasperf to measure and gate it")
    owners: dict[str, str] = {}
    for item in items:
        _budgets(item)  # a wrong marker argument is a collection error, run or not
        if not _is_perf_test(item):
            continue
        if not state.enabled:
            item.add_marker(skip)
            continue
        key = baseline.test_key(item.nodeid)
        if owners.setdefault(key, item.nodeid) != item.nodeid:
            raise pytest.UsageError(
                f"{owners[key]} and {item.nodeid} share the baseline key {key!r} "
                "(keys drop the file's directory): rename one of the test files"
            )


# ----------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def kerasperf_backend(pytestconfig: pytest.Config) -> str:
    """The active Keras backend; skips when its framework is not installed."""
    try:
        backends.import_keras()
    except backends.FrameworkMissing as error:
        pytest.skip(f"kerasperf: {error}")
    return pytestconfig.stash[SESSION].backend


@pytest.fixture(scope="session", params=MODES)
def kerasperf_mode(request: pytest.FixtureRequest, kerasperf_backend: str) -> str:
    """'eager' or 'compiled' (torch.compile / jax.jit / tf.function)."""
    mode = str(request.param)
    if mode == "compiled" and not backends.has_compiled_mode(kerasperf_backend):
        pytest.skip(f"the {kerasperf_backend} backend has no compiled mode")
    return mode


@pytest.fixture
def kerasperf_compile(
    request: pytest.FixtureRequest, kerasperf_backend: str
) -> Callable[..., Callable[..., Any]]:
    """``compile(model, *example_args, **example_kwargs)`` -> the model's compiled forward.

    One compile per model per session.  On torch the model's graph breaks are
    taken first with ``torch._dynamo.explain`` on the example inputs (explain
    resets dynamo, so it runs before the compile) and reported for every test
    that uses the compiled forward.
    """
    state = request.config.stash[SESSION]

    def compile_model(model: Any, *example_args: Any, **example_kwargs: Any) -> Callable[..., Any]:
        cached = state.compiled.get(id(model))
        if cached is None:
            graph = None
            if kerasperf_backend == "torch":
                graph = graph_breaks(model, example_args, example_kwargs)
            forward = backends.compile_forward(model, kerasperf_backend)
            cached = (model, forward, graph)
            state.compiled[id(model)] = cached
        if cached[2] is not None:
            request.node.stash.setdefault(GRAPHS, []).append(cached[2])
        return cached[1]

    return compile_model


@pytest.fixture(scope="session")
def cnn_model(kerasperf_backend: str) -> Any:
    """The issue's CNN (eager Keras model, seeded, channels_last)."""
    return workloads.build_cnn()


@pytest.fixture(scope="session")
def lm_model(kerasperf_backend: str) -> Any:
    """The issue's 2-layer transformer LM (eager Keras model, seeded)."""
    return workloads.build_lm()


@pytest.fixture(scope="session")
def cnn_input(kerasperf_backend: str) -> Any:
    """Seeded float32 images, shape (4, 32, 32, 3)."""
    return workloads.cnn_input()


@pytest.fixture(scope="session")
def lm_prompt(kerasperf_backend: str) -> Any:
    """int32 ids, all ones, shape (4, 64)."""
    return workloads.lm_prompt()


@pytest.fixture
def cnn(
    cnn_model: Any,
    cnn_input: Any,
    kerasperf_mode: str,
    kerasperf_compile: Callable[..., Callable[..., Any]],
) -> Any:
    """The CNN's forward for this mode: the model, or its compiled forward."""
    if kerasperf_mode == "eager":
        return cnn_model
    return kerasperf_compile(cnn_model, cnn_input, training=False)


@pytest.fixture
def lm(
    lm_model: Any,
    lm_prompt: Any,
    kerasperf_mode: str,
    kerasperf_compile: Callable[..., Callable[..., Any]],
) -> Any:
    """The LM's forward for this mode: the model, or its compiled forward."""
    if kerasperf_mode == "eager":
        return lm_model
    return kerasperf_compile(lm_model, lm_prompt, training=False)


@contextlib.contextmanager
def _traceback_filtering_on() -> Iterator[None]:
    """Measure Keras as users run it: keras.src.testing.TestCase turns filtering off."""
    keras = backends.import_keras()
    was_on = keras.config.is_traceback_filtering_enabled()
    if not was_on:
        keras.config.enable_traceback_filtering()
    try:
        yield
    finally:
        if not was_on:
            keras.config.disable_traceback_filtering()


class KerasPerf:
    """The measuring fixture: ``kerasperf(workload)`` measures one workload call.

    Passes, in order: one unprofiled call (compiles and traces happen here),
    the count pass (cProfile until counts repeat), then the timing pass
    (pytest-benchmark, warm-up, device sync after every call, no profiler).
    Graph breaks come from the compiled forwards the test requested.
    """

    def __init__(self, request: pytest.FixtureRequest, backend: str) -> None:
        self._request = request
        self._backend = backend
        self._state = request.config.stash[SESSION]
        self.record: Record | None = None

    @property
    def mode(self) -> str:
        if "kerasperf_mode" in self._request.fixturenames:
            return str(self._request.getfixturevalue("kerasperf_mode"))
        return "eager"

    def __call__(self, workload: Callable[[], Any]) -> Record:
        if self.record is not None:
            raise RuntimeError("kerasperf measures one workload per test; split the test")
        node = self._request.node
        state = self._state
        sync = backends.make_sync(self._backend)
        with _traceback_filtering_on():
            sync(workload())
            try:
                counts = count_calls(workload)
            except CountsUnstable as error:
                pytest.fail(f"kerasperf: {error}", pytrace=False)
            latency = None
            if state.rounds > 0:
                benchmark = self._request.getfixturevalue("benchmark")
                benchmark.pedantic(
                    lambda: sync(workload()),
                    rounds=state.rounds,
                    warmup_rounds=state.warmup,
                    iterations=1,
                )
                if getattr(benchmark, "stats", None) is not None:
                    env = self._environment()
                    latency = from_benchmark_stats(
                        benchmark.stats.stats,
                        device=str(env["device"]),
                        accelerator=env["accelerator"] == "yes",
                    )
        graphs = node.stash.get(GRAPHS, [])
        graph = None
        if graphs:
            graph = GraphRecord(
                graphs=sum(g.graphs for g in graphs),
                breaks=sum(g.breaks for g in graphs),
                reasons=tuple(sorted({r for g in graphs for r in g.reasons})),
            )
        self.record = Record(
            backend=self._backend,
            mode=self.mode,
            calls=counts.calls,
            calls_by_function=counts.calls_by_function,
            graph_breaks=graph,
            latency=latency,
            environment=self._environment(),
        )
        node.stash[RECORD] = self.record
        return self.record

    def _environment(self) -> dict[str, str | None]:
        if self._state.env is None:
            self._state.env = environment.capture(self._backend)
        return self._state.env


@pytest.fixture
def kerasperf(request: pytest.FixtureRequest, kerasperf_backend: str) -> KerasPerf:
    """Measure a workload: ``kerasperf(lambda: model(x, training=False))``."""
    return KerasPerf(request, kerasperf_backend)


# ------------------------------------------------------------------ verdict


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if call.when != "call" or SESSION not in item.config.stash:
        return report
    state = item.config.stash[SESSION]
    record = item.stash.get(RECORD, None)
    if record is None:
        if report.passed and state.enabled and _budgets(item):
            report.outcome = "failed"
            report.longrepr = "kerasperf: this test has budget markers but never called kerasperf()"
        return report
    key = baseline.test_key(item.nodeid)
    base = state.baseline.get(key)
    result = verdict.judge(record, base, _budgets(item), state.settings)
    test_failed = report.failed  # the test's own failure, before our verdict
    if report.passed and not result.passed:
        report.outcome = "failed"
        report.longrepr = "\n".join(f"kerasperf {line}" for line in result.failures)
    detail = terminal.detail_section(result)
    if detail:
        report.sections.append(("kerasperf", detail))
    report.user_properties.append(
        (
            PROPERTY,
            json_report.result_json(
                item.nodeid, key, record, base, result, report.passed, test_failed
            ),
        )
    )
    return report


class ResultsCollector:
    """Collects the results that reports carry, in the process that writes files.

    Reports from pytest-xdist workers arrive here with their user_properties,
    so the controller sees every result without a side channel.
    """

    def __init__(self, state: Session) -> None:
        self._state = state

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, value in report.user_properties:
            if name == PROPERTY and isinstance(value, dict):
                self._state.results.append(value)


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if SESSION not in config.stash or _is_xdist_worker(config):
        return
    state = config.stash[SESSION]
    if not state.enabled:
        return
    if state.updating:
        # A test that failed on its own (not on a kerasperf verdict) proves nothing.
        measured = {
            r["key"]: Record.from_json(r["record"]) for r in state.results if not r["test_failed"]
        }
        try:
            state.changes = baseline.update(state.baseline_path, state.backend, measured)
        except (baseline.BaselineError, OSError) as error:
            state.update_error = str(error)
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
    if state.json_path is not None:
        json_report.write(state.json_path, state.results)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if SESSION not in config.stash or _is_xdist_worker(config):
        return
    state = config.stash[SESSION]
    if not state.enabled:
        return
    for line in terminal.summary_lines(state.results, state.changes, state.baseline_path):
        terminalreporter.write_line(line)
    if state.update_error:
        terminalreporter.write_line(
            f"kerasperf: baseline NOT updated: {state.update_error}", red=True
        )
