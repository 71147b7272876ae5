"""The compiled census of ops (``test_census_compiled_ops``): every op of ``ops_table.OPS``
compiled as the census compiles a layer, its tensor inputs the compiled function's arguments
and its other arguments constants of the trace; and, where its inputs are only those of
``SECOND``, compiled at one shape and called at two.

The tables are the compilers' own failures, found by running every op on torch, jax (with and
without NNX) and tensorflow; each entry is checked on every run: the test skips with the
compiler's own error while it still fails that way and fails once the op compiles (remove the
entry then).
"""

from __future__ import annotations

#: an input -> the input made in its place for the second shape (one more dimension or batch
#: size; ``inputs.DESCRIPTIONS``)
SECOND: dict[str, str] = {"x": "x5", "y": "y5", "b": "b5"}

#: public name -> why the op has no compiled workload: a compiled function returns tensors
NOT_COMPILED: dict[str, str] = {
    "ops.custom_gradient": "it returns a function (a decorator), not a tensor",
    "ops.vectorize": "it returns a function (a decorator), not a tensor",
    "ops.dtype": "it returns a dtype's name, not a tensor",
}

#: (backend or ``jax-nnx``, public name) -> why the compiled op fails there
COMPILE_BROKEN: dict[tuple[str, str], str] = {
    **{
        ("jax", f"ops.{name}"): "a window's length is converted to a tensor, whose value the "
        "trace does not know (ConcretizationTypeError)"
        for name in ("bartlett", "blackman", "hamming", "hanning", "kaiser")
    },
    ("tensorflow", "ops.bartlett"): "Keras's tensorflow bartlett branches on `x == 0` in "
    "Python: a symbolic tensor used as a bool (OperatorNotAllowedInGraphError)",
    ("jax", "ops.bincount"): "its output's length is the data's largest value "
    "(ConcretizationTypeError)",
    ("jax", "ops.nonzero"): "its output's shape depends on the data (ConcretizationTypeError)",
    ("jax", "ops.unique"): "its output's shape depends on the data (ConcretizationTypeError)",
    ("jax", "ops.convert_to_numpy"): "a numpy array cannot be made of a traced value "
    "(TracerArrayConversionError)",
    ("jax", "ops.image.elastic_transform"): "it converts its seed to a tensor, whose value the "
    "trace does not know (ConcretizationTypeError)",
    ("tensorflow", "ops.corrcoef"): "Keras's tensorflow corrcoef branches on `tf.rank(x) == 0` "
    "in Python: a symbolic tensor used as a bool (OperatorNotAllowedInGraphError)",
    ("tensorflow", "ops.isin"): "Keras's tensorflow isin branches on `tf.size(x1) == 0` in "
    "Python: a symbolic tensor used as a bool (OperatorNotAllowedInGraphError)",
    ("tensorflow", "ops.kron"): "Keras's tensorflow kron loops `range()` over a rank "
    "difference held in a tensor (TypeError: 'SymbolicTensor' object cannot be interpreted as "
    "an integer)",
}

#: (backend, public name) -> a compile-health failure the census found there: measured, then
#: skipped with the compiler's own line while a frame is still given up on, failed once none is
COMPILE_KNOWN: dict[tuple[str, str], str] = {
    ("torch", f"ops.{name}"): f"recompiles every call until dynamo gives up: ops.{name} makes "
    f"a new {made} operation each call, whose name takes naming.uniquify's next number "
    f"(the guard on GLOBAL_STATE_TRACKER.object_name_uids['{name}'] fails)"
    for name, made in (("cond", "Cond"), ("diff", "Diff"), ("pad", "Pad"))
}

#: public name -> why its call does not take the second shape (an argument fixes the shape)
ONE_SHAPE: dict[str, str] = {
    "ops.reshape": "its new shape (3, 2) holds the first shape's six values only",
    "ops.split": "two equal parts of five rows do not exist",
    "ops.vsplit": "two equal parts of five rows do not exist",
}
