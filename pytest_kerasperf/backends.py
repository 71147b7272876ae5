"""The only module that names torch, jax, tensorflow or numpy.

Everything framework-specific lives here: importing Keras safely for the
active backend, compiling a forward, syncing a device, naming the device,
reading framework versions and asking torch for graph breaks.  Other modules
call these functions and stay backend-neutral.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import platform
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

BACKENDS = ("torch", "jax", "tensorflow", "numpy")

#: Distributions whose versions decide whether two call counts are comparable,
#: per backend.  Python, numpy and optree (Keras's tree code) matter everywhere.
_COMMON_FRAMEWORKS = ("numpy", "optree")
_BACKEND_FRAMEWORKS: dict[str, tuple[str, ...]] = {
    "torch": ("torch",),
    "jax": ("jax", "jaxlib"),
    "tensorflow": ("tensorflow",),
    # Keras's numpy backend runs some ops (conv, pooling, ...) through jax.
    "numpy": ("jax", "jaxlib"),
}
#: Distribution names to try for each framework (first one installed wins).
_DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "torch": ("torch",),
    "jax": ("jax",),
    "jaxlib": ("jaxlib",),
    "tensorflow": ("tensorflow", "tensorflow-cpu", "tf-nightly"),
    "numpy": ("numpy",),
    "optree": ("optree",),
    "keras": ("keras", "keras-nightly"),
}
#: The module each backend needs importable (numpy is Keras's own dependency).
_IMPORT_NAMES: dict[str, str] = {"tensorflow": "tensorflow", "torch": "torch", "jax": "jax"}


class FrameworkMissing(Exception):
    """The active backend's framework is not installed (tests skip with this)."""


def active_backend() -> str:
    """The backend Keras will pick in this process, without importing Keras."""
    name = os.environ.get("KERAS_BACKEND")
    if not name:
        keras_home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
        config = os.path.join(keras_home, "keras.json")
        try:
            import json

            with open(config, encoding="utf-8") as handle:
                name = str(json.load(handle).get("backend", ""))
        except (OSError, ValueError):
            name = ""
    return name or "tensorflow"


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


def comparable_fields(backend: str) -> tuple[str, ...]:
    """Environment fields that must match for call counts to be comparable."""
    return ("python", *_COMMON_FRAMEWORKS, *_BACKEND_FRAMEWORKS.get(backend, ()))


def import_keras() -> Any:
    """Import Keras for the active backend, torch first when it is installed.

    Importing tensorflow before torch in one process can segfault; Keras's own
    conftest imports torch first for the same reason.  Raises FrameworkMissing
    when the active backend's framework is not installed.
    """
    backend = active_backend()
    if backend not in BACKENDS:
        raise FrameworkMissing(f"KERAS_BACKEND={backend!r} is not one of {', '.join(BACKENDS)}")
    if "keras" in sys.modules:
        keras = sys.modules["keras"]
    else:
        framework = _IMPORT_NAMES.get(backend)
        if framework and importlib.util.find_spec(framework) is None:
            raise FrameworkMissing(f"backend {backend!r} needs {framework}, which is not installed")
        if importlib.util.find_spec("keras") is None:
            raise FrameworkMissing("keras is not installed")
        try:
            if "tensorflow" not in sys.modules and importlib.util.find_spec("torch") is not None:
                importlib.import_module("torch")
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
    return keras


def has_compiled_mode(backend: str) -> bool:
    return backend != "numpy"


def compiled_mode_name(backend: str) -> str:
    return {"torch": "torch.compile", "jax": "jax.jit", "tensorflow": "tf.function"}.get(
        backend, "none"
    )


def compile_forward(model: Any, backend: str) -> Callable[..., Any]:
    """The model's forward as users compile it on ``backend``.

    torch: ``torch.compile(model)``; jax: ``jax.jit`` of the stateless forward
    with the weights passed as arguments; tensorflow: ``tf.function``.
    The result is called like the model: ``f(inputs, training=False)``.
    """
    if backend == "torch":
        import torch

        return torch.compile(model)
    if backend == "jax":
        import jax

        trainable = [v.value for v in model.trainable_variables]
        non_trainable = [v.value for v in model.non_trainable_variables]

        @jax.jit
        def forward(trainable: Any, non_trainable: Any, inputs: Any) -> Any:
            outputs, _ = model.stateless_call(trainable, non_trainable, inputs, training=False)
            return outputs

        def jitted(inputs: Any, training: bool = False) -> Any:
            return forward(trainable, non_trainable, inputs)

        return jitted
    if backend == "tensorflow":
        import tensorflow as tf

        @tf.function(reduce_retracing=True)  # type: ignore[untyped-decorator]
        def traced(inputs: Any) -> Any:
            return model(inputs, training=False)

        def call(inputs: Any, training: bool = False) -> Any:
            return traced(inputs)

        return call
    raise FrameworkMissing(f"backend {backend!r} has no compiled mode")


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
    return lambda value: None


def _cpu_name() -> str:
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
    return f"cpu: {_cpu_name()}", False


@dataclass(frozen=True)
class RawGraphBreak:
    reason: str
    filename: str
    lineno: int


@dataclass(frozen=True)
class RawExplain:
    graph_count: int
    graph_break_count: int
    breaks: tuple[RawGraphBreak, ...]


def explain(model: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> RawExplain:
    """Run ``torch._dynamo.explain`` on the eager model.

    explain() resets dynamo's caches, so callers run it before compiling.
    """
    import torch
    import torch._dynamo

    torch_dir = os.path.dirname(torch.__file__) + os.sep
    output = torch._dynamo.explain(model)(*args, **kwargs)
    breaks = []
    for reason in output.break_reasons:
        stack = list(reason.user_stack or ())
        # The user frame is the deepest one outside torch itself (dynamo's
        # polyfills sit below Keras's frame in the stack).
        outside_torch = [f for f in stack if not f.filename.startswith(torch_dir)]
        frame = (outside_torch or stack)[-1] if stack else None
        breaks.append(
            RawGraphBreak(
                reason=str(reason.reason),
                filename=frame.filename if frame else "<unknown>",
                lineno=int(frame.lineno or 0) if frame else 0,
            )
        )
    return RawExplain(
        graph_count=int(output.graph_count),
        graph_break_count=int(output.graph_break_count),
        breaks=tuple(breaks),
    )
