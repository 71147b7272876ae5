"""The only module that names torch, jax, tensorflow or numpy.

Everything framework-specific lives here: importing Keras safely for the
active backend, compiling a forward, syncing a device, naming the device,
reading framework versions.  Other modules call these functions and stay
backend-neutral; reading dynamo's logs (graph breaks, recompiles) lives in
``measure.graph``, compile events in ``measure.compile_health``.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import platform
import sys
from collections.abc import Callable
from typing import Any

from pytest_kerasperf.budget import BACKENDS, active_backend, has_compiled_mode

__all__ = ["BACKENDS", "FrameworkMissing", "active_backend", "has_compiled_mode"]

#: Distributions whose versions decide whether two call counts are comparable, per backend,
#: each measured to move that backend's counts (docs/fingerprint.md gives the evidence).
_BACKEND_FRAMEWORKS: dict[str, tuple[str, ...]] = {
    "torch": ("torch", "tensorflow"),
    "jax": ("jax", "jaxlib", "numpy", "opt_einsum", "ml_dtypes", "tensorflow"),
    "tensorflow": ("tensorflow", "numpy", "ml_dtypes"),
    "numpy": ("numpy", "jax", "jaxlib", "tensorflow"),  # some of its ops run through jax
    "openvino": ("openvino", "numpy", "tensorflow"),
}
#: Distribution names to try for each framework (first one installed wins).
_DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "torch": ("torch",),
    "jax": ("jax",),
    "jaxlib": ("jaxlib",),
    "tensorflow": ("tensorflow", "tensorflow-cpu", "tf-nightly"),
    "numpy": ("numpy",),
    "optree": ("optree",),
    "opt_einsum": ("opt_einsum", "opt-einsum"),
    "ml_dtypes": ("ml_dtypes", "ml-dtypes"),
    "keras": ("keras", "keras-nightly"),
    "flax": ("flax",),
    "openvino": ("openvino", "openvino-nightly"),
}


class FrameworkMissing(Exception):
    """The active backend's framework is not installed (tests skip with this)."""


def distribution_version(framework: str) -> str | None:
    for dist in _DISTRIBUTIONS.get(framework, (framework,)):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def framework_versions() -> dict[str, str | None]:
    """Installed versions of every framework Keras may run on, plus Keras."""
    return {name: distribution_version(name) for name in _DISTRIBUTIONS}


def count_frameworks(backend: str) -> tuple[str, ...]:
    """Frameworks whose versions must match for the backend's call counts to compare."""
    return _BACKEND_FRAMEWORKS.get(backend, ())


def count_settings(backend: str) -> tuple[str, ...]:
    """Recorded settings (``environment.capture`` fields) whose values move the backend's counts."""
    # NNX (KERAS_NNX_ENABLED or keras.json's nnx_enabled) makes Keras's jax
    # variables flax NNX variables.
    return ("keras.nnx_enabled",) if backend == "jax" else ()


def compiler_facts(backend: str) -> dict[str, str | None]:
    """What the backend's compiler picked on this machine (recorded for information).

    Never fails a measurement: inductor's pick needs a C++ compiler, which an
    eager-only environment (a slim container) may not have.
    """
    if backend == "torch":
        from torch._inductor import cpu_vec_isa

        try:
            isa = cpu_vec_isa.pick_vec_isa()
        except Exception as error:  # e.g. no g++ on PATH: recorded, not raised
            return {"torch.inductor_cpu_isa": f"unknown ({type(error).__name__})"}
        return {"torch.inductor_cpu_isa": str(isa) if isa else "none"}
    if backend in ("jax", "numpy"):
        import jax

        return {"jax.device_count": str(jax.device_count())}
    return {}


#: What a measuring process imports before Keras, in this order, wherever installed, whatever
#: the backend: whether tensorflow is imported moves Keras's counts (docs/exact-counts.md, "One
#: canonical process").  torch first: tensorflow before torch in one process can segfault.
CANONICAL_IMPORTS = ("torch", "tensorflow")


def import_keras() -> Any:
    """Import Keras for the active backend, after ``CANONICAL_IMPORTS`` where installed.

    Raises FrameworkMissing when the active backend's framework is not installed.
    """
    backend = active_backend()
    if backend not in BACKENDS:
        raise FrameworkMissing(f"KERAS_BACKEND={backend!r} is not one of {', '.join(BACKENDS)}")
    if "keras" in sys.modules:
        keras = sys.modules["keras"]
    else:
        framework = None if backend == "numpy" else backend  # numpy: Keras's own dependency
        if framework and importlib.util.find_spec(framework) is None:
            raise FrameworkMissing(f"backend {backend!r} needs {framework}, which is not installed")
        if importlib.util.find_spec("keras") is None:
            raise FrameworkMissing("keras is not installed")
        try:
            import_frameworks()
            if framework:
                importlib.import_module(framework)
            keras = importlib.import_module("keras")
        except ImportError as error:
            raise FrameworkMissing(f"backend {backend!r} cannot be imported: {error}") from None
    if keras.config.backend() != backend:
        raise FrameworkMissing(
            f"Keras was already imported with backend {keras.config.backend()!r}, "
            f"not {backend!r}: one backend per process"
        )
    if backend == "torch":
        without_aotautograd_cache()
    return keras


def import_frameworks() -> None:
    """Import ``CANONICAL_IMPORTS`` where installed and not yet imported (torch never after
    tensorflow).  Raises ImportError where one is installed but cannot be imported."""
    for name in CANONICAL_IMPORTS:
        if name in sys.modules or (name == "torch" and "tensorflow" in sys.modules):
            continue  # torch after tensorflow can segfault
        if importlib.util.find_spec(name) is not None:
            importlib.import_module(name)


def start_frameworks(backend: str) -> None:
    """Start what the canonical imports start lazily, once per measuring process.

    tensorflow's eager context: once it exists, every ``tf.executing_eagerly()`` that Keras
    asks (``in_tf_graph``) makes one call more (``Context.executing_eagerly``), and torch's
    ``layers.AugMix`` clears its caches (``TFE_ContextClearCaches``).  A ``tf.data`` workload
    creates it; so it exists before the first test.  On another backend tensorflow sees no
    GPU, so it never takes the accelerator's memory.  It starts threads: a process forked
    for an isolated test starts it in the child (``measure.canonical``).
    """
    if "tensorflow" not in sys.modules:
        return
    import tensorflow as tf
    from tensorflow.python.eager import context

    if context.context_safe() is None and backend != "tensorflow":
        tf.config.set_visible_devices([], "GPU")
    context.ensure_initialized()


#: tensorflow's ``tf.function`` warns about frequent retracing from a history of the last calls
#: of each Python function it traces (``polymorphic_function._FrequentTracingDetector``),
#: one process-wide dict keyed by function
_TRACING_DETECTORS = "tensorflow.python.eager.polymorphic_function.polymorphic_function"


def forget_history() -> None:
    """Put back as a fresh process has it what a framework keeps of earlier calls and changes
    later ones with: tensorflow's retracing history.  A traced function that earlier tests
    traced often enough drops its oldest entry on every trace (``list.pop``): the census's
    ``ops.vectorized_map`` and ``ops.fold`` counted one call more or not by the order the
    ops before them ran in (found by ``kerasperf audit``)."""
    module = sys.modules.get(_TRACING_DETECTORS)
    manager = getattr(module, "_frequent_tracing_detector_manager", None)
    detectors = getattr(manager, "_detectors", None)
    if detectors is not None:
        detectors.clear()


def without_aotautograd_cache() -> None:
    """Switch AOTAutograd's cache and inductor's FX graph cache off in this process, before
    anything compiles: with them on, a compiled graph's call edges depended on what the cache
    on disk held (docs/exact-counts.md gives the evidence)."""
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config

    functorch_config.enable_autograd_cache = False
    inductor_config.fx_graph_cache = False


def compile_forward(model: Any, backend: str) -> Callable[[Any], Any]:
    """The model's compiled forward, one argument, as the issue's script builds it: torch
    ``torch.compile(model)`` called as ``compiled(x, training=False)``; jax ``jax.jit`` and
    tensorflow ``tf.function`` (the script's jax closure) of ``lambda x: model(x, training=False)``.
    """
    if backend == "torch":
        compiled = compile_function(model, backend)
        return lambda x: compiled(x, training=False)
    return compile_function(lambda x: model(x, training=False), backend)


#: backend -> its compiler: (module, function)
_COMPILERS = {
    "torch": ("torch", "compile"),
    "jax": ("jax", "jit"),
    "tensorflow": ("tensorflow", "function"),
}


def compile_function(fn: Callable[..., Any], backend: str) -> Callable[..., Any]:
    """``fn`` compiled by the backend's compiler: ``torch.compile(fn)``, ``jax.jit(fn)``,
    ``tf.function(fn)`` (a model's forward, a census op with its other arguments bound)."""
    if backend not in _COMPILERS:
        raise FrameworkMissing(f"backend {backend!r} has no compiled mode")
    module, name = _COMPILERS[backend]
    compiled: Callable[..., Any] = getattr(importlib.import_module(module), name)(fn)
    return compiled


def explainable_train_step(probe: Any, x: Any, y: Any) -> Callable[..., Any]:
    """The function ``torch._dynamo.explain`` traces for a compiled train step, of ``probe``: a
    model compiled for training (``jit_compile=True``) that is not the one measured.

    explain cannot trace a step before the optimizer's and the loss's state
    exist (dynamo fails to resume after the loss's first ``build``: "exception
    table entry start instruction has no offset", torch 2.13), so the probe's
    first step runs with ``jit_compile`` off; then its train function is made
    as ``model.compile(..., jit_compile=True)`` makes it
    (``torch.compile(one_step_on_data)``), and its original function is
    returned.  The measured model is another one, whose first step compiles as
    a user's does (the build included), after ``reset_compiler``.

    Since keras-team/keras#23234 (``steps_per_execution`` on torch, after Keras 3.15) the
    train function is a Python loop over the batches it is given, around
    ``torch.compile(train_step)``: the loop is returned, calling the compiled step's original.
    """
    probe.jit_compile = False
    probe.train_on_batch(x, y)
    probe.jit_compile = True
    probe.make_train_function(force=True)
    function = probe.train_function
    original: Callable[..., Any] | None = getattr(function, "_torchdynamo_orig_callable", None)
    if original is not None:
        return original
    cells = [cell.cell_contents for cell in getattr(function, "__closure__", None) or ()]
    step = next((c._torchdynamo_orig_callable for c in cells if _compiled(c)), None)
    if step is None:
        raise RuntimeError(
            "kerasperf: cannot find torch.compile's function in this Keras's train function "
            f"({getattr(function, '__qualname__', function)!r}): explain has nothing to trace"
        )

    def steps(data: Any) -> Any:
        logs = {}
        for step_data in data:
            logs = step(step_data)
        return logs

    return steps


def _compiled(value: object) -> bool:
    """Whether ``value`` is what ``torch.compile`` returned (it keeps the original)."""
    try:
        return hasattr(value, "_torchdynamo_orig_callable")
    except Exception:  # a cell's object whose attribute lookup raises: not torch's
        return False


def reset_compiler(backend: str) -> None:
    """Forget every compiled graph (torch: ``torch._dynamo.reset()``, as explain does first)."""
    if backend == "torch":
        import torch._dynamo

        torch._dynamo.reset()


def train_functions(model: Any, backend: str) -> list[Any]:
    """What the compile watcher follows for a train step: the train function on torch and jax
    (their compile events are counted process-wide), the ``tf.function`` objects it calls on
    tensorflow (each counts its own traces: found through the train function's closures)."""
    function = model.train_function
    if backend != "tensorflow":
        return [function]
    found, seen, stack = [], set(), [function]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if hasattr(current, "experimental_get_tracing_count"):
            found.append(current)
            continue
        for cell in getattr(current, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if hasattr(value, "__code__") or hasattr(value, "experimental_get_tracing_count"):
                stack.append(value)
        wrapped = getattr(current, "__wrapped__", None)
        if wrapped is not None:
            stack.append(wrapped)
    return found


def make_sync(backend: str) -> Callable[[Any], None]:
    """A function that blocks until the device has finished computing ``value``."""
    if backend == "torch":
        import torch

        if torch.cuda.is_available():
            return lambda value: torch.cuda.synchronize()
        return lambda value: None
    if backend == "jax":
        import jax

        return lambda value: jax.block_until_ready(value)  # type: ignore[no-untyped-call]
    if backend == "tensorflow":
        import tensorflow as tf

        if tf.config.list_logical_devices("GPU"):
            return lambda value: tf.test.experimental.sync_devices()
        return lambda value: None
    # numpy computes eagerly.  openvino's eager forward returns a lazy graph
    # (an OpenVINOKerasTensor); materialising it would time OpenVINO compiling a
    # new graph on every call, so its latency is Keras building the graph.
    return lambda value: None


def cpu_name() -> str:
    """The CPU model, as /proc/cpuinfo names it (else the platform's word)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device(backend: str) -> tuple[str, bool]:
    """(human-readable device name, is it an accelerator) for the backend."""
    if backend == "torch":
        import torch

        if torch.cuda.is_available():
            return f"cuda: {torch.cuda.get_device_name(0)}", True
    elif backend == "jax":
        import jax

        dev = jax.devices()[0]
        if dev.platform != "cpu":
            return f"{dev.platform}: {dev.device_kind}", True
    elif backend == "tensorflow":
        import tensorflow as tf

        gpus = tf.config.list_physical_devices("GPU")
        if gpus:
            details = tf.config.experimental.get_device_details(gpus[0])
            return f"gpu: {details.get('device_name', gpus[0].name)}", True
    return cpu_device(), False


def cpu_device() -> str:
    """A CPU run's device, as results and instruction counts name it."""
    return f"cpu: {cpu_name()}"
