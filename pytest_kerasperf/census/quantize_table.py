"""The census's quantization workloads (issue 37): where Keras's newest commits change code.

``LAYERS``: the layers Keras quantizes, each as it is built for the census (``quantize``):
``Dense(8)`` and ``EinsumDense("ab,bc->ac", output_shape=8, bias_axes="c")`` on a float32
``(2, 4)`` input, ``Embedding(10, 8)`` on int32 token ids ``(2, 3)``.  ``MODES``: the modes a
layer quantizes to without calibration data.  Each (layer, mode) has three workloads:

- ``<layer>[<mode>]``: the forward of the quantized layer, ``layer(x)``;
- ``<layer>[<mode>].train_on_batch``: one training step of a ``Sequential`` holding it,
  quantized with ``Model.quantize`` and compiled with SGD and mean squared error;
- ``<layer>.quantize[<mode>]``: quantizing a newly built layer, ``layer.quantize(mode)`` (the
  layer is built in the workload too: a layer quantizes once);
- ``<layer>[<mode>].save+load_model``: a ``Sequential`` holding the quantized layer saved to a
  ``.keras`` file and loaded back (the quantized variables' serialization).

``LORA_MODES``: LoRA (``enable_lora(RANK)``) on the float layer and on the layer quantized to
``int8`` and ``int4`` (Keras has no ``float8`` LoRA: its ``NotImplementedError`` at the forward);
``LORA_ONLY``: ``Conv2D(8, 3)`` on a float32 ``(1, 5, 5, 2)`` image (channels first where the
variant's config says so), float LoRA only.
Each (layer, mode) has three workloads:

- ``<layer>.enable_lora[<mode>]``: a layer built, quantized and given LoRA in the workload (a
  layer enables LoRA once);
- ``<layer>[lora]`` and ``<layer>[<mode>+lora]``: the forward of the layer with LoRA;
- ``<layer>[lora].train_on_batch``, ``<layer>[<mode>+lora].train_on_batch``: one training
  step of a ``Sequential`` holding it (only the LoRA weights train), SGD and mean squared error.

Where Keras cannot run one (``Embedding`` has no ``float8``; numpy and openvino do not train)
it is skipped with Keras's own ``NotImplementedError``, as the rest of the census.

``CALIBRATED``: the modes Keras calibrates on data (GPTQ and AWQ), on a small token
classifier (``quantize.calibration_model``: int32 ids ``(1, 8)`` of a 16-token vocabulary, an
``Embedding`` as the block before, a ``Sequential`` of two ``Dense`` as the one transformer
block's stand-in, pooled into a ``Dense(3)``), calibrated on two samples with groups of 8:

- ``Model.quantize[<mode>]``: the calibration, ``model.quantize(mode, config=...)`` on a model
  built in the workload (a model quantizes once);
- ``Model[<mode>]``: the forward of the calibrated model, ``model(ids)``;
- ``Model[<mode>].save+load_model``: the calibrated model saved to a ``.keras`` file and loaded.
"""

from __future__ import annotations

LAYERS = ("Dense", "EinsumDense", "Embedding")
MODES = ("int8", "int4", "float8")
KINDS = ("forward", "train_on_batch", "quantize", "save_load")
LORA_MODES = ("float", "int8", "int4")
LORA_KINDS = ("enable_lora", "lora", "lora_train_on_batch")
#: the LoRA rank of every LoRA workload
RANK = 2


def name(layer: str, mode: str, kind: str) -> str:
    lora = "lora" if mode == "float" else f"{mode}+lora"
    return {
        "forward": f"{layer}[{mode}]",
        "train_on_batch": f"{layer}[{mode}].train_on_batch",
        "quantize": f"{layer}.quantize[{mode}]",
        "save_load": f"{layer}[{mode}].save+load_model",
        "enable_lora": f"{layer}.enable_lora[{mode}]",
        "lora": f"{layer}[{lora}]",
        "lora_train_on_batch": f"{layer}[{lora}].train_on_batch",
    }[kind]


#: a layer with LoRA that Keras 3.15.1 does not quantize: its float LoRA only
LORA_ONLY = ("Conv2D",)

QUANTIZED: dict[str, tuple[str, str, str]] = {
    name(layer, mode, kind): (layer, mode, kind)
    for layers, modes, kinds in (
        (LAYERS, MODES, KINDS),
        (LAYERS, LORA_MODES, LORA_KINDS),
        (LORA_ONLY, ("float",), LORA_KINDS),
    )
    for layer in layers
    for mode in modes
    for kind in kinds
}

#: calibrated workload -> (mode, kind): kind "quantize" calibrates, "forward" calls the result
CALIBRATED: dict[str, tuple[str, str]] = {
    {
        "quantize": f"Model.quantize[{mode}]",
        "forward": f"Model[{mode}]",
        "save_load": f"Model[{mode}].save+load_model",
    }[kind]: (mode, kind)
    for mode in ("gptq", "awq")
    for kind in ("quantize", "forward", "save_load")
}

#: (backend, workload) -> why Keras fails there with an error other than NotImplementedError
BROKEN: dict[tuple[str, str], str] = {
    # serializing the calibrated model recurses until Python stops it; keras-team/keras#23321
    # (ceb3d72880, "Fix GPTQ/AWQ quantization of layers outside the quantization structure")
    # fixed it: its parent fails, it saves and loads
    **{
        (backend, f"Model[{mode}].save+load_model"): "RecursionError saving a model calibrated "
        "with a layer outside its quantization structure (Keras 3.15.1; fixed by #23321)"
        for backend in ("jax", "numpy", "openvino", "tensorflow", "torch")
        for mode in ("gptq", "awq")
    },
    # enable_lora freezes the unpacked int4 array, not the variable; keras-team/keras#23393
    **{
        ("numpy", name("Embedding", "int4", kind)): "enable_lora on an int4 Embedding sets "
        "`trainable` on a numpy array (Keras 3.15.1; fixed by #23393)"
        for kind in LORA_KINDS
    },
}
