"""The census's variants: the settings users run that change what Keras executes.

The family tables measure each public layer once, as its defaults run it.  A
user's model often runs other code in the same layer: a padding mask from a
``mask_zero`` embedding, a mixed-precision policy, ``training=True`` with
dropout inside the layer, a second input shape.  Each table here names the
layers whose Python path such a setting changes; ``test_census_variants``
measures each entry as the setting makes Keras run it.

- ``MASKED``: public name -> (constructor arguments, how the masked sequence
  enters the call).  The workload is a Functional model,
  ``Input((5,), int32) -> Embedding(6, 4, mask_zero=True) -> layer``, called
  on ``ids`` (token ids padded with zeros), so Keras computes the padding mask
  and hands it to the layer as a model does (``compute_mask``, ``mask=``).
  ``"one"``: ``layer(e)``; ``"query_value"``: ``layer(e, e)``;
  ``"list"``: ``layer([e, e])``.
- ``MIXED``: public name -> (constructor arguments, call arguments): built and
  measured under each of ``POLICIES`` (``keras.config.set_dtype_policy``,
  restored after the test); ``MIXED_MODEL`` adds the Model API calls under
  each policy, where ``compile`` wraps the optimizer in a
  ``LossScaleOptimizer`` for ``mixed_float16``.
- ``TRAINING``: public name -> (constructor arguments with dropout, call
  arguments with ``training=True``): the training path of layers whose
  default census entry runs inference.
- ``BOXES``: the image preprocessing layers, each built as ``layers_table.LAYERS`` builds it
  with ``bounding_box_format="xyxy"``, measured on the dict an object-detection or
  segmentation pipeline passes (``variants.boxes``): the census's image with two bounding
  boxes and their labels, a segmentation mask and class labels (their ``transform_*``
  methods, run by no other workload).  ``MASKS``: those of them that refuse bounding boxes,
  measured on the same dict without the boxes.
- ``ADAPT``: public name -> (constructor arguments, the data ``adapt`` reads,
  ``variants.ADAPT_DATA``): the preprocessing layers that learn their state from data, their
  ``adapt`` measured; and ``keras.utils.FeatureSpace`` adapted to a ``tf.data`` dataset of two
  features, then called on them (where tensorflow is installed).
- ``DYNAMIC``: public name -> (constructor arguments, first call, second
  call): each measured call of the workload calls the built layer with both
  shapes; the single-input ones are also compiled (``torch.compile`` /
  ``jax.jit`` / ``tf.function``), where a second shape recompiles or retraces
  once and must not again after warm-up.

``channels_first`` is not a table: every census image input is laid out as the
Keras config's ``image_data_format`` says, so a run with Keras CI's torch
config (``KERAS_HOME=.github/workflows/config/torch``: channels_first) measures
every image layer and op channels_first, and its environment digest says so.
"""

from __future__ import annotations

#: public name -> (constructor arguments, how the masked embedding output enters the call)
MASKED: dict[str, tuple[str, str]] = {
    "layers.AdditiveAttention": ("", "list"),
    "layers.Attention": ("", "list"),
    "layers.Bidirectional": ("lstm3", "one"),
    "layers.GRU": ("3", "one"),
    "layers.GlobalAveragePooling1D": ("", "one"),
    "layers.GroupQueryAttention": (
        "head_dim=2, num_query_heads=2, num_key_value_heads=1",
        "query_value",
    ),
    "layers.LSTM": ("3", "one"),
    "layers.MultiHeadAttention": ("2, 2", "query_value"),
    "layers.SimpleRNN": ("3", "one"),
}

#: the mixed-precision policies users set
POLICIES = ("mixed_float16", "mixed_bfloat16")

#: public name -> (constructor arguments, call arguments), measured under each policy
MIXED: dict[str, tuple[str, str]] = {
    "layers.BatchNormalization": ("", "x"),
    "layers.Conv2D": ("2, 3", "img"),
    "layers.Dense": ("4", "x"),
    "layers.Embedding": ("6, 4", "i"),
    "layers.LSTM": ("3", "seq"),
    "layers.LayerNormalization": ("", "x"),
    "layers.MultiHeadAttention": ("2, 2", "seq, seq"),
    "layers.Softmax": ("", "x"),
}

#: Model API calls (``model_api.call``) measured under each policy, on the Sequential model
MIXED_MODEL = ("fit", "evaluate", "predict", "train_on_batch")

#: public name -> (constructor arguments, call arguments with training=True)
TRAINING: dict[str, tuple[str, str]] = {
    "layers.Attention": ("dropout=0.5, seed=1337", "[seq, seq], training=True"),
    "layers.BatchNormalization": ("", "x, training=True"),
    "layers.GRU": ("3, dropout=0.5, recurrent_dropout=0.5, seed=1337", "seq, training=True"),
    "layers.LSTM": ("3, dropout=0.5, recurrent_dropout=0.5, seed=1337", "seq, training=True"),
    "layers.MultiHeadAttention": ("2, 2, dropout=0.5, seed=1337", "seq, seq, training=True"),
    "layers.SimpleRNN": (
        "3, dropout=0.5, recurrent_dropout=0.5, seed=1337",
        "seq, training=True",
    ),
}

#: public names of the image preprocessing layers (``BaseImagePreprocessingLayer``), measured on
#: images with bounding boxes, a segmentation mask and labels; constructor arguments as
#: ``layers_table.LAYERS`` has them
BOXES = (
    "layers.AugMix",
    "layers.AutoContrast",
    "layers.CenterCrop",
    "layers.ContrastLimitedAdaptiveHistogramEqualization",
    "layers.CutMix",
    "layers.Equalization",
    "layers.MixUp",
    "layers.RandAugment",
    "layers.RandomBrightness",
    "layers.RandomColorDegeneration",
    "layers.RandomColorJitter",
    "layers.RandomContrast",
    "layers.RandomCrop",
    "layers.RandomElasticTransform",
    "layers.RandomErasing",
    "layers.RandomFlip",
    "layers.RandomGaussianBlur",
    "layers.RandomGrayscale",
    "layers.RandomHue",
    "layers.RandomInvert",
    "layers.RandomPerspective",
    "layers.RandomPosterization",
    "layers.RandomRotation",
    "layers.RandomSaturation",
    "layers.RandomSharpness",
    "layers.RandomShear",
    "layers.RandomTranslation",
    "layers.RandomZoom",
    "layers.Resizing",
    "layers.Solarization",
)

#: the image preprocessing layers of ``BOXES`` that refuse bounding boxes (Keras 3.15.1 raises
#: NotImplementedError from their ``transform_bounding_boxes``), so that their entry there skips
#: before it reaches the rest: measured again on the same dict without the boxes, the images
#: with a segmentation mask and class labels (their ``transform_segmentation_masks`` and
#: ``transform_labels``).  Not one: ``ContrastLimitedAdaptiveHistogramEqualization``, which
#: refuses segmentation masks too.
MASKS = (
    "layers.CutMix",
    "layers.RandomElasticTransform",
)

#: a wrapper around another inner layer than its ``layers_table.LAYERS`` entry's: workload ->
#: (public name, constructor arguments, call arguments).  ``Bidirectional`` of a ``GRU``: Keras
#: fuses the two directions of a GRU into one kernel call where its backend can (3 of the last
#: 400 commits changed that path; the census's ``Bidirectional`` wraps an ``LSTM``)
WRAPPED: dict[str, tuple[str, str, str]] = {
    "layers.Bidirectional[GRU]": ("layers.Bidirectional", "gru3", "seq"),
}

#: public name -> (constructor arguments, the data ``adapt`` reads: a key of
#: ``variants.ADAPT_DATA``)
ADAPT: dict[str, tuple[str, str]] = {
    "layers.Discretization": ("num_bins=3", "floats"),
    "layers.IntegerLookup": ("", "ints"),
    "layers.Normalization": ("", "floats"),
    "layers.StringLookup": ("", "strings"),
    "layers.TextVectorization": ("max_tokens=10, output_sequence_length=4", "text"),
}

#: FeatureSpace's workloads: its ``adapt`` and its call on the features it adapted to
FEATURE_SPACE = ("utils.FeatureSpace.adapt", "utils.FeatureSpace")

#: public name -> (constructor arguments, first call's arguments, second call's arguments)
DYNAMIC: dict[str, tuple[str, str, str]] = {
    "layers.Conv2D": ("2, 3", "img", "imgbig"),
    "layers.Dense": ("4", "x", "x5"),
    "layers.Embedding": ("6, 4", "i", "i5"),
    "layers.GlobalAveragePooling1D": ("", "seq", "seq3"),
    "layers.LSTM": ("3", "seq", "seq3"),
    "layers.MultiHeadAttention": ("2, 2", "seq, seq", "seq3, seq3"),
}

#: (backend or ``jax-nnx``, workload label) -> why Keras fails there with an error other than
#: NotImplementedError (the label: ``"layers.LSTM (masked)"``, ``"Model.fit (mixed_float16)"``)
BROKEN: dict[tuple[str, str], str] = {
    (backend, "layers.RandomGrayscale (boxes)"): "its call reads the input's .shape before it "
    "splits a dict input: AttributeError, 'dict' object has no attribute 'shape'"
    for backend in ("jax", "torch", "tensorflow", "numpy", "openvino")
}

#: (backend or ``jax-nnx``, workload label) -> why the compiled workload fails there
COMPILE_BROKEN: dict[tuple[str, str], str] = {
    ("jax-nnx", "layers.LSTM (dynamic)"): "with NNX, jax.jit of a recurrent layer fails: flax "
    "TraceContextError, cannot mutate its cell from a different trace level (as "
    "layers_table.COMPILE_BROKEN)",
}
