"""An op of the census inside a Functional model, made ready (``functional_table``)."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kerasperf.census import inputs, runner
from pytest_kerasperf.census.functional_table import BROKEN


def model_of(name: str, spec: str, backend: str) -> runner.Ready:
    """``keras.Model(Inputs, op(Inputs))`` for the op ``name`` called as ``spec`` says, every
    tensor argument an ``Input`` of its shape and dtype; ready to be called on the tensors."""
    return _made(name, spec, backend, symbolic_call=False)


def symbolic_of(name: str, spec: str, backend: str) -> runner.Ready:
    """The op ``name`` called as ``spec`` says on ``Input``s of its tensors' shapes and dtypes:
    what a Functional model's construction runs of it (``compute_output_spec``)."""
    return _made(name, spec, backend, symbolic_call=True)


def _made(name: str, spec: str, backend: str, *, symbolic_call: bool) -> runner.Ready:
    import keras
    from keras import ops

    op = runner.public(name)
    pairs: list[tuple[Any, Any]] = []

    def symbolic(array: Any) -> Any:
        tensor = ops.convert_to_tensor(array)
        dtype = keras.backend.standardize_dtype(tensor.dtype)
        held = keras.Input(batch_shape=tuple(tensor.shape), dtype=dtype)
        pairs.append((held, tensor))
        return held

    try:
        args, kwargs = inputs.bind(spec, symbolic, runner.data_format())
    except inputs.SpecError:
        raise
    except Exception as error:
        pytest.skip(
            f"kerasperf census: the {backend} backend cannot hold {name}'s inputs: "
            f"{runner.describe(error)}"
        )
    if not pairs:
        pytest.skip(f"kerasperf census: {name} takes no tensor: no Functional model holds it")
    try:
        outputs = op(*args, **kwargs)
        model = None if symbolic_call else keras.Model([held for held, _ in pairs], outputs)
    except Exception as error:
        pytest.skip(
            f"kerasperf census: Keras cannot build {name} in a Functional model on {backend}: "
            f"{runner.describe(error)}"
        )
    if model is None:
        return runner.trial(name, backend, op, tuple(args), kwargs, {})
    tensors = [tensor for _, tensor in pairs]
    return runner.trial(name, backend, model, (tensors,), {}, BROKEN)
