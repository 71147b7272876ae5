"""The plugin's fixtures: the backend and mode, the issue's models, the measuring handle.

The model fixtures hand out exactly what the issue's script builds and calls
(``workloads.py``): numpy inputs, and per mode the script's one-argument
forward (``lambda x: model(x, training=False)``, the torch-compiled closure,
the jitted closure).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pytest_kerasperf import backends, workloads
from pytest_kerasperf.handle import KerasPerf
from pytest_kerasperf.measure import graph_breaks
from pytest_kerasperf.record import MODES
from pytest_kerasperf.session import GRAPHS, SESSION, Compiled


def modes(backend: str) -> tuple[str, ...]:
    """The modes a perf test runs in on ``backend`` (numpy has no compiled mode)."""
    return MODES if backends.has_compiled_mode(backend) else ("eager",)


@pytest.fixture(scope="session")
def kerasperf_backend(pytestconfig: pytest.Config) -> str:
    """The active Keras backend; skips (with the reason) when its framework is missing."""
    state = pytestconfig.stash[SESSION]
    try:
        backends.import_keras()
    except backends.FrameworkMissing as error:
        state.framework_missing = f"kerasperf: {error}"
        pytest.skip(state.framework_missing)
    return state.backend


@pytest.fixture(scope="session")
def kerasperf_mode(request: pytest.FixtureRequest, kerasperf_backend: str) -> str:
    """'eager' or 'compiled' (torch.compile / jax.jit / tf.function), one test id each."""
    return str(request.param)


@pytest.fixture
def kerasperf_compile(
    request: pytest.FixtureRequest, kerasperf_backend: str
) -> Callable[[Any, Any], Callable[[Any], Any]]:
    """``compile(model, example_input)`` -> the model's compiled forward, ``f(x)``.

    Built as the issue's script builds it (``backends.compile_forward``), once
    per model per session.  On torch the model's graph breaks are taken first
    with ``torch._dynamo.explain(model)(example_input, training=False)``
    (explain resets dynamo, so it runs before the compile) and reported for
    every test that uses the compiled forward.
    """
    state = request.config.stash[SESSION]

    def compile_model(model: Any, example_input: Any) -> Callable[[Any], Any]:
        cached = state.compiled.get(id(model))
        if cached is None:
            graph = None
            if kerasperf_backend == "torch":
                graph = graph_breaks(model, (example_input,), {"training": False})
            forward = backends.compile_forward(model, kerasperf_backend)
            cached = state.compiled[id(model)] = Compiled(model, forward, graph)
        if cached.graph is not None:
            request.node.stash.setdefault(GRAPHS, []).append(cached.graph)
        return cached.forward

    return compile_model


@pytest.fixture(scope="session")
def cnn_model(kerasperf_backend: str) -> Any:
    """The issue's CNN, built as the script builds it (seeded; channels_last, float32)."""
    return workloads.build_cnn()


@pytest.fixture(scope="session")
def lm_model(kerasperf_backend: str) -> Any:
    """The issue's 2-layer transformer LM, built as the script builds it (``+`` residuals)."""
    return workloads.build_lm()


@pytest.fixture(scope="session")
def cnn_input(kerasperf_backend: str) -> Any:
    """The script's images: a seeded float32 numpy array, shape (4, 32, 32, 3)."""
    return workloads.cnn_input()


@pytest.fixture(scope="session")
def lm_prompt(kerasperf_backend: str) -> Any:
    """The script's ids: an int32 numpy array of ones, shape (4, 64)."""
    return workloads.lm_prompt()


@pytest.fixture
def cnn(
    cnn_model: Any,
    cnn_input: Any,
    kerasperf_mode: str,
    kerasperf_compile: Callable[[Any, Any], Callable[[Any], Any]],
) -> Callable[[Any], Any]:
    """The CNN's forward for this mode, called as the script calls it: ``cnn(x)``."""
    if kerasperf_mode == "eager":
        return workloads.eager_forward(cnn_model)
    return kerasperf_compile(cnn_model, cnn_input)


@pytest.fixture
def lm(
    lm_model: Any,
    lm_prompt: Any,
    kerasperf_mode: str,
    kerasperf_compile: Callable[[Any, Any], Callable[[Any], Any]],
) -> Callable[[Any], Any]:
    """The LM's forward for this mode, called as the script calls it: ``lm(ids)``."""
    if kerasperf_mode == "eager":
        return workloads.eager_forward(lm_model)
    return kerasperf_compile(lm_model, lm_prompt)


@pytest.fixture
def kerasperf(request: pytest.FixtureRequest, kerasperf_backend: str) -> KerasPerf:
    """Measure a workload: ``kerasperf(lm, lm_prompt)`` or ``kerasperf(lambda: ...)``."""
    return KerasPerf(request, kerasperf_backend, request.config.stash[SESSION])
