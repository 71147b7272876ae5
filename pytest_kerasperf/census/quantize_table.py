"""The census's quantization workloads (issue 37): where Keras's newest commits change code.

``LAYERS``: the layers Keras quantizes, each as it is built for the census (``quantize``):
``Dense(8)`` and ``EinsumDense("ab,bc->ac", output_shape=8, bias_axes="c")`` on a float32
``(2, 4)`` input, ``Embedding(10, 8)`` on int32 token ids ``(2, 3)``.  ``MODES``: the modes a
layer quantizes to without calibration data.  Each (layer, mode) has three workloads:

- ``<layer>[<mode>]``: the forward of the quantized layer, ``layer(x)``;
- ``<layer>[<mode>].train_on_batch``: one training step of a ``Sequential`` holding it,
  quantized with ``Model.quantize`` and compiled with SGD and mean squared error;
- ``<layer>.quantize[<mode>]``: quantizing a newly built layer, ``layer.quantize(mode)`` (the
  layer is built in the workload too: a layer quantizes once).

Where Keras cannot run one (``Embedding`` has no ``float8``; numpy and openvino do not train)
it is skipped with Keras's own ``NotImplementedError``, as the rest of the census.

``CALIBRATED``: the modes Keras calibrates on data (GPTQ and AWQ), on a small token
classifier (``quantize.calibration_model``: int32 ids ``(1, 8)`` of a 16-token vocabulary, an
``Embedding`` as the block before, a ``Sequential`` of two ``Dense`` as the one transformer
block's stand-in, pooled into a ``Dense(3)``), calibrated on two samples with groups of 8:

- ``Model.quantize[<mode>]``: the calibration, ``model.quantize(mode, config=...)`` on a model
  built in the workload (a model quantizes once);
- ``Model[<mode>]``: the forward of the calibrated model, ``model(ids)``.
"""

from __future__ import annotations

LAYERS = ("Dense", "EinsumDense", "Embedding")
MODES = ("int8", "int4", "float8")
KINDS = ("forward", "train_on_batch", "quantize")


def name(layer: str, mode: str, kind: str) -> str:
    if kind == "forward":
        return f"{layer}[{mode}]"
    if kind == "train_on_batch":
        return f"{layer}[{mode}].train_on_batch"
    return f"{layer}.quantize[{mode}]"


QUANTIZED: dict[str, tuple[str, str, str]] = {
    name(layer, mode, kind): (layer, mode, kind)
    for layer in LAYERS
    for mode in MODES
    for kind in KINDS
}

#: calibrated workload -> (mode, kind): kind "quantize" calibrates, "forward" calls the result
CALIBRATED: dict[str, tuple[str, str]] = {
    f"Model.quantize[{mode}]" if kind == "quantize" else f"Model[{mode}]": (mode, kind)
    for mode in ("gptq", "awq")
    for kind in ("quantize", "forward")
}

#: (backend, workload) -> why Keras fails there with an error other than NotImplementedError
BROKEN: dict[tuple[str, str], str] = {}
