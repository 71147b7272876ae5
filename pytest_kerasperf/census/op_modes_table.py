"""The census's op modes (``test_census_ops.test_op_mode``): an op called with the arguments
that pick a branch of each backend's own code its default entry (``ops_table.OPS``) never runs.
"""

from __future__ import annotations

#: An op's modes whose code its default call never runs: public name -> mode -> the call's
#: arguments; ``OP_MODES``: workload (``ops.pad[reflect]``) -> (public name, arguments).  Each
#: is a branch of the backends' own implementation, where 1 to 4 of the last 400 commits of
#: keras-team/keras changed code no workload ran (issue 37; docs/census.md): the beam search of
#: ``ctc_decode``, the cubic and Lanczos kernels of ``image.resize``, the reflecting and
#: mirroring fills of ``image.affine_transform`` and of ``pad``, and the "same" padding of a
#: convolution and a pooling.  Measured eagerly (``test_op_mode``).
MODES: dict[str, dict[str, str]] = {
    "ops.ctc_decode": {"beam_search": "seq, seqlen, strategy='beam_search', beam_width=2"},
    "ops.image.resize": {
        kernel: f"img, (4, 4), interpolation='{kernel}'" for kernel in ("bicubic", "lanczos3")
    },
    "ops.image.affine_transform": {
        fill: f"img, affine, fill_mode='{fill}'" for fill in ("reflect", "mirror")
    },
    "ops.pad": {pad: f"x, ((1, 1), (0, 1)), mode='{pad}'" for pad in ("reflect", "symmetric")},
    "ops.conv": {"same": "img, kernel2d, padding='same'"},
    "ops.max_pool": {"same": "img, (2, 2), strides=(2, 2), padding='same'"},
}
OP_MODES: dict[str, tuple[str, str]] = {
    f"{op}[{mode}]": (op, spec) for op, modes in MODES.items() for mode, spec in modes.items()
}

#: (backend, workload) -> why Keras refuses the mode there with an error other than
#: NotImplementedError (which skips by itself): a ValueError of the backend's own
BROKEN: dict[tuple[str, str], str] = {
    ("tensorflow", "ops.image.affine_transform[mirror]"): "Keras's tensorflow affine_transform "
    "takes fill_mode 'constant', 'nearest', 'wrap' or 'reflect' only (ValueError)",
    ("torch", "ops.image.resize[lanczos3]"): "Keras: resizing with Lanczos interpolation is not "
    "supported by the PyTorch backend (ValueError)",
}
