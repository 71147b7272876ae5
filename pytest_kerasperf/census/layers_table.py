"""The census's layer workloads: one entry per public name of ``keras.layers``.

Each entry is ``(constructor arguments, call arguments)`` (``inputs.parse``):
the layer is built with the first, called once (it builds its weights), and
the measured workload is the call a user makes, ``layer(*call)``.  Where the
call is None, the public name is a function (``keras.layers.add``) or a class
whose construction is the workload (``keras.Input``): the measured workload
is the call with the first arguments.  Names a constructor takes that are not
inputs are ``PARTS``: a fresh inner layer or cell per use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _parts() -> dict[str, Callable[[], Any]]:
    from keras import layers

    return {
        "dense2": lambda: layers.Dense(2),
        "lstm3": lambda: layers.LSTM(3),
        "gru3": lambda: layers.GRU(3),
        "cell3": lambda: layers.SimpleRNNCell(3),
        "fn_double": lambda: lambda t: t * 2,
    }


#: constructor-argument names that are inner layers: name -> what it is
PARTS = {
    "dense2": "layers.Dense(2)",
    "lstm3": "layers.LSTM(3)",
    "gru3": "layers.GRU(3)",
    "cell3": "layers.SimpleRNNCell(3)",
    "fn_double": "lambda t: t * 2",
}


def parts() -> dict[str, Callable[[], Any]]:
    return _parts()


CL = "data_format='channels_last'"

#: public name -> (constructor arguments, call arguments or None)
LAYERS: dict[str, tuple[str, str | None]] = {
    "layers.Activation": ("'relu'", "x"),
    "layers.ActivityRegularization": ("", "x"),
    "layers.AdaptiveAveragePooling1D": ("2", "seq"),
    "layers.AdaptiveAveragePooling2D": ("2", "img"),
    "layers.AdaptiveAveragePooling3D": ("2", "vol"),
    "layers.AdaptiveMaxPooling1D": ("2", "seq"),
    "layers.AdaptiveMaxPooling2D": ("2", "img"),
    "layers.AdaptiveMaxPooling3D": ("2", "vol"),
    "layers.Add": ("", "[x, y]"),
    "layers.AdditiveAttention": ("", "[seq, seq]"),
    "layers.AlphaDropout": ("0.5", "x, training=True"),
    "layers.Attention": ("", "[seq, seq]"),
    "layers.AugMix": ("seed=1337", "img"),
    "layers.AutoContrast": ("", "img"),
    "layers.Average": ("", "[x, y]"),
    "layers.AveragePooling1D": ("2", "seq"),
    "layers.AveragePooling2D": ("2", "img"),
    "layers.AveragePooling3D": ("2", "vol"),
    "layers.BatchNormalization": ("", "x"),
    "layers.Bidirectional": ("lstm3", "seq"),
    "layers.CategoryEncoding": ("num_tokens=6, output_mode='one_hot'", "iv"),
    "layers.CenterCrop": ("4, 4", "img"),
    "layers.Concatenate": ("", "[x, y]"),
    "layers.ContrastLimitedAdaptiveHistogramEqualization": ("", "img"),
    "layers.Conv1D": ("2, 3", "seq"),
    "layers.Conv1DTranspose": ("2, 3", "seq"),
    "layers.Conv2D": ("2, 3", "img"),
    "layers.Conv2DTranspose": ("2, 3", "img"),
    "layers.Conv3D": ("2, 2", "vol"),
    "layers.Conv3DTranspose": ("2, 2", "vol"),
    "layers.ConvLSTM1D": (f"2, 3, {CL}", "clstm1"),
    "layers.ConvLSTM2D": (f"2, 3, {CL}", "clstm2"),
    "layers.ConvLSTM3D": (f"2, 2, {CL}", "clstm3"),
    "layers.Cropping1D": ("1", "seq"),
    "layers.Cropping2D": ("1", "img"),
    "layers.Cropping3D": ("1", "vol"),
    "layers.CutMix": ("seed=1337", "img"),
    "layers.Dense": ("4", "x"),
    "layers.DepthwiseConv1D": ("3", "seq"),
    "layers.DepthwiseConv2D": ("3", "img"),
    "layers.Discretization": ("bin_boundaries=[0.3, 0.6]", "x"),
    "layers.Dot": ("axes=1", "[x, y]"),
    "layers.Dropout": ("0.5", "x, training=True"),
    "layers.ELU": ("", "x"),
    "layers.EinsumDense": ("'ab,bc->ac', 4", "x"),
    "layers.Embedding": ("6, 4", "i"),
    "layers.Equalization": ("", "img"),
    "layers.Flatten": ("", "img"),
    "layers.GRU": ("3", "seq"),
    "layers.GRUCell": ("3", "x, [y]"),
    "layers.GaussianDropout": ("0.5", "x, training=True"),
    "layers.GaussianNoise": ("0.1", "x, training=True"),
    "layers.GlobalAveragePooling1D": ("", "seq"),
    "layers.GlobalAveragePooling2D": ("", "img"),
    "layers.GlobalAveragePooling3D": ("", "vol"),
    "layers.GlobalMaxPool1D": ("", "seq"),
    "layers.GlobalMaxPool2D": ("", "img"),
    "layers.GlobalMaxPool3D": ("", "vol"),
    "layers.GroupNormalization": ("groups=3", "x"),
    "layers.GroupQueryAttention": (
        "head_dim=2, num_query_heads=2, num_key_value_heads=1",
        "seq, seq",
    ),
    "layers.HashedCrossing": ("num_bins=4", "(iv, iv)"),
    "layers.Hashing": ("num_bins=4", "i"),
    "layers.Identity": ("", "x"),
    "layers.Input": ("shape=(3,)", None),
    "layers.InputLayer": ("shape=(3,)", None),
    "layers.InputSpec": ("shape=(None, 3)", None),
    "layers.IntegerLookup": ("vocabulary=[0, 1, 2]", "iv"),
    "layers.LSTM": ("3", "seq"),
    "layers.LSTMCell": ("3", "x, [y, y]"),
    "layers.Lambda": ("fn_double", "x"),
    "layers.LayerNormalization": ("", "x"),
    "layers.LeakyReLU": ("", "x"),
    "layers.Masking": ("", "seq"),
    "layers.MaxPool1D": ("2", "seq"),
    "layers.MaxPool2D": ("2", "img"),
    "layers.MaxPool3D": ("2", "vol"),
    "layers.Maximum": ("", "[x, y]"),
    "layers.MelSpectrogram": (
        "fft_length=16, sequence_length=8, sequence_stride=4, num_mel_bins=4",
        "sigb",
    ),
    "layers.Minimum": ("", "[x, y]"),
    "layers.MixUp": ("seed=1337", "img"),
    "layers.MultiHeadAttention": ("2, 2", "seq, seq"),
    "layers.Multiply": ("", "[x, y]"),
    "layers.Normalization": ("mean=0.5, variance=0.1", "x"),
    "layers.PReLU": ("", "x"),
    "layers.Permute": ("(2, 1)", "seq"),
    "layers.Pipeline": ("[dense2]", "x"),
    "layers.RMSNormalization": ("", "x"),
    "layers.RNN": ("cell3", "seq"),
    "layers.RandAugment": ("seed=1337", "img"),
    "layers.RandomBrightness": ("0.2, seed=1337", "img"),
    "layers.RandomColorDegeneration": ("0.2, seed=1337", "img"),
    "layers.RandomColorJitter": ("seed=1337", "img"),
    "layers.RandomContrast": ("0.2, seed=1337", "img"),
    "layers.RandomCrop": ("4, 4, seed=1337", "img"),
    "layers.RandomElasticTransform": ("seed=1337", "img"),
    "layers.RandomErasing": ("seed=1337", "img"),
    "layers.RandomFlip": ("seed=1337", "img"),
    "layers.RandomGaussianBlur": ("seed=1337", "img"),
    "layers.RandomGrayscale": ("seed=1337", "img"),
    "layers.RandomHue": ("0.2, seed=1337", "img"),
    "layers.RandomInvert": ("seed=1337", "img"),
    "layers.RandomPerspective": ("seed=1337", "img"),
    "layers.RandomPosterization": ("4, seed=1337", "img"),
    "layers.RandomRotation": ("0.2, seed=1337", "img"),
    "layers.RandomSaturation": ("0.2, seed=1337", "img"),
    "layers.RandomSharpness": ("0.2, seed=1337", "img"),
    "layers.RandomShear": ("x_factor=0.2, seed=1337", "img"),
    "layers.RandomTranslation": ("0.2, 0.2, seed=1337", "img"),
    "layers.RandomZoom": ("0.2, seed=1337", "img"),
    "layers.ReLU": ("", "x"),
    "layers.RepeatVector": ("2", "x"),
    "layers.Rescaling": ("0.5", "x"),
    "layers.Reshape": ("(3, 1)", "x"),
    "layers.Resizing": ("4, 4", "img"),
    "layers.ReversibleEmbedding": ("6, 4", "i"),
    "layers.STFTSpectrogram": ("frame_length=8, frame_step=4, fft_length=8", "sigc"),
    "layers.SeparableConv1D": ("2, 3", "seq"),
    "layers.SeparableConv2D": ("2, 3", "img"),
    "layers.SimpleRNN": ("3", "seq"),
    "layers.SimpleRNNCell": ("3", "x, [y]"),
    "layers.Softmax": ("", "x"),
    "layers.Solarization": ("", "img"),
    "layers.SpatialDropout1D": ("0.5", "seq, training=True"),
    "layers.SpatialDropout2D": ("0.5", "img, training=True"),
    "layers.SpatialDropout3D": ("0.5", "vol, training=True"),
    "layers.SpectralNormalization": ("dense2", "x"),
    "layers.StackedRNNCells": ("[cell3, cell3]", "x, [[y], [y]]"),
    "layers.StringLookup": ("vocabulary=['a', 'b', 'c']", "strs"),
    "layers.Subtract": ("", "[x, y]"),
    "layers.TernaryDense": ("4", "x"),
    "layers.TextVectorization": ("vocabulary=['a', 'b']", "strs"),
    "layers.TimeDistributed": ("dense2", "seq"),
    "layers.UnitNormalization": ("", "x"),
    "layers.UpSampling1D": ("", "seq"),
    "layers.UpSampling2D": ("", "img"),
    "layers.UpSampling3D": ("", "vol"),
    "layers.ZeroPadding1D": ("", "seq"),
    "layers.ZeroPadding2D": ("", "img"),
    "layers.ZeroPadding3D": ("", "vol"),
    "layers.add": ("[x, y]", None),
    "layers.average": ("[x, y]", None),
    "layers.concatenate": ("[x, y]", None),
    "layers.deserialize": (
        "{'module': 'keras.layers', 'class_name': 'Dense', 'config': {'units': 2}}",
        None,
    ),
    "layers.dot": ("[x, y], axes=1", None),
    "layers.maximum": ("[x, y]", None),
    "layers.minimum": ("[x, y]", None),
    "layers.multiply": ("[x, y]", None),
    "layers.serialize": ("dense2", None),
    "layers.subtract": ("[x, y]", None),
}

#: layers whose every measured call starts with ``keras.utils.set_random_seed(1337)`` (in the
#: count), and why: unseeded, the same layer object runs other Python code call to call
RESEEDED: dict[str, str] = {
    "layers.AugMix": "it draws its chain of augmentations in Python from its seed generator, so "
    "one layer object runs other ops on every call (counts did not repeat in 25 calls)",
}

#: (backend or ``jax-nnx``, public name) -> why the compiled layer fails there
#: (``test_census_compiled``)
COMPILE_BROKEN: dict[tuple[str, str], str] = {
    **{
        ("jax", f"layers.{name}"): "a lookup or hashing layer cannot be traced by jax.jit "
        "(AttributeError: 'str' object has no attribute '_error_repr')"
        for name in ("Hashing", "HashedCrossing", "IntegerLookup")
    },
    **{
        ("jax", f"layers.{name}"): "its inputs are strings, which jax.jit cannot take"
        for name in ("StringLookup", "TextVectorization")
    },
    **{
        ("jax-nnx", f"layers.{name}"): "with NNX, jax.jit of a recurrent layer fails: flax "
        "TraceContextError, cannot mutate its cell from a different trace level"
        for name in (
            "Bidirectional",
            "ConvLSTM1D",
            "ConvLSTM2D",
            "ConvLSTM3D",
            "GRU",
            "LSTM",
            "RNN",
            "SimpleRNN",
        )
    },
}

#: (backend, public name) -> the compile-health failure the census found there: measured, then
#: skipped with dynamo's own line while a frame is still given up on, failed once none is
COMPILE_KNOWN: dict[tuple[str, str], str] = {
    ("torch", "layers.ActivityRegularization"): "recompiles every call until dynamo gives up: "
    "its guard on the layer's _losses list fails, the activity loss is a new tensor each call",
    **{
        ("torch", f"layers.ZeroPadding{n}D"): "recompiles every call until dynamo gives up: "
        "naming.uniquify's guard on GLOBAL_STATE_TRACKER.object_name_uids['pad'] fails, the "
        "pad op takes a new unique name each call"
        for n in (1, 2, 3)
    },
}

#: public names with no workload, and why
EXCLUDED: dict[str, str] = {
    "layers.FlaxLayer": "wraps a user's Flax module: needs flax, which Keras does not install",
    "layers.JaxLayer": "wraps a user's JAX function; what it runs is the user's code",
    "layers.TorchModuleWrapper": "wraps a user's torch module; what it runs is the user's code",
    "layers.TFSMLayer": "loads a TensorFlow SavedModel from disk: a file the census has not got",
    "layers.Wrapper": "an abstract base class (its call is its subclasses'): measured through "
    "Bidirectional, TimeDistributed and SpectralNormalization",
    "layers.Layer": "the base class: its __call__ is every layer's, measured through all of them",
    "layers.MaxNumBoundingBoxes": "a bounding-box preprocessing step on a dict of boxes; "
    "the census has no bounding-box inputs yet",
}

#: (backend, public name) -> why Keras fails there with an error other than NotImplementedError
BROKEN: dict[tuple[str, str], str] = {
    ("numpy", "layers.StringLookup"): "the numpy backend holds no string tensors",
    ("numpy", "layers.TextVectorization"): "the numpy backend holds no string tensors",
}
