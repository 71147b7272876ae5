"""The light vocabulary every pytest process needs: backends, modes, budgets, markers' errors.

The plugin module loads in every pytest process of an environment, perf
tests or not; markers are parsed at collection whether or not perf tests
run.  So what that needs lives here, importing nothing of ours and no
framework: which backends and modes exist, which backend a process uses and
whether it has a compiled mode, and ``Budget``, what a marker asks for.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

BACKENDS = ("torch", "jax", "tensorflow", "numpy", "openvino")
MODES = ("eager", "compiled")

#: The metrics' registry (``metrics/__init__.py`` loads them): (module under metrics/, its
#: marker), one line per metric, in order.  A budget's ``kind`` is one of these names.
REGISTRY: tuple[tuple[str, str | None], ...] = (
    ("calls", "max_calls"),
    ("graph_breaks", "max_graph_breaks"),
    ("recompiles", "max_recompiles"),
    ("latency", "max_latency"),
    ("instructions", "max_instructions"),
    ("overhead", "max_overhead"),
)
#: the markers' names, known without importing a metric
MARKER_NAMES: tuple[str, ...] = tuple(marker for _, marker in REGISTRY if marker)
#: What a failure can be about: a metric, or that nothing could be compared.
FAILURE_KINDS: tuple[str, ...] = (
    *(name for name, _ in REGISTRY),
    "not_compared",
    "win_not_recorded",
)


#: The working directory when the plugin loaded (pytest's start, before any test could change
#: it with ``monkeypatch.chdir``): a relative ``KERAS_HOME`` (Keras's CI sets
#: ``.github/workflows/config/<backend>``) is read from there, as Keras read it when imported.
_START_DIR = os.getcwd()


def active_backend() -> str:
    """The backend Keras will pick in this process, without importing Keras."""
    name = os.environ.get("KERAS_BACKEND")
    if not name:
        keras_home = os.environ.get("KERAS_HOME") or os.path.join("~", ".keras")
        config = os.path.join(_START_DIR, os.path.expanduser(keras_home), "keras.json")
        try:
            import json

            with open(config, encoding="utf-8") as handle:
                name = str(json.load(handle).get("backend", ""))
        except (OSError, ValueError):
            name = ""
    return name or "tensorflow"


def has_compiled_mode(backend: str) -> bool:
    """``[compiled]`` tests exist on ``backend`` (torch.compile, jax.jit, tf.function)."""
    # openvino compiles no Python callable: its only compiled path is
    # ``Model.predict_on_batch``, another call form, which cannot take the
    # symbolic ids of the script's generate loop.
    return backend not in ("numpy", "openvino")


def modes(backend: str) -> tuple[str, ...]:
    """The modes a perf test runs in on ``backend`` (numpy and openvino: eager only)."""
    return MODES if has_compiled_mode(backend) else ("eager",)


@dataclass(frozen=True)
class Budget:
    """A limit a marker puts on one metric, optionally scoped to a backend and a mode.

    ``kind`` is the metric's name (``metrics.BY_NAME``); ``function`` only for
    calls, ``metric`` only for overhead ("latency" or "calls": Keras / plain
    framework).  An unscoped budget applies everywhere; a scoped one only where
    its backend and mode match.  Its metric's ``describe(budget)`` writes it back
    as its marker.
    """

    kind: str
    limit: float
    function: str | None = None
    backend: str | None = None
    mode: str | None = None
    metric: str = "latency"

    def applies(self, backend: str, mode: str) -> bool:
        return self.backend in (None, backend) and self.mode in (None, mode)


class MarkerError(Exception):
    """A marker called with a wrong argument; the message says which and why."""


def scope(value: object, what: str, allowed: tuple[str, ...]) -> str | None:
    """A marker's ``backend=`` / ``mode=`` argument, or MarkerError."""
    if value is None:
        return None
    if not isinstance(value, str) or value not in allowed:
        raise MarkerError(f"{what} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
    return value


#: The marker every perf test carries (explicitly, or added at collection):
#: ``-m kerasperf`` selects them, ``-m "not kerasperf"`` leaves them out.
PERF_MARKER = "kerasperf"


def latency_declined(item: pytest.Item) -> bool:
    """``@pytest.mark.kerasperf(latency=False)``: the test asks for no timing pass."""
    mark = item.get_closest_marker(PERF_MARKER)
    return mark is not None and mark.kwargs.get("latency", True) is False
