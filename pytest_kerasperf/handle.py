"""The measuring handle: ``kerasperf(fn, *args)`` measures one workload call.

One unprofiled call first (compiles and traces happen there), then each metric's measuring pass
in the registry's order (``metrics.METRICS``), all as users run Keras
(``measure.users.as_users_run_it``).  The handle also keeps the test's measuring caches: a model
is compiled once per test.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from pytest_kerasperf import backends, environment, items, twins, workloads
from pytest_kerasperf.measure import compile_health
from pytest_kerasperf.measure.context import Measuring, ToCompile
from pytest_kerasperf.measure.dynamo import quiet_trace
from pytest_kerasperf.measure.users import as_if_never_compiled, as_users_run_it
from pytest_kerasperf.metrics import METRICS
from pytest_kerasperf.record import Record
from pytest_kerasperf.state import PluginState
from pytest_kerasperf.twins import PlainWorkload


@dataclass
class Compiled:
    """One model's compiled forward and what each metric took of it before the compile
    (``Metric.before_compile``), reused by every test of the model."""

    model: Any  # kept alive so its id() is never reused
    forward: Callable[..., Any]
    taken: dict[str, object]


@dataclass(frozen=True)
class Workload:
    """What a test measured, kept so that it can be run again (e.g. under a profiler)."""

    call: Callable[[], Any]  # the workload call, arguments bound
    sync: Callable[[Any], Any]  # waits for the device: sync(call()) is one timed call


@dataclass(frozen=True)
class Measured:
    """What the handle leaves on the test's item for the gate, once measured."""

    record: Record
    latency_not_measured: str | None = None


@dataclass
class Caches:
    """A test's compiled models, each compiled once: a compile is the test's own, never
    shared with another test (what a compile before it did would count in it)."""

    compiled: dict[int, Compiled] = field(default_factory=dict)
    #: (``"train"``, the model's builder, mode) -> the model compiled for training
    trained: dict[tuple[str, str, str], Compiled] = field(default_factory=dict)


CACHES = pytest.StashKey[Caches]()
ENVIRONMENT = pytest.StashKey[dict[str, str | None]]()  # this process's, read once
MEASURED = pytest.StashKey[Measured]()
WORKLOAD = pytest.StashKey[Workload]()  # kept for a profile of the test's report only
TAKEN = pytest.StashKey[list[dict[str, object]]]()  # of each compiled function a test used
COMPILED = pytest.StashKey[list[Callable[..., Any]]]()  # compiled forwards a test used


def before_compile(backend: str, target: ToCompile) -> dict[str, object]:
    """Each metric's take of a function about to be compiled, by metric name."""
    taken = {metric.name: metric.before_compile(backend, target) for metric in METRICS}
    return {name: value for name, value in taken.items() if value is not None}


def used(request: pytest.FixtureRequest, compiled: Compiled, functions: Sequence[Any]) -> None:
    """The test uses ``compiled``: what the metrics took of it counts in the test's record, and
    the compiles after warm-up of its compiled ``functions`` in its recompiles."""
    request.node.stash.setdefault(TAKEN, []).append(compiled.taken)
    request.node.stash.setdefault(COMPILED, []).extend(functions)


def caches(request: pytest.FixtureRequest) -> Caches:
    found: Caches = request.node.stash.setdefault(CACHES, Caches())
    return found


def compile_once(
    request: pytest.FixtureRequest, backend: str, model: Any, example_input: Any
) -> Callable[[Any], Any]:
    """The model's compiled forward, ``f(x)``, built once per model per test.

    Built as the issue's script builds it (``backends.compile_forward``).  Each
    metric's ``before_compile`` looks at ``model(example_input, training=False)``
    first (on torch: ``torch._dynamo.explain``, which resets dynamo), and what
    it took is reported for every test that uses the compiled forward.
    """
    compiled = caches(request).compiled
    cached = compiled.get(id(model))
    if cached is None:
        target = ToCompile("compiled", lambda: (model, (example_input,), {"training": False}))
        taken = before_compile(backend, target)
        forward = backends.compile_forward(model, backend)
        cached = compiled[id(model)] = Compiled(model, forward, taken)
    used(request, cached, [cached.forward])
    return cached.forward


def compile_function_once(
    request: pytest.FixtureRequest,
    backend: str,
    fn: Callable[..., Any],
    example_args: tuple[Any, ...],
    *,
    graph: bool = True,
) -> Callable[..., Any]:
    """``fn`` compiled (``backends.compile_function``), once per function per test; where
    ``graph``, each metric's ``before_compile`` looks at ``fn(*example_args)`` first (on torch:
    ``torch._dynamo.explain``).

    torch keeps what it compiled on the code object, and every census op's function is the
    same code with another op in its closure: without a reset, the ninth op would be dynamo's
    ninth recompile of one frame, and its last (``recompile_limit``).  explain resets dynamo;
    where nothing was taken (no explain ran), the compiler is reset here, so each function
    compiles as in a fresh process."""
    compiled = caches(request).compiled
    cached = compiled.get(id(fn))
    if cached is None:
        target = ToCompile("compiled", lambda: (fn, example_args, {}))
        taken = before_compile(backend, target) if graph else {}
        if not taken:
            backends.reset_compiler(backend)
        cached = Compiled(fn, backends.compile_function(fn, backend), taken)
        compiled[id(fn)] = cached
    used(request, cached, [cached.forward])
    return cached.forward


def train_step_once(
    request: pytest.FixtureRequest,
    backend: str,
    mode: str,
    build: Callable[[], Any],
    x: Any,
    y: Any,
) -> Callable[[Any, Any], Any]:
    """A model's ``train_on_batch``, compiled for training, once per workload per test.

    ``build()`` makes the model; ``model.compile`` as ``workloads.compile_for_training`` writes
    it; then the user's first step (compiles happen there).  Each metric's ``before_compile``
    first looks at the step of another model built the same way
    (``backends.explainable_train_step``; on torch, compiled: ``torch._dynamo.explain``), and the
    compiler is reset after it, so that the measured model compiles as in a fresh process.  A
    backend on which Keras cannot train skips the test, with Keras's own reason.
    """
    key = ("train", build.__qualname__, mode)
    trained = caches(request).trained
    cached = trained.get(key)
    if cached is None:

        def probe() -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
            twin = build()
            workloads.compile_for_training(twin, mode)
            return backends.explainable_train_step(twin, x, y), ([(x, y, None)],), {}

        taken = before_compile(backend, ToCompile(mode, probe))
        if taken:
            backends.reset_compiler(backend)
        model = build()
        workloads.compile_for_training(model, mode)
        try:
            with quiet_trace():  # the first step compiles
                model.train_on_batch(x, y)
        except NotImplementedError as error:
            pytest.skip(f"kerasperf: Keras cannot train on the {backend} backend: {error}")
        cached = trained[key] = Compiled(model, model.train_on_batch, taken)
    compiled = backends.train_functions(cached.model, backend) if mode == "compiled" else []
    used(request, cached, compiled)
    train_on_batch: Callable[[Any, Any], Any] = cached.forward
    return train_on_batch


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
        return compile_once(self._request, self._backend, model, example_input)

    def compile_function(
        self, fn: Callable[..., Any], *example_args: Any, graph: bool = True
    ) -> Callable[..., Any]:
        """``fn``, a function of tensors, compiled as a model's forward is (``torch.compile``,
        ``jax.jit``, ``tf.function``), once per test; on torch its graph breaks are taken
        first, from ``example_args`` (``graph=False``: none are), and reported with the
        test."""
        return compile_function_once(
            self._request, self._backend, fn, tuple(example_args), graph=graph
        )

    def compiled_by_keras(self, *functions: Any) -> None:
        """Functions Keras compiled for the test (a model's ``train_function`` after
        ``compile(jit_compile=True)``): their compiles after warm-up are counted as the
        compiled forwards' are."""
        self._request.node.stash.setdefault(COMPILED, []).extend(functions)

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
        node.stash[WORKLOAD] = Workload(workload, sync)
        run = Measuring(
            request=self._request,
            options=self._state.options,
            backend=self._backend,
            workload=workload,
            sync=sync,
            environment=self._environment,
            taken=lambda name: [t[name] for t in node.stash.get(TAKEN, []) if name in t],
            compiled=lambda: node.stash.get(COMPILED, []),
            plain_workload=self._plain_workload,
        )
        # Every call from the first is watched for a frame the compiler gives up on (it
        # would run eagerly from then on, and the calls after warm-up compile nothing).
        gave_up = compile_health.gave_up_watcher(self._backend)
        with (
            as_users_run_it(),
            as_if_never_compiled(self._backend, self.mode),
            gave_up() as stopped,
        ):
            run.call()
            for metric in METRICS:
                metric.measure(run)
        run.fields["gave_up"] = tuple(stopped.frames)
        self.record = Record(
            backend=self._backend,
            mode=self.mode,
            environment=self._environment(),
            **run.fields,
        )
        node.stash[MEASURED] = Measured(self.record, run.latency_not_measured)
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

    def _environment(self) -> dict[str, str | None]:
        stash = self._request.config.stash
        if ENVIRONMENT not in stash:
            stash[ENVIRONMENT] = environment.capture(self._backend)
        return stash[ENVIRONMENT]
