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
from typing import Literal

BACKENDS = ("torch", "jax", "tensorflow", "numpy", "openvino")
MODES = ("eager", "compiled")


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


def has_compiled_mode(backend: str) -> bool:
    """``[compiled]`` tests exist on ``backend`` (torch.compile, jax.jit, tf.function)."""
    # openvino compiles no Python callable: its only compiled path is
    # ``Model.predict_on_batch``, another call form, which cannot take the
    # symbolic ids of the script's generate loop.
    return backend not in ("numpy", "openvino")


def modes(backend: str) -> tuple[str, ...]:
    """The modes a perf test runs in on ``backend`` (numpy and openvino: eager only)."""
    return MODES if has_compiled_mode(backend) else ("eager",)


BudgetKind = Literal["calls", "graph_breaks", "latency", "overhead", "recompiles", "instructions"]


@dataclass(frozen=True)
class Budget:
    """A limit a marker puts on one metric, optionally scoped to a backend and a mode.

    ``function`` only for calls.  An unscoped budget applies everywhere; a
    scoped one only where its backend and mode match.
    """

    kind: BudgetKind
    limit: float
    function: str | None = None
    backend: str | None = None
    mode: str | None = None
    metric: str = "latency"  # overhead only: "latency" or "calls" (Keras / plain framework)

    def applies(self, backend: str, mode: str) -> bool:
        return self.backend in (None, backend) and self.mode in (None, mode)

    def describe(self) -> str:
        scope = "".join(
            f", {name}={value!r}"
            for name, value in (("backend", self.backend), ("mode", self.mode))
            if value is not None
        )
        if self.kind == "calls":
            extra = f", function={self.function!r}" if self.function else ""
            return f"max_calls({int(self.limit):,}{extra}{scope})"
        if self.kind == "graph_breaks":
            return f"max_graph_breaks({int(self.limit)}{scope})"
        if self.kind == "overhead":
            metric = ", metric='calls'" if self.metric == "calls" else ""
            return f"max_overhead({self.limit:g}{metric}{scope})"
        if self.kind == "recompiles":
            return f"max_recompiles({int(self.limit)}{scope})"
        if self.kind == "instructions":
            return f"max_instructions({int(self.limit):,}{scope})"
        return f"max_latency({self.limit:g} ms{scope})"
