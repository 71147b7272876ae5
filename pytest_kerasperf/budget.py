"""The light vocabulary every pytest process needs: backends, modes, budgets.

The plugin module loads in every pytest process of an environment, perf
tests or not; markers are parsed at collection whether or not perf tests
run.  So what that needs lives here, importing nothing of ours and no
framework: which backends and modes exist, which backend a process uses and
whether it has a compiled mode, and ``Budget``, what a marker asks for.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

BACKENDS = ("torch", "jax", "tensorflow", "numpy", "openvino")
MODES = ("eager", "compiled")


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
    its backend and mode match.  ``metrics.describe(budget)`` writes it back as
    its marker.
    """

    kind: str
    limit: float
    function: str | None = None
    backend: str | None = None
    mode: str | None = None
    metric: str = "latency"

    def applies(self, backend: str, mode: str) -> bool:
        return self.backend in (None, backend) and self.mode in (None, mode)

    def describe(self) -> str:
        """The budget as its marker was written (its metric's words)."""
        from pytest_kerasperf import metrics

        return metrics.describe(self)
