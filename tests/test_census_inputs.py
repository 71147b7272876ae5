"""The census's argument specs as a compiled op takes them: tensor inputs as the compiled
function's arguments, every other argument rebuilt around them (``inputs.bind_tensors``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_kerasperf.census import inputs


def tagged(array: Any) -> tuple[str, Any]:
    return ("tensor", array)


def test_the_tensors_come_out_in_order_and_rebuild_the_call_bind_makes() -> None:
    spec = "[x, y], b, 0.5, axis=1, fn=double, raw=strs, pair=(x, 2)"
    tensors, rebuild = inputs.bind_tensors(spec, tagged)
    assert [t[1].shape for t in tensors] == [(2, 3), (2, 3), (2, 3), (2, 3)]
    assert [t[1].dtype for t in tensors] == ["float32", "float32", "bool", "float32"]
    args, kwargs = rebuild(*tensors)
    bound_args, bound_kwargs = inputs.bind(spec, tagged)
    assert args[0] == [tensors[0], tensors[1]]
    assert args[1] is tensors[2]
    made = [*args[0], args[1]]
    bound = [*bound_args[0], bound_args[1]]
    for (kind, array), (bound_kind, bound_array) in zip(made, bound, strict=True):
        assert kind == bound_kind == "tensor"
        assert np.array_equal(array, bound_array)
    assert args[2] == 0.5
    assert kwargs["axis"] == 1
    assert kwargs["fn"](3) == 6  # the callable is the spec's, not an argument of the trace
    assert list(kwargs["raw"]) == ["a", "b", "c"]  # raw inputs are no tensors
    assert kwargs["pair"][1] == 2
    assert kwargs["pair"][0] is tensors[3]
    assert set(kwargs) == set(bound_kwargs)


def test_the_second_shape_renames_inputs_and_keeps_the_structure() -> None:
    first, rebuild = inputs.bind_tensors("x, y, axis=0", tagged)
    second, _ = inputs.bind_tensors("x, y, axis=0", tagged, rename={"x": "x5", "y": "y5"})
    assert [t[1].shape for t in first] == [(2, 3), (2, 3)]
    assert [t[1].shape for t in second] == [(5, 3), (5, 3)]
    args, kwargs = rebuild(*second)
    assert args == list(second)
    assert kwargs == {"axis": 0}


def test_a_spec_of_literals_only_has_no_tensors() -> None:
    tensors, rebuild = inputs.bind_tensors("(2, 3)", tagged)
    assert tensors == ()
    assert rebuild() == ([(2, 3)], {})
