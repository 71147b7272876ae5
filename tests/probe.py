"""Measurements on the real models, run in a fresh process per backend.

``KERAS_BACKEND=<backend> python tests/probe.py <task>`` prints one JSON line.
Tests run it in a subprocess because Keras picks its backend once per process.
"""

from __future__ import annotations

import functools
import json
import sys
import warnings
from collections.abc import Callable
from typing import Any

from pytest_kerasperf import backends, workloads
from pytest_kerasperf.codec import to_data
from pytest_kerasperf.measure import count_calls
from pytest_kerasperf.measure.calls import profile_call
from pytest_kerasperf.measure.graph import graph_breaks


def _describe(op: Any) -> dict[str, Any]:
    """What makes an operation of the model what it is (class, module, settings, params)."""
    config: dict[str, Any] = {}
    for name in (
        "filters",
        "kernel_size",
        "strides",
        "padding",
        "pool_size",
        "units",
        "input_dim",
        "output_dim",
        "data_format",
    ):
        if hasattr(op, name):
            value = getattr(op, name)
            config[name] = list(value) if isinstance(value, tuple) else value
    activation = getattr(op, "activation", None)
    if activation is not None:
        config["activation"] = getattr(activation, "__name__", str(activation))
    for name in ("num_heads", "key_dim"):
        value = getattr(op, f"_{name}", None)
        if value is not None:
            config[name] = value
    return {
        "class": type(op).__name__,
        "module": type(op).__module__,
        "params": op.count_params() if hasattr(op, "count_params") and op.built else 0,
        "dtype": str(getattr(op, "dtype", None)),
        **config,
    }


def models() -> dict[str, Any]:
    keras = backends.import_keras()
    cnn, lm = workloads.build_cnn(), workloads.build_lm()
    cnn_out = cnn(workloads.cnn_input(), training=False)
    lm_out = lm(workloads.lm_prompt(), training=False)
    generated = workloads.generate(workloads.eager_forward(lm), workloads.lm_prompt(), steps=3)
    return {
        "image_data_format": keras.config.image_data_format(),
        "floatx": keras.config.floatx(),
        "cnn_params": cnn.count_params(),
        "lm_params": lm.count_params(),
        "cnn_ops": [_describe(op) for op in cnn.operations],
        "lm_ops": [_describe(op) for op in lm.operations],
        "cnn_input_dtype": str(cnn.inputs[0].dtype),
        "lm_input_dtype": str(lm.inputs[0].dtype),
        "lm_input_shape": list(lm.inputs[0].shape),
        "cnn_output": list(cnn_out.shape),
        "lm_output": list(lm_out.shape),
        "generated": list(generated.shape),
        "generated_dtype": str(keras.backend.standardize_dtype(generated.dtype)),
        "inputs": [type(workloads.cnn_input()).__module__, type(workloads.lm_prompt()).__module__],
    }


def _workloads(backend: str) -> dict[str, Callable[[], Any]]:
    """The suite's forwards, called exactly as its tests call them (``kerasperf(fn, x)``)."""
    cnn, lm = workloads.build_cnn(), workloads.build_lm()
    x, prompt = workloads.cnn_input(), workloads.lm_prompt()
    found: dict[str, Callable[[], Any]] = {
        "cnn_forward[eager]": functools.partial(workloads.eager_forward(cnn), x),
        "lm_forward[eager]": functools.partial(workloads.eager_forward(lm), prompt),
    }
    if backend == "torch":
        # The train steps: a model of their own each, compiled for training as the suite's
        # fixtures compile them, then train_on_batch called as the tests call it.  Before any
        # torch.compile, as in the suite (docs/exact-counts.md: a process that compiled makes
        # an eager train step 6 calls dearer).
        for name, model, inputs, targets in (
            ("cnn_train_step[eager]", workloads.build_cnn(), x, workloads.cnn_labels()),
            ("lm_train_step[eager]", workloads.build_lm(), prompt, workloads.lm_targets()),
        ):
            workloads.compile_for_training(model, "eager")
            found[name] = functools.partial(model.train_on_batch, inputs, targets)
        found["lm_forward[compiled]"] = functools.partial(
            backends.compile_forward(lm, backend), prompt
        )
    return found


def repeat_counts() -> dict[str, Any]:
    """count_calls() until stable, then 10 more profiled calls of each workload."""
    backend = backends.active_backend()
    keras = backends.import_keras()
    keras.config.enable_traceback_filtering()
    warnings.simplefilter("ignore")  # as the plugin measures: warnings cost what users pay
    out: dict[str, Any] = {}
    for name, fn in _workloads(backend).items():
        fn()
        stable = count_calls(fn)
        repeats = [profile_call(fn).by_function for _ in range(10)]
        out[name] = {
            "calls": stable.calls,
            "passes": stable.passes,
            "repeat_totals": [sum(r.values()) for r in repeats],
            "repeats_identical": all(r == dict(stable.calls_by_function) for r in repeats),
            "calls_by_function": dict(stable.calls_by_function),
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
            "reasons": [to_data(r) for r in record.reasons],
        }
    return out


def _explained(before: Any, after: Any) -> dict[str, Any]:
    from pytest_kerasperf.explain import explain

    explanation = explain(
        before.calls_by_function, before.call_edges, after.calls_by_function, after.call_edges
    )
    return {
        "before": before.calls,
        "after": after.calls,
        "before_functions": dict(before.calls_by_function),
        "after_functions": dict(after.calls_by_function),
        "explanation": to_data(explanation),
    }


def _passthrough(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A wrapper as Keras's traceback ``error_handler`` is: one call more, nothing else."""

    @functools.wraps(fn)
    def error_handler(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return error_handler


def _planted_helper(inputs: Any) -> Any:
    return inputs


def explanations() -> dict[str, Any]:
    """Three real changes of the CNN's eager forward, each explained: a planted extra call in
    ``Dense.call``, a removed wrapper around ``Conv2D.call`` (#23183's kind), an added layer."""
    keras = backends.import_keras()
    from keras.src.layers.convolutional.conv2d import Conv2D
    from keras.src.layers.core.dense import Dense

    cnn, x = workloads.build_cnn(), workloads.cnn_input()
    forward = workloads.eager_forward(cnn)
    plain = count_calls(lambda: forward(x))
    out: dict[str, Any] = {}

    dense_call = Dense.call

    def planted(self: Any, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        _planted_helper(inputs)
        return dense_call(self, inputs, *args, **kwargs)

    Dense.call = planted
    try:
        out["planted"] = _explained(plain, count_calls(lambda: forward(x)))
    finally:
        Dense.call = dense_call

    conv_call = Conv2D.call
    Conv2D.call = _passthrough(conv_call)
    try:
        wrapped = count_calls(lambda: forward(x))
    finally:
        Conv2D.call = conv_call
    out["removed_wrapper"] = _explained(wrapped, plain)

    def mlp(extra: bool) -> Any:
        inputs = keras.Input((32,))
        h = keras.layers.Dense(16, activation="relu")(inputs)
        if extra:
            h = keras.layers.Dense(16, activation="relu")(h)
        return keras.Model(inputs, keras.layers.Dense(10)(h))

    v = workloads.cnn_input().reshape((x.shape[0], -1))[:, :32]
    small, large = mlp(False), mlp(True)
    out["added_layer"] = _explained(
        count_calls(lambda: workloads.eager_forward(small)(v)),
        count_calls(lambda: workloads.eager_forward(large)(v)),
    )
    return out


TASKS: dict[str, Callable[[], dict[str, Any]]] = {
    "explanations": explanations,
    "models": models,
    "repeat-counts": repeat_counts,
    "torch-graph-breaks": torch_graph_breaks,
}

if __name__ == "__main__":
    print("KERASPERF-PROBE " + json.dumps(TASKS[sys.argv[1]]()))
