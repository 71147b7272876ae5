"""The plugin's fixtures: the backend and mode, the issue's models, the measuring handle.

The model fixtures hand out exactly what the issue's script builds and calls
(``workloads.py``): numpy inputs, and per mode the script's one-argument
forward (``lambda x: model(x, training=False)``, the torch-compiled closure,
the jitted closure).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from pytest_kerasperf import backends, items, workloads
from pytest_kerasperf.state import STATE

if TYPE_CHECKING:
    from pytest_kerasperf.handle import KerasPerf


#: The attribute that marks the skip of a perf test whose backend's framework is not
#: installed: the gate counts these apart (``--kerasperf-strict`` fails on them), by the
#: mark, not by their text (a subclass of pytest's skip would put its name in the reason).
FRAMEWORK_MISSING = "kerasperf_framework_missing"


def framework_missing(excinfo: pytest.ExceptionInfo[BaseException] | None) -> bool:
    return excinfo is not None and bool(getattr(excinfo.value, FRAMEWORK_MISSING, False))


@pytest.fixture(scope="session")
def kerasperf_backend(pytestconfig: pytest.Config) -> str:
    """The active Keras backend; skips (with the reason) when its framework is missing."""
    state = pytestconfig.stash[STATE]
    try:
        backends.import_keras()
    except backends.FrameworkMissing as error:
        skip = pytest.skip.Exception(f"kerasperf: {error}")
        setattr(skip, FRAMEWORK_MISSING, True)
        raise skip from None
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

    Built as the issue's script builds it, once per model per test (a compile another test
    made would count in this one: docs/exact-counts.md); on torch the model's graph breaks are
    recorded first (``handle.compile_once``).
    """
    from pytest_kerasperf.handle import compile_once

    def compile_model(model: Any, example_input: Any) -> Callable[[Any], Any]:
        return compile_once(request, kerasperf_backend, model, example_input)

    return compile_model


@pytest.fixture
def kerasperf_cnn_model(kerasperf_backend: str) -> Any:
    """The issue's CNN, built as the script builds it (seeded; channels_last, float32), for
    this test alone: a model used by an earlier test would carry what that test did to it."""
    return workloads.build_cnn()


@pytest.fixture
def kerasperf_lm_model(kerasperf_backend: str) -> Any:
    """The issue's 2-layer transformer LM, built as the script builds it (``+`` residuals),
    for this test alone."""
    return workloads.build_lm()


@pytest.fixture(scope="session")
def kerasperf_cnn_input(kerasperf_backend: str) -> Any:
    """The script's images: a seeded float32 numpy array, shape (4, 32, 32, 3)."""
    return workloads.cnn_input()


@pytest.fixture(scope="session")
def kerasperf_lm_prompt(kerasperf_backend: str) -> Any:
    """The script's ids: an int32 numpy array of ones, shape (4, 64)."""
    return workloads.lm_prompt()


@pytest.fixture
def kerasperf_cnn(
    kerasperf_cnn_model: Any,
    kerasperf_cnn_input: Any,
    kerasperf_mode: str,
    kerasperf_compile: Callable[[Any, Any], Callable[[Any], Any]],
) -> Callable[[Any], Any]:
    """The CNN's forward for this mode, called as the script calls it: ``forward(x)``."""
    if kerasperf_mode == "eager":
        return workloads.eager_forward(kerasperf_cnn_model)
    return kerasperf_compile(kerasperf_cnn_model, kerasperf_cnn_input)


@pytest.fixture
def kerasperf_lm(
    kerasperf_lm_model: Any,
    kerasperf_lm_prompt: Any,
    kerasperf_mode: str,
    kerasperf_compile: Callable[[Any, Any], Callable[[Any], Any]],
) -> Callable[[Any], Any]:
    """The LM's forward for this mode, called as the script calls it: ``forward(ids)``."""
    if kerasperf_mode == "eager":
        return workloads.eager_forward(kerasperf_lm_model)
    return kerasperf_compile(kerasperf_lm_model, kerasperf_lm_prompt)


@pytest.fixture(scope="session")
def kerasperf_cnn_labels(kerasperf_backend: str) -> Any:
    """The CNN's class ids for a train step: a seeded int32 numpy array, shape (4,)."""
    return workloads.cnn_labels()


@pytest.fixture(scope="session")
def kerasperf_lm_targets(kerasperf_backend: str) -> Any:
    """The LM's next-token ids for a train step: the prompt shifted by one, shape (4, 64)."""
    return workloads.lm_targets()


@pytest.fixture
def kerasperf_cnn_train_step(
    request: pytest.FixtureRequest,
    kerasperf_backend: str,
    kerasperf_mode: str,
    kerasperf_cnn_input: Any,
    kerasperf_cnn_labels: Any,
) -> Callable[[Any, Any], Any]:
    """One optimizer step of the CNN on one batch, as a user runs it: the model's
    ``train_on_batch(x, y)`` after ``model.compile(...)`` (Adam, sparse categorical
    cross-entropy; ``jit_compile=True`` compiled, ``run_eagerly=True`` eager), on a CNN of its
    own per mode (training changes its weights).  Skips where Keras cannot train (numpy,
    openvino), with Keras's reason."""
    from pytest_kerasperf.handle import train_step_once

    return train_step_once(
        request,
        kerasperf_backend,
        kerasperf_mode,
        workloads.build_cnn,
        kerasperf_cnn_input,
        kerasperf_cnn_labels,
    )


@pytest.fixture
def kerasperf_lm_train_step(
    request: pytest.FixtureRequest,
    kerasperf_backend: str,
    kerasperf_mode: str,
    kerasperf_lm_prompt: Any,
    kerasperf_lm_targets: Any,
) -> Callable[[Any, Any], Any]:
    """One optimizer step of the LM on one batch (next-token targets), as
    ``kerasperf_cnn_train_step``."""
    from pytest_kerasperf.handle import train_step_once

    return train_step_once(
        request,
        kerasperf_backend,
        kerasperf_mode,
        workloads.build_lm,
        kerasperf_lm_prompt,
        kerasperf_lm_targets,
    )


@pytest.fixture
def kerasperf(request: pytest.FixtureRequest, kerasperf_backend: str) -> KerasPerf:
    """Measure a workload: ``kerasperf(forward, inputs)`` or ``kerasperf(lambda: ...)``.

    Its mode: the test's ``kerasperf_mode`` parameter, else its
    ``@pytest.mark.kerasperf(mode=...)``, else eager.
    """
    from pytest_kerasperf.handle import KerasPerf

    return KerasPerf(
        request,
        kerasperf_backend,
        request.config.stash[STATE],
        mode=items.declared_mode(request.node),
    )


@pytest.fixture(autouse=True)
def _kerasperf_unittest_handle(request: pytest.FixtureRequest) -> None:
    """``self.kerasperf`` for a perf test written as a ``unittest.TestCase`` method.

    Keras's own tests are ``keras.src.testing.TestCase`` methods, which take no
    fixtures: a method marked ``@pytest.mark.kerasperf`` or with a budget marker
    gets the same measuring handle as the ``kerasperf`` fixture, with the same
    counting, baseline and verdict.  Its ``setUp`` turns traceback filtering off;
    the handle measures with it on, as users run Keras.
    """
    instance = getattr(request, "instance", None)
    # A TestCase exists only where unittest was imported (importing it here costs every run).
    unittest = sys.modules.get("unittest")
    if unittest is None or not isinstance(instance, unittest.TestCase):
        return
    if not items.is_perf_test(request.node):
        return
    state = request.config.stash[STATE]
    if not state.options.enabled:
        return
    from pytest_kerasperf.handle import KerasPerf

    backend = request.getfixturevalue("kerasperf_backend")
    instance.kerasperf = KerasPerf(request, backend, state, mode=items.declared_mode(request.node))
