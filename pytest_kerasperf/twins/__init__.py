"""Plain twins: the issue's two models in plain torch and plain JAX, without Keras.

Keras issue #22561's script times each model twice: through Keras and written
directly in the framework (``run_torch()`` and ``run_jax()``).  This package
holds those plain versions so a Keras measurement can be read against what the
framework itself does with the same model: ``plain_torch`` (eager and ``torch.compile``) and
``plain_jax`` (eager and ``jax.jit``), each with ``workloads``'s constants, seed and inputs.

Importing this package imports neither torch nor jax: :func:`plain_workload`
imports the framework module the first time it is asked for one of its
workloads.  Models, inputs and compiled functions are built once per process
and cached; compiled functions compile on their first call, not when built.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "FRAMEWORKS",
    "MODES",
    "WORKLOADS",
    "PlainWorkload",
    "framework_for",
    "plain_workload",
]

#: The workloads each framework provides: the CNN's forward, the LM's forward
#: and the LM's greedy generation of ``workloads.GEN`` (32) tokens.
WORKLOADS = ("cnn_forward", "lm_forward", "lm_generate_32")
#: The plain frameworks, named as the Keras backends that run on them.
FRAMEWORKS = ("torch", "jax")
#: ``eager`` runs the model op by op; ``compiled`` is ``torch.compile`` / ``jax.jit``.
MODES = ("eager", "compiled")


@dataclass(frozen=True)
class PlainWorkload:
    """One plain-framework workload, ready to run.

    ``call()`` runs the workload once on its bound inputs and returns the
    output; ``sync(output)`` blocks until the device has finished computing it
    (``torch.cuda.synchronize()`` on cuda, a no-op on torch's cpu;
    ``jax.block_until_ready`` on jax).
    """

    framework: str
    name: str
    call: Callable[[], Any]
    sync: Callable[[Any], None]
    params: int


#: What the framework modules built, by (framework, what, mode): models, inputs, compiled
#: functions.
_BUILT: dict[tuple[str, str, str], Any] = {}


def built(framework: str, key: tuple[str, str], build: Callable[[], Any]) -> Any:
    """``build()``, once per process for ``framework``'s ``key`` ((what, mode))."""
    if (framework, *key) not in _BUILT:
        _BUILT[(framework, *key)] = build()
    return _BUILT[(framework, *key)]


def model_of(workload: str) -> tuple[str, str, bool]:
    """A workload's model (``cnn`` or ``lm``), its words in a twin's name, and whether it
    generates: ``lm_generate_32`` -> ``("lm", "LM generate 32", True)``."""
    model, _, what = workload.partition("_")
    return model, f"{model.upper()} {what.replace('_', ' ')}", what.startswith("generate")


def framework_for(backend: str) -> str | None:
    """The plain framework to compare a Keras backend with: ``torch``, ``jax``, else None."""
    return backend if backend in FRAMEWORKS else None


@functools.cache
def plain_workload(framework: str, workload: str, mode: str) -> PlainWorkload:
    """The plain ``framework`` version of ``workload`` in ``mode``, built once per process.

    Raises ValueError for an unknown framework, workload or mode, and
    ImportError when the framework is not installed.
    """
    for what, value, known in (
        ("plain framework", framework, FRAMEWORKS),
        ("workload", workload, WORKLOADS),
        ("mode", mode, MODES),
    ):
        if value not in known:
            raise ValueError(f"unknown {what} {value!r}; expected one of {', '.join(known)}")
    module = importlib.import_module(f"pytest_kerasperf.twins.plain_{framework}")
    twin: PlainWorkload = module.workload(workload, mode)
    return twin
