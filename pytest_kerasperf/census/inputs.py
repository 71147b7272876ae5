"""The census's inputs: small deterministic arrays by name, and its argument specs.

A workload's arguments are written as the text of a call's argument list,
``"x, x"`` or ``"x, axis=0"`` or ``"m, (3, 3)"``: a bare name is one of
``INPUTS`` (a numpy array, handed to Keras as a backend tensor), every other
argument a Python literal.  Parsing is ``ast`` and ``ast.literal_eval``:
nothing is evaluated.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping
from typing import Any

#: name -> (what it is, how it is made); shapes are small so each call measures Keras, not math.
DESCRIPTIONS = {
    "x": "float32 (2, 3), values in (0.1, 0.9)",
    "y": "float32 (2, 3), values in (0.2, 0.8), reversed",
    "v": "float32 (3,)",
    "s": "float32 scalar 0.5",
    "i": "int32 (2, 3), values 0..5",
    "iv": "int32 (3,), values 0..2",
    "ipos": "int32 (2, 3), values 1..6",
    "b": "bool (2, 3)",
    "m": "float32 (3, 3), symmetric positive definite",
    "c": "complex64 (2, 3)",
    "seq": "float32 (2, 5, 4): batch, steps, features",
    "img": "float32 (1, 8, 8, 3), channels_last",
    "imgc": "float32 (1, 3, 8, 8), channels_first",
    "vol": "float32 (1, 4, 4, 4, 2), channels_last",
    "probs": "float32 (2, 3), rows sum to 1",
    "labels": "int32 (2,), class ids 0..2",
    "onehot": "float32 (2, 3), one-hot of labels",
    "kernel1d": "float32 (3, 4, 2): width, in, out",
    "kernel2d": "float32 (3, 3, 3, 2): height, width, in, out",
    "dwkernel": "float32 (3, 3, 3, 1): depthwise",
    "pwkernel": "float32 (1, 1, 3, 2): pointwise",
    "seg": "int32 (2,), segment ids 0, 1",
    "boxes": "float32 (1, 2, 4)",
    "img4": "float32 (1, 8, 8, 4), channels_last",
    "imgbig": "float32 (1, 16, 16, 3), channels_last",
    "tkernel": "float32 (3, 3, 2, 3): a transposed convolution's height, width, out, in",
    "seqlen": "int32 (2,): 5, 5",
    "sigb": "float32 (2, 32): a batch of signals",
    "sigc": "float32 (2, 32, 1): a batch of one-channel signals",
    "strs": "str (3,): 'a', 'b', 'c'",
    "clstm1": "float32 (1, 2, 5, 3): batch, time, rows, channels",
    "clstm2": "float32 (1, 2, 5, 5, 3): batch, time, rows, cols, channels",
    "clstm3": "float32 (1, 2, 4, 4, 4, 2): batch, time, depth, rows, cols, channels",
    "ctarget": "int32 (2, 2): CTC labels 1..3",
    "ctarget_len": "int32 (2,): 2, 2",
    "qkv": "float32 (1, 4, 2, 3): batch, steps, heads, head size",
    "sig": "float32 (16,): a signal",
    "foldin": "float32 (1, 12, 9): unfolded 2x2 patches of a (1, 3, 4, 4) image",
    "stftr": "float32 (3, 5): real part of an 8-point STFT",
    "stfti": "float32 (3, 5): imaginary part",
    "affine": "float32 (1, 8): the identity transform",
    "plane": "float32 (4, 4)",
    "coords": "float32 (2, 3): coordinates into plane",
    "corners": "float32 (1, 4, 2): the corners of an 8x8 image",
    "small": "float32 (2, 2)",
    "sidx": "int32 (2, 2): scatter indices",
    "sval": "float32 (2,): scatter values",
    "patches": "float32 (1, 2, 2, 48): the 4x4 patches of an 8x8, 3-channel image, channels_last",
    # second shapes (test_census_variants, test_census_compiled_ops) and padded token ids
    "x5": "float32 (5, 3): x with another batch size",
    "y5": "float32 (5, 3): y with another batch size",
    "b5": "bool (5, 3): b with another batch size",
    "seq3": "float32 (2, 3, 4): seq with fewer steps",
    "i5": "int32 (2, 5), values 1..5: i with more columns",
    "ids": "int32 (2, 5): token ids 1..5 padded with trailing zeros (3 and 2 tokens)",
    # callables (workloads that take a function)
    "double": "t -> t * 2",
    "triple": "t -> t * 3",
    "add2": "(a, b) -> a + b",
    "ones_fn": "() -> ops.ones((2, 3))",
    "zeros_fn": "() -> ops.zeros((2, 3))",
    "body2": "(i, v) -> v + 1",
    "scan_step": "(carry, t) -> (carry + t, carry)",
    "below3": "i -> i < 3",
    "inc": "i -> (i + 1,)",
    "with_grad": "t -> (t * 2, a gradient function)",
}

#: Inputs handed to Keras as numpy arrays, as users hand them (no backend tensor holds strings).
RAW = {"strs"}

#: Inputs that are images: laid out as the Keras config's image_data_format says.
IMAGES = {"img": (8, 8, 3), "img4": (8, 8, 4), "imgbig": (16, 16, 3), "vol": (4, 4, 4, 2)}


def _callables() -> dict[str, Any]:
    from keras import ops

    def with_grad(t: Any) -> Any:
        def grad(*args: Any, upstream: Any = None) -> Any:
            return (upstream if upstream is not None else args[-1]) * 2

        return t * 2, grad

    return {
        "double": lambda t: t * 2,
        "triple": lambda t: t * 3,
        "add2": lambda a, b: a + b,
        "ones_fn": lambda: ops.ones((2, 3)),
        "zeros_fn": lambda: ops.zeros((2, 3)),
        "body2": lambda i, v: v + 1,
        "scan_step": lambda carry, t: (carry + t, carry),
        "below3": lambda i: i < 3,
        "inc": lambda i: (i + 1,),
        "with_grad": with_grad,
    }


def _arrays(data_format: str = "channels_last") -> dict[str, Any]:
    import numpy as np

    rng = np.random.default_rng(1337)
    x = np.linspace(0.1, 0.9, 6, dtype="float32").reshape(2, 3)
    spd = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.25], [0.5, 0.25, 2.0]], dtype="float32")
    labels = np.array([0, 2], dtype="int32")
    return {
        "x": x,
        "y": np.linspace(0.8, 0.2, 6, dtype="float32").reshape(2, 3),
        "v": np.array([0.25, 0.5, 0.75], dtype="float32"),
        "s": np.float32(0.5),
        "i": np.arange(6, dtype="int32").reshape(2, 3),
        "iv": np.array([0, 1, 2], dtype="int32"),
        "ipos": np.arange(1, 7, dtype="int32").reshape(2, 3),
        "b": np.array([[True, False, True], [False, True, False]]),
        "m": spd,
        "c": (x + 1j * x[::-1]).astype("complex64"),
        "seq": rng.uniform(0.1, 0.9, (2, 5, 4)).astype("float32"),
        "img": _image(rng, IMAGES["img"], data_format),
        "imgc": rng.uniform(0.1, 0.9, (1, 3, 8, 8)).astype("float32"),
        "vol": _image(rng, IMAGES["vol"], data_format),
        "img4": _image(rng, IMAGES["img4"], data_format),
        "imgbig": _image(rng, IMAGES["imgbig"], data_format),
        "tkernel": rng.uniform(-0.5, 0.5, (3, 3, 2, 3)).astype("float32"),
        "probs": np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]], dtype="float32"),
        "labels": labels,
        "onehot": np.eye(3, dtype="float32")[labels],
        "kernel1d": rng.uniform(-0.5, 0.5, (3, 4, 2)).astype("float32"),
        "kernel2d": rng.uniform(-0.5, 0.5, (3, 3, 3, 2)).astype("float32"),
        "dwkernel": rng.uniform(-0.5, 0.5, (3, 3, 3, 1)).astype("float32"),
        "pwkernel": rng.uniform(-0.5, 0.5, (1, 1, 3, 2)).astype("float32"),
        "seg": np.array([0, 1], dtype="int32"),
        "boxes": np.array([[[0.1, 0.1, 0.5, 0.5], [0.2, 0.3, 0.6, 0.9]]], dtype="float32"),
        "seqlen": np.array([5, 5], dtype="int32"),
        "sigb": np.sin(np.arange(64, dtype="float32")).reshape(2, 32),
        "sigc": np.sin(np.arange(64, dtype="float32")).reshape(2, 32, 1),
        "strs": np.array(["a", "b", "c"]),
        "clstm1": rng.uniform(0.1, 0.9, (1, 2, 5, 3)).astype("float32"),
        "clstm2": rng.uniform(0.1, 0.9, (1, 2, 5, 5, 3)).astype("float32"),
        "clstm3": rng.uniform(0.1, 0.9, (1, 2, 4, 4, 4, 2)).astype("float32"),
        "ctarget": np.array([[1, 2], [2, 3]], dtype="int32"),
        "ctarget_len": np.array([2, 2], dtype="int32"),
        "qkv": rng.uniform(0.1, 0.9, (1, 4, 2, 3)).astype("float32"),
        "sig": np.sin(np.arange(16, dtype="float32")),
        "foldin": rng.uniform(0.1, 0.9, (1, 12, 9)).astype("float32"),
        "stftr": rng.uniform(0.1, 0.9, (3, 5)).astype("float32"),
        "stfti": rng.uniform(0.1, 0.9, (3, 5)).astype("float32"),
        "affine": np.array([[1, 0, 0, 0, 1, 0, 0, 0]], dtype="float32"),
        "plane": np.arange(16, dtype="float32").reshape(4, 4),
        "coords": np.array([[0.5, 1.5, 2.5], [1.0, 2.0, 0.5]], dtype="float32"),
        "corners": np.array([[[0, 0], [7, 0], [7, 7], [0, 7]]], dtype="float32"),
        "small": np.array([[0.5, 0.25], [0.75, 0.125]], dtype="float32"),
        "sidx": np.array([[0, 1], [2, 2]], dtype="int32"),
        "sval": np.array([0.5, 0.25], dtype="float32"),
        "patches": np.linspace(0.1, 0.9, 192, dtype="float32").reshape(1, 2, 2, 48),
        "x5": np.linspace(0.1, 0.9, 15, dtype="float32").reshape(5, 3),
        "y5": np.linspace(0.8, 0.2, 15, dtype="float32").reshape(5, 3),
        "b5": np.arange(15).reshape(5, 3) % 2 == 0,
        "seq3": np.linspace(0.1, 0.9, 24, dtype="float32").reshape(2, 3, 4),
        "i5": (np.arange(10, dtype="int32").reshape(2, 5) % 5) + 1,
        "ids": np.array([[1, 2, 3, 0, 0], [4, 5, 0, 0, 0]], dtype="int32"),
    }


def _image(rng: Any, shape: tuple[int, ...], data_format: str) -> Any:
    """A seeded float32 image batch of one, channels where ``data_format`` puts them."""
    image = rng.uniform(0.1, 0.9, (1, *shape)).astype("float32")
    if data_format == "channels_first":
        image = image.transpose(0, image.ndim - 1, *range(1, image.ndim - 1))
    return image


class SpecError(ValueError):
    """An argument spec the census cannot read (a table entry to fix)."""


def parse(spec: str, extra: Iterable[str] = ()) -> tuple[list[Any], dict[str, Any]]:
    """``"x, axis=0"`` -> ([Input("x")], {"axis": 0}): input names (and the ``extra`` names
    a table defines) as ``Input``."""
    known = set(DESCRIPTIONS) | set(extra)
    try:
        call = ast.parse(f"f({spec})", mode="eval").body
    except SyntaxError as error:
        raise SpecError(f"{spec!r}: not an argument list ({error.msg})") from None
    assert isinstance(call, ast.Call)

    def value(node: ast.expr) -> Any:
        if isinstance(node, ast.Name):
            if node.id not in known:
                raise SpecError(f"{spec!r}: no census input named {node.id!r}")
            return Input(node.id)
        if isinstance(node, ast.List | ast.Tuple) and any(
            isinstance(e, ast.Name) for e in ast.walk(node)
        ):
            items = [value(e) for e in node.elts]
            return items if isinstance(node, ast.List) else tuple(items)
        try:
            return ast.literal_eval(node)
        except ValueError:
            raise SpecError(
                f"{spec!r}: {ast.unparse(node)} is neither an input nor a literal"
            ) from None

    args = [value(a) for a in call.args]
    kwargs = {k.arg: value(k.value) for k in call.keywords if k.arg}
    return args, kwargs


class Input(str):
    """A census input's name in a parsed spec."""


def bind(
    spec: str,
    convert: Callable[[Any], Any],
    data_format: str = "channels_last",
    extra: Mapping[str, Callable[[], Any]] | None = None,
) -> tuple[list[Any], dict[str, Any]]:
    """The spec's arguments with each input made and handed through ``convert`` (to a tensor),
    each callable as it is, each ``extra`` name made by its factory."""
    arrays = _arrays(data_format)
    functions = _callables()
    extra = extra or {}
    args, kwargs = parse(spec, extra)

    def real(item: Any) -> Any:
        if isinstance(item, Input) and str(item) in extra:
            return extra[str(item)]()
        if isinstance(item, Input):
            if str(item) in functions:
                return functions[str(item)]
            array = arrays[str(item)]
            return array if str(item) in RAW else convert(array)
        if isinstance(item, list | tuple):
            return type(item)(real(i) for i in item)
        return item

    return [real(a) for a in args], {k: real(v) for k, v in kwargs.items()}


def bind_tensors(
    spec: str,
    convert: Callable[[Any], Any],
    data_format: str = "channels_last",
    rename: Mapping[str, str] | None = None,
) -> tuple[tuple[Any, ...], Callable[..., tuple[list[Any], dict[str, Any]]]]:
    """The spec's tensor inputs in order, and ``rebuild(*tensors)``: the call's arguments with
    those tensors in their places and every other argument (literals, callables, raw arrays)
    as ``bind`` makes it.  A compiled op takes the tensors as its arguments; the rest are the
    trace's constants.  ``rename``: an input made in place of another (a second shape)."""
    arrays = _arrays(data_format)
    functions = _callables()
    rename = rename or {}
    args, kwargs = parse(spec)
    tensors: list[Any] = []

    def collect(item: Any) -> None:
        if isinstance(item, Input) and str(item) not in functions and str(item) not in RAW:
            tensors.append(convert(arrays[rename.get(str(item), str(item))]))
        elif isinstance(item, list | tuple):
            for element in item:
                collect(element)

    for item in [*args, *kwargs.values()]:
        collect(item)

    def rebuild(*given: Any) -> tuple[list[Any], dict[str, Any]]:
        supply = iter(given)

        def real(item: Any) -> Any:
            if isinstance(item, Input):
                name = str(item)
                if name in functions:
                    return functions[name]
                if name in RAW:
                    return arrays[name]
                return next(supply)
            if isinstance(item, list | tuple):
                return type(item)(real(i) for i in item)
            return item

        return [real(a) for a in args], {k: real(v) for k, v in kwargs.items()}

    return tuple(tensors), rebuild
