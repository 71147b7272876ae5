"""Measurements on the real models, run in a fresh process per backend.

``KERAS_BACKEND=<backend> python tests/probe.py <task>`` prints one JSON line.
Tests run it in a subprocess because Keras picks its backend once per process.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from pytest_kerasperf import backends, workloads
from pytest_kerasperf.measure import count_calls, graph_breaks
from pytest_kerasperf.measure.calls import profile_once


def models() -> dict[str, Any]:
    keras = backends.import_keras()
    cnn, lm = workloads.build_cnn(), workloads.build_lm()
    cnn_out = cnn(workloads.cnn_input(), training=False)
    lm_out = lm(workloads.lm_prompt(), training=False)
    generated = workloads.generate(lm, workloads.lm_prompt(), steps=3)
    return {
        "image_data_format": keras.config.image_data_format(),
        "cnn_params": cnn.count_params(),
        "lm_params": lm.count_params(),
        "cnn_output": list(cnn_out.shape),
        "lm_output": list(lm_out.shape),
        "generated": list(generated.shape),
        "generated_dtype": str(keras.backend.standardize_dtype(generated.dtype)),
        "conv_formats": sorted(
            {layer.data_format for layer in cnn.layers if hasattr(layer, "data_format")}
        ),
    }


def _workloads(backend: str) -> dict[str, Callable[[], Any]]:
    cnn, lm = workloads.build_cnn(), workloads.build_lm()
    x, prompt = workloads.cnn_input(), workloads.lm_prompt()
    found: dict[str, Callable[[], Any]] = {
        "cnn_forward[eager]": lambda: cnn(x, training=False),
        "lm_forward[eager]": lambda: lm(prompt, training=False),
    }
    if backend == "torch":
        compiled = backends.compile_forward(lm, backend)
        found["lm_forward[compiled]"] = lambda: compiled(prompt, training=False)
    return found


def repeat_counts() -> dict[str, Any]:
    """count_calls() until stable, then 10 more profiled calls of each workload."""
    backend = backends.active_backend()
    keras = backends.import_keras()
    keras.config.enable_traceback_filtering()
    out: dict[str, Any] = {}
    for name, fn in _workloads(backend).items():
        fn()
        stable = count_calls(fn)
        repeats = [profile_once(fn) for _ in range(10)]
        out[name] = {
            "calls": stable.calls,
            "passes": stable.passes,
            "repeat_totals": [sum(r.values()) for r in repeats],
            "repeats_identical": all(r == dict(stable.calls_by_function) for r in repeats),
            "isinstance": stable.calls_by_function.get("isinstance", 0),
        }
    return out


def torch_graph_breaks() -> dict[str, Any]:
    out = {}
    for name, model, inputs in (
        ("cnn", workloads.build_cnn(), workloads.cnn_input()),
        ("lm", workloads.build_lm(), workloads.lm_prompt()),
    ):
        record = graph_breaks(model, (inputs,), {"training": False})
        out[name] = {
            "graphs": record.graphs,
            "breaks": record.breaks,
            "reasons": [{"reason": r.reason, "frame": r.frame} for r in record.reasons],
        }
    return out


TASKS: dict[str, Callable[[], dict[str, Any]]] = {
    "models": models,
    "repeat-counts": repeat_counts,
    "torch-graph-breaks": torch_graph_breaks,
}

if __name__ == "__main__":
    print("KERASPERF-PROBE " + json.dumps(TASKS[sys.argv[1]]()))
