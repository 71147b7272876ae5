"""The census's serialization workloads: each public class saved and loaded as ``load_model``
does it, one object at a time.

The family workloads measure a built object's call; its constructor, ``get_config``,
``from_config`` and ``build`` run outside the measured call, so a change to any of them moved no
count (over the last 400 commits of keras-team/keras, 20 commits changed only such methods of
public classes).  Here the census's own object of each class (``layers_table.LAYERS`` built and
called once on its census input, as ``test_layer`` builds it; ``api_table.ENTRIES`` of kind
``object``, ``metric`` and ``optimizer``, as ``test_api`` builds it) is measured through
``keras.saving.serialize_keras_object`` then ``keras.saving.deserialize_keras_object``: its
``get_config``, the registry's lookup, ``from_config``, its constructor, and for a built layer
its ``build_from_config`` (``build``: the weights made again).

Public functions and the classes whose workload is their construction (``keras.Input``) have no
such workload: their census entry already measures what they run.
"""

from __future__ import annotations

from typing import Any

from pytest_kerasperf.census import api_table, layers_table, runner

#: (backend or ``jax-nnx``, public name) -> why Keras fails the round trip with an error other
#: than NotImplementedError (checked on every run: an entry that runs fails its test)
BROKEN: dict[tuple[str, str], str] = {
    (backend, "layers.RandomShear"): "its config holds factors as a range, (-0.2, 0.2), that "
    "its constructor refuses: ValueError, the factor must lie in [0, 1.0]"
    for backend in ("jax", "torch", "tensorflow", "numpy", "openvino")
}

#: public names whose config holds Python code: loaded with ``safe_mode=False``, as a user who
#: trusts the file must load it (Keras refuses a lambda's bytecode in safe mode)
UNSAFE = frozenset({"layers.Lambda"})


def names() -> list[str]:
    """Every public class the census builds: its layers with a call, and its objects."""
    layers = [name for name, (_made, call) in layers_table.LAYERS.items() if call is not None]
    objects = [name for name, (kind, _m, _c) in api_table.ENTRIES.items() if kind != "call"]
    return sorted([*layers, *objects])


def _built(name: str, backend: str) -> Any:
    """The census's object of ``name``, as its family's test builds it (a layer called once)."""
    public = runner.public(name)
    if name in layers_table.LAYERS:
        made, call = layers_table.LAYERS[name]
        assert call is not None
        args, kwargs = runner.arguments(name, made, backend, layers_table.parts())
        call_args, call_kwargs = runner.arguments(name, call, backend)
        broken = layers_table.BROKEN
        layer = runner.trial(name, backend, public, args, kwargs, broken, measured=False)
        obj = layer.call(*layer.args, **layer.kwargs)
        runner.trial(name, backend, obj, call_args, call_kwargs, broken, calls=1, measured=False)
        return obj
    _kind, made, _call = api_table.ENTRIES[name]
    args, kwargs = runner.arguments(name, made, backend, api_table.parts())
    built = runner.trial(
        name, backend, public, args, kwargs, api_table.BROKEN, calls=1, measured=False
    )
    return built.call(*built.args, **built.kwargs)


def ready(name: str, backend: str) -> runner.Ready:
    """``name``'s round trip, its object built and the trip made twice (a skip where Keras
    cannot run it)."""
    import keras

    obj = _built(name, backend)
    safe = name not in UNSAFE

    def round_trip() -> Any:
        config = keras.saving.serialize_keras_object(obj)
        return keras.saving.deserialize_keras_object(config, safe_mode=safe)

    return runner.trial(name, backend, round_trip, (), {}, BROKEN)
