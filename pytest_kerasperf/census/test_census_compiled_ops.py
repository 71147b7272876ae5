"""Compile health per op: each op of ``ops_table.OPS`` compiled as a layer is
(``test_census_compiled``): ``torch.compile`` (graph breaks and their reasons from
``torch._dynamo.explain``), ``jax.jit``, ``tf.function`` of the op with its tensor inputs as
arguments, gated on its Python calls per compiled call, graph breaks, recompiles or retraces per
call after warm-up, and a frame dynamo gives up on.  Where the op is shape-polymorphic (its inputs
are only those of ``compiled_ops_table.SECOND``), a second test calls the op compiled at one
shape at a second shape too: after warm-up a call at each shape must compile nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pytest_kerasperf import KerasPerf
from pytest_kerasperf.census import inputs, runner
from pytest_kerasperf.census.compiled_ops_table import (
    COMPILE_BROKEN,
    COMPILE_KNOWN,
    NOT_COMPILED,
    ONE_SHAPE,
    SECOND,
)
from pytest_kerasperf.census.ops_table import BROKEN, OPS

pytestmark = pytest.mark.kerasperf(mode="compiled", latency=False)


def _reshapable(spec: str) -> bool:
    """Whether every input of the spec has a second shape (callables aside)."""
    args, kwargs = inputs.parse(spec)
    names: set[str] = set()

    def walk(item: Any) -> None:
        if isinstance(item, inputs.Input):
            names.add(str(item))
        elif isinstance(item, list | tuple):
            for element in item:
                walk(element)

    for item in [*args, *kwargs.values()]:
        walk(item)
    tensors = {n for n in names if n in inputs.DESCRIPTIONS and "->" not in inputs.DESCRIPTIONS[n]}
    return bool(tensors) and tensors <= set(SECOND)


COMPILED = sorted(set(OPS) - set(NOT_COMPILED))
RESHAPED = sorted(n for n in COMPILED if _reshapable(OPS[n]))


def _compiled_op(
    backend: str, name: str
) -> tuple[Callable[..., Any], Callable[..., tuple[list[Any], dict[str, Any]]]]:
    """The op as a function of its tensor inputs, and the arguments' rebuild; a skip where the
    backend has no compiled mode or Keras cannot run the op eagerly (``test_census_ops``)."""
    from keras import ops

    if backend not in ("torch", "jax", "tensorflow"):
        pytest.skip(f"kerasperf census: the {backend} backend has no compiled mode")
    op = runner.public(name)
    args, kwargs = runner.arguments(name, OPS[name], backend)
    runner.trial(name, backend, op, args, kwargs, BROKEN, calls=1, measured=False)
    _, rebuild = inputs.bind_tensors(OPS[name], ops.convert_to_tensor, runner.data_format())

    def compiled(*tensors: Any) -> Any:
        args, kwargs = rebuild(*tensors)
        return op(*args, **kwargs)

    return compiled, rebuild


def _tensors(name: str, rename: dict[str, str] | None = None) -> tuple[Any, ...]:
    from keras import ops

    tensors, _ = inputs.bind_tensors(OPS[name], ops.convert_to_tensor, runner.data_format(), rename)
    return tensors


@pytest.mark.parametrize("name", COMPILED)
def test_op_compiled(kerasperf: KerasPerf, kerasperf_backend: str, name: str) -> None:
    fn, _ = _compiled_op(kerasperf_backend, name)
    tensors = _tensors(name)
    forward = runner.attempt(
        name, kerasperf_backend, COMPILE_BROKEN, lambda: kerasperf.compile_function(fn, *tensors)
    )
    ready = runner.trial(name, kerasperf_backend, forward, tensors, {}, COMPILE_BROKEN)
    record = kerasperf(ready.call, *tensors)
    runner.judge_known(COMPILE_KNOWN, name, kerasperf_backend, record.gave_up)


@pytest.mark.parametrize("name", RESHAPED)
def test_op_compiled_second_shape(kerasperf: KerasPerf, kerasperf_backend: str, name: str) -> None:
    fn, rebuild = _compiled_op(kerasperf_backend, name)
    first, second = _tensors(name), _tensors(name, SECOND)
    args, kwargs = rebuild(*second)
    one_shape = {(kerasperf_backend, name): ONE_SHAPE[name]} if name in ONE_SHAPE else {}
    runner.trial(name, kerasperf_backend, runner.public(name), tuple(args), kwargs, one_shape, 1)
    forward = kerasperf.compile_function(fn, *first, graph=False)
    runner.trial(name, kerasperf_backend, forward, first, {}, COMPILE_BROKEN, measured=False)

    def both() -> tuple[Any, Any]:
        return forward(*first), forward(*second)

    runner.judge_known(COMPILE_KNOWN, name, kerasperf_backend, kerasperf(both).gave_up)
