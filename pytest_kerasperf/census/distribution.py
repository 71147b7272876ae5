"""The census's ``keras.distribution`` workloads: the device queries, a mesh, a layout and a
layout map as Keras builds them for each variable, ``distribute_tensor``, the global
distribution's getter and setter, and a model built (each variable laid out) and trained
under ``DataParallel`` and under ``ModelParallel`` as users build and train one.

Every workload runs on this machine's devices: a mesh of all of them (one CPU here) with a
``batch`` axis, and for ``ModelParallel`` a ``batch`` x ``model`` mesh whose ``model`` axis is
1 wide.  The model: ``Input((4,))`` -> ``Dense(8, relu)`` named ``hidden`` -> ``Dense(3)``
named ``logits``, built and compiled (SGD, mean squared error) inside the distribution's
scope, seeded; ``fit`` on 8 samples in 2 batches, one epoch (``verbose=0``), measured after a
first ``fit`` (which traces and compiles).  Keras has a distribution on jax and tensorflow;
on torch, numpy and openvino its backend has none (``keras.src.backend.distribution_lib`` is
None) and every workload skips with Keras's own error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

#: workload -> (the public name it measures, what it runs)
DISTRIBUTION: dict[str, tuple[str, str]] = {
    "distribution.list_devices": ("distribution.list_devices", "list_devices"),
    "distribution.get_device_count": ("distribution.get_device_count", "get_device_count"),
    "distribution.DeviceMesh": ("distribution.DeviceMesh", "mesh"),
    "distribution.TensorLayout": ("distribution.TensorLayout", "layout"),
    "distribution.LayoutMap": ("distribution.LayoutMap", "layout_map"),
    "distribution.distribute_tensor": ("distribution.distribute_tensor", "distribute_tensor"),
    "distribution.distribution": ("distribution.distribution", "get"),
    "distribution.set_distribution": ("distribution.set_distribution", "set"),
    "distribution.DataParallel": ("distribution.DataParallel", "fit:data"),
    "distribution.ModelParallel": ("distribution.ModelParallel", "fit:model"),
    "distribution.DataParallel[build]": ("distribution.DataParallel", "build:data"),
    "distribution.ModelParallel[build]": ("distribution.ModelParallel", "build:model"),
}

#: what a workload may run
ACTIONS = frozenset(
    {
        "list_devices",
        "get_device_count",
        "mesh",
        "layout",
        "layout_map",
        "distribute_tensor",
        "get",
        "set",
        "fit:data",
        "fit:model",
        "build:data",
        "build:model",
    }
)

#: public names with no workload of their own, and why
EXCLUDED: dict[str, str] = {
    "distribution.initialize": "starts the multi-process runtime (jax.distributed.initialize), "
    "once per process and before any computation: nothing a step repeats",
}

#: (backend, workload) -> why Keras fails there with an error other than NotImplementedError
BROKEN: dict[tuple[str, str], str] = {
    ("tensorflow", "distribution.get_device_count"): "Keras's tensorflow distribution_lib has "
    "no get_device_count (AttributeError)",
    ("tensorflow", "distribution.distribute_tensor"): "Keras's tensorflow distribution_lib has "
    "no distribute_tensor (AttributeError)",
    # Keras 3.15.1 has no torch distribution (every workload skips before this); its master has
    ("torch", "distribution.distribute_tensor"): "Keras's torch distribute_tensor starts "
    "torch.distributed from the environment (env:// rendezvous), which fails in one process "
    "without RANK (ValueError; Keras's master, after 3.15.1)",
}

SAMPLES = 8


def has_distribution() -> bool:
    """Whether Keras has a distribution for the active backend."""
    from keras.src import backend

    return backend.distribution_lib is not None


def _mesh(*, model_axis: bool = False) -> Any:
    from keras import distribution

    devices = distribution.list_devices()
    if model_axis:
        return distribution.DeviceMesh((len(devices), 1), ["batch", "model"], devices)
    return distribution.DeviceMesh((len(devices),), ["batch"], devices)


def _layout_map() -> Any:
    from keras import distribution

    layout_map = distribution.LayoutMap(_mesh(model_axis=True))
    layout_map["hidden/kernel"] = (None, "model")
    layout_map["hidden/bias"] = ("model",)
    layout_map["logits/kernel"] = ("model", None)
    return layout_map


def _model() -> Any:
    import keras

    inputs = keras.Input((4,))
    hidden = keras.layers.Dense(8, activation="relu", name="hidden")(inputs)
    model = keras.Model(inputs, keras.layers.Dense(3, name="logits")(hidden))
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mean_squared_error")
    return model


def _distribution(kind: str) -> Any:
    from keras import distribution

    if kind == "data":
        return distribution.DataParallel(device_mesh=_mesh())
    return distribution.ModelParallel(layout_map=_layout_map(), batch_dim_name="batch")


def _build(kind: str) -> tuple[Any, Any]:
    """The distribution made and the model built in its scope (each variable laid out)."""
    import keras

    chosen = _distribution(kind)
    with chosen.scope():
        keras.utils.set_random_seed(1337)
        return chosen, _model()


def _fit(kind: str) -> Callable[[], Any]:
    import numpy as np

    chosen, model = _build(kind)
    x = np.linspace(0.1, 0.9, SAMPLES * 4, dtype="float32").reshape(SAMPLES, 4)
    y = np.linspace(0.0, 1.0, SAMPLES * 3, dtype="float32").reshape(SAMPLES, 3)

    def fit() -> Any:
        with chosen.scope():
            return model.fit(x, y, batch_size=SAMPLES // 2, epochs=1, verbose=0, shuffle=False)

    return fit


def workload(name: str) -> Callable[[], Any]:
    """The workload's call, its objects built (not measured)."""
    import numpy as np
    from keras import distribution

    _, what = DISTRIBUTION[name]
    if what.startswith("fit:"):
        return _fit(what.split(":")[1])
    if what.startswith("build:"):
        kind = what.split(":")[1]
        return lambda: _build(kind)
    if what in ("list_devices", "get_device_count"):  # the public function itself
        return cast(Callable[[], Any], getattr(distribution, what))
    if what == "mesh":
        return _mesh
    if what == "layout":
        mesh = _mesh()
        return lambda: distribution.TensorLayout(["batch", None], mesh)
    if what == "layout_map":  # built once; each variable's lookup, as Keras makes it
        layout_map = _layout_map()
        paths = ("hidden/kernel", "hidden/bias", "logits/kernel", "logits/bias")
        return lambda: [layout_map[path] for path in paths]
    if what == "distribute_tensor":
        layout = distribution.TensorLayout(["batch", None], _mesh())
        value = np.linspace(0.0, 1.0, 16, dtype="float32").reshape(4, 4)
        return lambda: distribution.distribute_tensor(value, layout)
    if what == "get":
        return cast(Callable[[], Any], distribution.distribution)
    if what == "set":  # set a distribution and put the global one back, as a scope does
        chosen = distribution.DataParallel(device_mesh=_mesh())

        def set_and_reset() -> None:
            before = distribution.distribution()
            distribution.set_distribution(chosen)
            distribution.set_distribution(before)

        return set_and_reset
    raise ValueError(f"no census distribution workload {what!r}")
