"""The measuring handle: ``kerasperf(fn, *args)`` measures one workload call.

Passes, in order: one unprofiled call (compiles and traces happen here), the
count pass (cProfile until counts repeat), then the timing pass
(pytest-benchmark, warm-up, device sync after every call, no profiler).
Graph breaks come from the compiled forwards the test requested.  All three
run as users run Keras (``measure.users.as_users_run_it``).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from pytest_kerasperf import backends, environment, items, twins
from pytest_kerasperf.measure import (
    CountsUnstable,
    compile_health,
    count_calls,
    from_benchmark_stats,
    graph_breaks,
    lockstep,
    time_rounds,
)
from pytest_kerasperf.measure.graph import combine as combine_graphs
from pytest_kerasperf.measure.users import as_users_run_it
from pytest_kerasperf.options import Options
from pytest_kerasperf.record import (
    GraphRecord,
    InstructionsRecord,
    LatencyRecord,
    PlainTwinRecord,
    Record,
)
from pytest_kerasperf.state import (
    COMPILED,
    GRAPHS,
    LATENCY_NOT_MEASURED,
    RECORD,
    WORKLOAD,
    PluginState,
)
from pytest_kerasperf.twins import PlainWorkload


@dataclass
class Compiled:
    """One model's compiled forward and its graph breaks (torch), reused by every test."""

    model: Any  # kept alive so its id() is never reused
    forward: Callable[..., Any]
    graph: GraphRecord | None


@dataclass(frozen=True)
class Workload:
    """What a test measured, kept so that it can be run again (e.g. under a profiler)."""

    call: Callable[[], Any]  # the workload call, arguments bound
    sync: Callable[[Any], Any]  # waits for the device: sync(call()) is one timed call


#: (warm-up, timed rounds) where latency is gated: the issue script's WARMUP and RUNS.
GATED_TIMING = (10, 50)
#: Where latency is only reported (a CPU): a median of a few calls is what a
#: report needs, and the suite's cost stays what the counts need.
REPORTED_TIMING = (1, 5)


def timing(options: Options, gated: bool) -> tuple[int, int]:
    """(warm-up calls, timed rounds): the options, else by whether latency is gated."""
    warmup, rounds = GATED_TIMING if gated else REPORTED_TIMING
    return (
        warmup if options.warmup is None else options.warmup,
        rounds if options.rounds is None else options.rounds,
    )


def timing_blocker(
    config: pytest.Config, rounds: int | None, instructions: bool = False
) -> str | None:
    """Why the timing pass will not run in this session, or None.

    Perf tests are benchmarks to pytest-benchmark: ``--benchmark-only`` runs
    them.  ``--benchmark-skip`` and ``--benchmark-disable`` skip their timing
    pass only: counts and graph breaks are still measured and gated.
    pytest-benchmark does not time under pytest-xdist; neither do we.
    """
    if instructions:
        return "counted under callgrind: not timed"
    if rounds == 0:
        return "--kerasperf-rounds=0"
    if not config.pluginmanager.has_plugin("benchmark"):
        return "pytest-benchmark is not active (-p no:benchmark)"
    if config.getoption("benchmark_skip", False) and not config.getoption("benchmark_only", False):
        return "--benchmark-skip"
    if config.getoption("benchmark_disable", False) and not config.getoption(
        "benchmark_enable", False
    ):
        return "--benchmark-disable"
    if (
        hasattr(config, "workerinput")
        or os.environ.get("PYTEST_XDIST_WORKER")
        or config.getoption("dist", "no") != "no"
    ):
        return "pytest-benchmark does not time under pytest-xdist"
    return None


def compile_once(
    request: pytest.FixtureRequest, state: PluginState, backend: str, model: Any, example_input: Any
) -> Callable[[Any], Any]:
    """The model's compiled forward, ``f(x)``, built once per model per session.

    Built as the issue's script builds it (``backends.compile_forward``).  On
    torch the model's graph breaks are taken first with
    ``torch._dynamo.explain(model)(example_input, training=False)`` (explain
    resets dynamo, so it runs before the compile) and reported for every test
    that uses the compiled forward.
    """
    cached = state.compiled.get(id(model))
    if cached is None:
        graph = None
        if backend == "torch":
            graph = graph_breaks(model, (example_input,), {"training": False})
        forward = backends.compile_forward(model, backend)
        cached = state.compiled[id(model)] = Compiled(model, forward, graph)
    if cached.graph is not None:
        request.node.stash.setdefault(GRAPHS, []).append(cached.graph)
    request.node.stash.setdefault(COMPILED, []).append(cached.forward)
    return cached.forward


def train_step_once(
    request: pytest.FixtureRequest,
    state: PluginState,
    backend: str,
    mode: str,
    build: Callable[[], Any],
    x: Any,
    y: Any,
) -> Callable[[Any, Any], Any]:
    """A model's ``train_on_batch``, compiled for training, once per workload per session.

    ``build()`` makes the model; ``model.compile`` as
    ``workloads.compile_for_training`` writes it; then the user's first step
    (compiles happen there).  On torch, compiled, the step's graph breaks are
    taken first, with ``torch._dynamo.explain`` of another model built the same
    way (``backends.explainable_train_step``), and dynamo is reset after it,
    so that the measured model compiles as in a fresh process; the breaks are
    reported for every test of the step.  A backend on which Keras cannot
    train skips the test, with Keras's own reason.
    """
    from pytest_kerasperf import workloads

    key = ("train", build.__qualname__, mode)
    cached = state.trained.get(key)
    if cached is None:
        graph = None
        if backend == "torch" and mode == "compiled":
            probe = build()
            workloads.compile_for_training(probe, mode)
            graph = graph_breaks(
                backends.explainable_train_step(probe, x, y), ([(x, y, None)],), {}
            )
            backends.reset_compiler(backend)
        model = build()
        workloads.compile_for_training(model, mode)
        try:
            model.train_on_batch(x, y)
        except NotImplementedError as error:
            pytest.skip(f"kerasperf: Keras cannot train on the {backend} backend: {error}")
        cached = state.trained[key] = Compiled(model, model.train_on_batch, graph)
    if cached.graph is not None:
        request.node.stash.setdefault(GRAPHS, []).append(cached.graph)
    if mode == "compiled":
        request.node.stash.setdefault(COMPILED, []).extend(
            backends.train_functions(cached.model, backend)
        )
    train_on_batch: Callable[[Any, Any], Any] = cached.forward
    return train_on_batch


def _recompiling(
    watch: Callable[[], contextlib.AbstractContextManager[compile_health.CompileEvents]] | None,
    workload: Callable[[], Any],
    sync: Callable[[Any], Any],
) -> str:
    """Why counts may not repeat: the workload compiles again on every call (a retrace)."""
    if watch is None:
        return ""
    with watch() as events:
        sync(workload())
    if not events.count:
        return ""
    return (
        f"; the workload compiles again on every call after warm-up ({events.count} in the "
        f"last call: {'; '.join(events.top_causes(2))}), and tracing costs move call counts"
    )


def _synced(call: Callable[[], Any], sync: Callable[[Any], Any]) -> None:
    sync(call())


class KerasPerf:
    """The measuring handle: the ``kerasperf`` fixture, or ``self.kerasperf`` in a unittest test."""

    def __init__(
        self,
        request: pytest.FixtureRequest,
        backend: str,
        state: PluginState,
        mode: str | None = None,
    ) -> None:
        self._request = request
        self._backend = backend
        self._state = state
        self._mode = mode
        self._plain: str | PlainWorkload | None = None
        self.record: Record | None = None

    @property
    def mode(self) -> str:
        """The test's ``kerasperf_mode``, else its ``kerasperf`` marker's mode, else eager."""
        if "kerasperf_mode" in self._request.fixturenames:
            return str(self._request.getfixturevalue("kerasperf_mode"))
        return self._mode or "eager"

    def compile(self, model: Any, example_input: Any) -> Callable[[Any], Any]:
        """As the ``kerasperf_compile`` fixture: the model's compiled forward, ``f(x)``."""
        return compile_once(self._request, self._state, self._backend, model, example_input)

    def against_plain(self, workload: str | PlainWorkload) -> KerasPerf:
        """Name the workload's plain-framework twin: ``kerasperf.against_plain("lm_forward")``.

        A name from ``twins.WORKLOADS`` means the issue's model in plain
        torch (torch backend) or plain JAX (jax backend), in the test's mode;
        tensorflow and numpy have none.  It is measured in the same process
        and run, right after the Keras workload, with the same passes (counts,
        then timing), when ``--kerasperf-plain`` is on or a ``max_overhead``
        budget asks for it.  Returns the handle: ``kerasperf.against_plain(n)(fn, x)``.
        """
        if isinstance(workload, str) and workload not in twins.WORKLOADS:
            raise ValueError(f"no plain workload {workload!r}; one of {', '.join(twins.WORKLOADS)}")
        self._plain = workload
        return self

    def __call__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Record:
        """Measure ``fn(*args, **kwargs)``: ``kerasperf(lm, ids)`` or ``kerasperf(lambda: ...)``.

        The count includes ``fn`` itself and everything it calls; ``args`` are
        bound without a Python call of ours, as the issue's script's
        ``bench(fn, *a)`` calls ``fn(*a)``.
        """
        if self.record is not None:
            raise RuntimeError("kerasperf measures one workload per test; split the test")
        workload = functools.partial(fn, *args, **kwargs) if args or kwargs else fn
        node = self._request.node
        sync = backends.make_sync(self._backend)
        node.stash[WORKLOAD] = Workload(call=workload, sync=sync)
        with as_users_run_it():
            sync(workload())
            watch = compile_health.watcher(self._backend, node.stash.get(COMPILED, []))
            try:
                counts = count_calls(workload)
            except CountsUnstable as error:
                pytest.fail(f"kerasperf: {error}{_recompiling(watch, workload, sync)}", False)
            events = None
            if watch is not None:  # one unprofiled call: the listeners are Python code
                with watch() as events:
                    sync(workload())
            instructions = self._count_instructions(lambda: sync(workload()))
            latency = self._time(lambda: sync(workload()))
            plain = self._measure_plain(timed=latency is not None)
        graph = combine_graphs(node.stash.get(GRAPHS, []))
        self.record = Record(
            backend=self._backend,
            mode=self.mode,
            calls=counts.calls,
            calls_by_function=counts.calls_by_function,
            graph_breaks=graph,
            latency=latency,
            environment=self._environment(),
            call_edges=counts.call_edges,
            recompiles=events.count if events is not None else None,
            recompile_causes=events.top_causes() if events is not None else (),
            plain_twin=plain,
            instructions=instructions,
        )
        node.stash[RECORD] = self.record
        return self.record

    def _plain_workload(self) -> PlainWorkload | None:
        """The named plain twin, if this run measures it (``--kerasperf-plain`` or max_overhead)."""
        if self._plain is None:
            return None
        wanted = self._state.options.plain or any(
            b.kind == "overhead" and b.applies(self._backend, self.mode)
            for b in items.budgets(self._request.node)
        )
        if not wanted:
            return None
        if not isinstance(self._plain, str):
            return self._plain
        framework = twins.framework_for(self._backend)
        if framework is None:
            return None
        return twins.plain_workload(framework, self._plain, self.mode)

    def _measure_plain(self, timed: bool) -> PlainTwinRecord | None:
        """The plain twin's calls and (when the Keras workload was timed) latency.

        pytest-benchmark times one function per test (the Keras workload), so
        the twin's rounds are timed here, with the same warm-up, rounds and
        device sync, into pytest-benchmark's own ``Stats``.
        """
        plain = self._plain_workload()
        if plain is None:
            return None
        run = functools.partial(_synced, plain.call, plain.sync)
        run()  # compiles and traces happen here
        try:
            counts = count_calls(plain.call)
        except CountsUnstable as error:
            pytest.fail(f"kerasperf: {plain.name}: {error}", pytrace=False)
        latency = None
        if timed:
            env = self._environment()
            gated = env["accelerator"] == "yes" or self._state.options.gate_latency_on_cpu
            warmup, rounds = timing(self._state.options, gated)
            latency = time_rounds(
                run,
                warmup=warmup,
                rounds=rounds,
                device=str(env["device"]),
                accelerator=env["accelerator"] == "yes",
            )
        return PlainTwinRecord(
            framework=plain.framework, name=plain.name, calls=counts.calls, latency=latency
        )

    def _count_instructions(self, call: Callable[[], None]) -> InstructionsRecord | None:
        """Instructions of one call under callgrind (``--kerasperf-instructions``), or None."""
        options = self._state.options
        if not options.instructions:
            return None
        from pytest_kerasperf.measure.instructions import (
            InstructionsUnavailable,
            count_instructions,
        )

        try:
            counted = count_instructions(
                call,
                label=self._request.node.nodeid,
                warmup=options.instructions_warmup,
                rounds=options.instructions_rounds,
            )
        except InstructionsUnavailable as error:
            pytest.fail(f"kerasperf: {error}", pytrace=False)
        # The same valgrind on another CPU may show the program other instructions (CPUID).
        device = self._environment().get("device") or "an unknown CPU"
        return InstructionsRecord(
            median=counted.median,
            low=counted.low,
            high=counted.high,
            rounds=counted.rounds,
            tool=f"{counted.tool} on {device}",
        )

    def _time(self, call: Callable[[], None]) -> LatencyRecord | None:
        options = self._state.options
        blocker = timing_blocker(self._request.config, options.rounds, options.instructions)
        if blocker is None:
            env = self._environment()
            gated = env["accelerator"] == "yes" or self._state.options.gate_latency_on_cpu
            warmup, rounds = timing(self._state.options, gated)
            benchmark = self._request.getfixturevalue("benchmark")
            turn = lockstep.child_turn()  # an A/B's process: one side's round at a time
            benchmark.pedantic(
                call,
                setup=turn.ready if turn else None,
                teardown=turn.done if turn else None,
                rounds=rounds,
                warmup_rounds=warmup,
                iterations=1,
            )
            if getattr(benchmark, "stats", None) is not None:
                return from_benchmark_stats(
                    benchmark.stats.stats,
                    device=str(env["device"]),
                    accelerator=env["accelerator"] == "yes",
                )
            blocker = "pytest-benchmark took no timings"
        self._request.node.stash[LATENCY_NOT_MEASURED] = blocker
        return None

    def _environment(self) -> dict[str, str | None]:
        if self._state.env is None:
            self._state.env = environment.capture(self._backend)
        return self._state.env
