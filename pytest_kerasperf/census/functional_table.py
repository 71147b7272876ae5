"""The census's ops inside a Functional model (issue 37): the code a graph of ops runs.

An op called on backend tensors (``test_census_ops``) runs the backend's function directly;
inside a Functional model, each op is an ``Operation`` whose ``call`` runs it (``Add.call``),
and building the model runs its ``compute_output_spec`` on symbolic tensors.  Those methods are
most of ``keras/src/ops``, and no other workload executes them.  Each op of ``ops_table.OPS``
that takes a tensor is measured as ``model(inputs)`` of ``keras.Model(Input(s), op(Input(s)))``,
every tensor argument an ``Input`` of its shape and dtype (``functional``).

An op that takes no tensor (``ops.arange``) has no model, and an op Keras cannot build on
symbolic inputs (its own exception, e.g. ``ops.shape``'s outputs are not tensors) is skipped
with that exception; ``BROKEN`` lists where Keras builds the model but fails to call it.
"""

from __future__ import annotations

_EVERY = ("numpy", "jax", "torch", "tensorflow", "openvino")

#: (backend, op) -> why Keras fails to call the op's model there (its error other than
#: NotImplementedError), Keras 3.15.1
BROKEN: dict[tuple[str, str], str] = {
    # Keras's master (3422977a5e), not 3.15.1, which has no gammainc
    ("openvino", "ops.gammainc"): "Gammainc.call: keras.src.backend.openvino.math has no gammainc",
    **{
        (backend, "ops.conv_transpose"): "ConvTranspose.call fails inside a Functional model "
        "(its padding argument arrives as None)"
        for backend in _EVERY
    },
    **{
        (backend, "ops.histogram"): "Histogram.call looks histogram up in the backend's math "
        "module, which has none"
        for backend in _EVERY
    },
    **{
        (backend, "ops.nonzero"): "the model's second output is not connected to its inputs"
        for backend in ("torch", "openvino")
    },
    **{
        (backend, "ops.view_as_complex"): "ViewAsComplex.call cannot make 1j a tensor of "
        "the input's dtype"
        for backend in ("tensorflow", "openvino")
    },
    ("openvino", "ops.ctc_loss"): "OpenVINO's CTCLoss shape inference refuses the labels",
    ("openvino", "ops.polar"): "keras.src.backend.openvino.math has no polar",
}
