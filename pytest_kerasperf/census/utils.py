"""The census's ``keras.utils`` workloads made ready (``utils_table``): inputs and files made,
the call bound.  Each builder returns the measured call; the working directory is the test's
``tmp_path``."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_kerasperf.census import runner
from pytest_kerasperf.census.utils_table import BOX_FORMATS

Builder = Callable[[str], Callable[[], Any]]


def _tensorflow(name: str) -> Any:
    try:
        import tensorflow as tf
    except ImportError as error:
        pytest.skip(f"kerasperf census: {name} makes a tf.data dataset: {error}")
    return tf


def _quiet(call: Callable[[], Any]) -> Callable[[], Any]:
    """``call`` with what it prints sent to a buffer (a terminal redraws a progress bar)."""

    def quiet() -> Any:
        with contextlib.redirect_stdout(io.StringIO()):
            return call()

    return quiet


def _image() -> Any:
    import numpy as np

    return np.linspace(0.0, 255.0, 8 * 8 * 3, dtype="float32").reshape(8, 8, 3)


def _png(path: Path) -> None:
    import keras

    keras.utils.save_img(path, _image())


def _drain(dataset: Any) -> Callable[[], Any]:
    return lambda: [batch for batch in dataset]


def _converted(boxes: Any, way: str, fmt: str) -> Callable[[], Any]:
    """``boxes`` (taken as ``fmt`` boxes when converted from it) converted between ``fmt`` and
    ``xyxy``; ``rel_`` formats relative to an 8x8 image."""
    from keras.utils import bounding_boxes as bb

    source, target = (fmt, "xyxy") if way == "from" else ("xyxy", fmt)
    return lambda: bb.convert_format(boxes, source, target, height=8, width=8)


def _boxes() -> Any:
    import numpy as np
    from keras import ops

    return ops.convert_to_tensor(np.array([[1, 1, 5, 5], [2, 3, 7, 6]], "float32"))


def _directory(name: str, suffix: str, write: Callable[[Path, int], None]) -> Path:
    """``name/`` with two class directories of two files each."""
    for label in ("a", "b"):
        (Path(name) / label).mkdir(parents=True)
        for index in range(2):
            write(Path(name) / label / f"{index}{suffix}", index)
    return Path(name)


def _wav(path: Path, index: int) -> None:
    import wave

    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16)
        out.writeframes(bytes(range(index, index + 32)))


def _datasets(name: str) -> Callable[[], Any]:
    import keras
    import numpy as np

    utils = keras.utils
    if name == "utils.audio_dataset_from_directory":
        _tensorflow(name)
        root = _directory("audio", ".wav", _wav)
        data = utils.audio_dataset_from_directory(root, batch_size=2, shuffle=False)
        return lambda: [batch for batch in data]
    if name == "utils.image_dataset_from_directory":
        _tensorflow(name)
        root = _directory("images", ".png", lambda path, _i: _png(path))
        data = utils.image_dataset_from_directory(
            root, image_size=(4, 4), batch_size=2, shuffle=False
        )
        return _drain(data)
    if name == "utils.text_dataset_from_directory":
        _tensorflow(name)

        def text(path: Path, index: int) -> None:
            path.write_text(f"text {index}\n")

        root = _directory("texts", ".txt", text)
        data = utils.text_dataset_from_directory(root, batch_size=2, shuffle=False)
        return _drain(data)
    if name == "utils.timeseries_dataset_from_array":
        _tensorflow(name)
        series = np.arange(40, dtype="float32").reshape(20, 2)
        data = utils.timeseries_dataset_from_array(
            series, None, sequence_length=4, batch_size=4, shuffle=False
        )
        return _drain(data)
    if name == "utils.split_dataset":
        _tensorflow(name)
        x = np.arange(24, dtype="float32").reshape(8, 3)
        y = np.arange(8, dtype="int32")
        return lambda: utils.split_dataset((x, y), left_size=0.5, shuffle=False)
    raise KeyError(name)


def _files(name: str) -> Callable[[], Any]:
    import hashlib
    import tarfile

    import keras
    from PIL import Image

    utils = keras.utils
    if name == "utils.array_to_img":
        image = _image()
        return lambda: utils.array_to_img(image)
    if name == "utils.img_to_array":
        picture = Image.new("RGB", (8, 8), (10, 20, 30))
        return lambda: utils.img_to_array(picture)
    if name == "utils.save_img":
        image = _image()
        return lambda: utils.save_img("saved.png", image)
    if name == "utils.load_img":
        _png(Path("load.png"))
        return lambda: utils.load_img("load.png", target_size=(4, 4))
    if name == "utils.get_file":
        Path("payload").mkdir()
        Path("payload/data.txt").write_text("kerasperf\n")
        with tarfile.open("payload.tar.gz", "w:gz") as archive:
            archive.add("payload/data.txt")
        digest = hashlib.sha256(Path("payload.tar.gz").read_bytes()).hexdigest()
        return _quiet(
            lambda: utils.get_file(
                "payload.tar.gz",
                origin="file:payload.tar.gz",
                file_hash=digest,
                cache_dir="cache",
                extract=True,
                force_download=True,
            )
        )
    if name in ("utils.model_to_dot", "utils.plot_model"):
        from pytest_kerasperf.census import model_api

        model = model_api.build("sequential")
        if name == "utils.model_to_dot":
            return lambda: utils.model_to_dot(model)
        return lambda: utils.plot_model(model, to_file="model.png")
    raise KeyError(name)


def _registry(name: str) -> Callable[[], Any]:
    import keras

    utils = keras.utils

    class Custom(keras.layers.Layer):  # type: ignore[misc]
        pass

    if name == "utils.CustomObjectScope":

        def scoped() -> Any:
            with utils.CustomObjectScope({"Custom": Custom}):
                return utils.get_custom_objects()

        return scoped
    if name == "utils.get_custom_objects":
        return lambda: utils.get_custom_objects()
    if name == "utils.register_keras_serializable":
        from keras.src.saving import object_registration

        def register() -> Any:
            class Fresh(keras.layers.Layer):  # type: ignore[misc]
                pass

            registered = utils.register_keras_serializable("kerasperf_census")(Fresh)
            object_registration.GLOBAL_CUSTOM_OBJECTS.pop("kerasperf_census>Fresh")
            object_registration.GLOBAL_CUSTOM_NAMES.pop(Fresh)
            return registered

        return register
    registered = keras.layers.Dense
    if name == "utils.get_registered_name":
        return lambda: utils.get_registered_name(registered)
    if name == "utils.get_registered_object":
        return lambda: utils.get_registered_object("Dense", module_objects=vars(keras.layers))
    raise KeyError(name)


def _boxes_call(name: str) -> Callable[[], Any]:
    import numpy as np
    from keras import ops
    from keras.utils import bounding_boxes as bb

    def one(*values: float) -> list[Any]:
        return [ops.convert_to_tensor(np.array([value], "float32")) for value in values]

    boxes = _boxes()
    other = ops.convert_to_tensor(np.array([[0, 0, 4, 4], [2, 2, 8, 8]], "float32"))
    calls: dict[str, Callable[[], Any]] = {
        # a batch of one image's boxes, one transform per image (its code reads their shapes)
        "utils.bounding_boxes.affine_transform": lambda: bb.affine_transform(
            ops.expand_dims(boxes, 0), *one(10.0, 0.1, 0.2, 1.1, 0.1, 0.0), 8, 8
        ),
        "utils.bounding_boxes.clip_to_image_size": lambda: bb.clip_to_image_size(
            {"boxes": boxes, "labels": ops.convert_to_tensor(np.array([0, 1], "float32"))},
            height=8,
            width=8,
        ),
        "utils.bounding_boxes.compute_ciou": lambda: bb.compute_ciou(boxes, other, "xyxy"),
        "utils.bounding_boxes.compute_iou": lambda: bb.compute_iou(boxes, other, "xyxy"),
        "utils.bounding_boxes.convert_format": lambda: bb.convert_format(
            boxes, "xyxy", "center_xywh"
        ),
        **{
            f"utils.bounding_boxes.convert_format[{way} {fmt}]": _converted(boxes, way, fmt)
            for fmt in BOX_FORMATS
            for way in ("from", "to")
        },
        "utils.bounding_boxes.crop": lambda: bb.crop(boxes, 1, 1, 6, 6),
        "utils.bounding_boxes.pad": lambda: bb.pad(boxes, 1, 2),
        "utils.bounding_boxes.encode_box_to_deltas": lambda: bb.encode_box_to_deltas(
            other, boxes, "xyxy", "xyxy"
        ),
        "utils.bounding_boxes.decode_deltas_to_boxes": lambda: bb.decode_deltas_to_boxes(
            other, ops.convert_to_tensor(np.full((2, 4), 0.1, "float32")), "xyxy", "xyxy"
        ),
    }
    return calls[name]


def _small(name: str) -> Callable[[], Any]:
    import keras
    import numpy as np

    utils = keras.utils
    if name == "utils.Config":

        def config() -> Any:
            made = utils.Config(units=4, name="dense")
            made.activation = "relu"
            return made.to_json()

        return config
    if name == "utils.Progbar":

        def progress() -> Any:
            bar = utils.Progbar(4)
            for step in range(1, 5):
                bar.update(step, values=[("loss", 0.5 / step)])
            return bar

        return _quiet(progress)
    x = np.linspace(0.1, 0.9, 6, dtype="float32").reshape(2, 3)
    calls: dict[str, Callable[[], Any]] = {
        "utils.clear_session": lambda: utils.clear_session(free_memory=False),
        "utils.disable_interactive_logging": lambda: (
            utils.disable_interactive_logging(),
            utils.enable_interactive_logging(),
        ),
        "utils.enable_interactive_logging": utils.enable_interactive_logging,
        "utils.is_interactive_logging_enabled": utils.is_interactive_logging_enabled,
        "utils.normalize": lambda: utils.normalize(x),
        "utils.to_categorical": lambda: utils.to_categorical(np.arange(8) % 3, 3),
        "utils.pad_sequences": lambda: utils.pad_sequences([[1], [2, 3], [4, 5, 6]], maxlen=4),
        "utils.pack_x_y_sample_weight": lambda: utils.pack_x_y_sample_weight(x, x, x[:, 0]),
        "utils.unpack_x_y_sample_weight": lambda: utils.unpack_x_y_sample_weight((x, x, x[:, 0])),
        "utils.standardize_dtype": lambda: (
            utils.standardize_dtype("float32"),
            utils.standardize_dtype(np.float32),
        ),
        "utils.set_random_seed": lambda: utils.set_random_seed(1337),
    }
    if name in calls:
        return calls[name]
    if name in ("utils.get_source_inputs", "utils.is_keras_tensor"):
        inputs = keras.Input((3,))
        output = keras.layers.Dense(2)(inputs)
        if name == "utils.get_source_inputs":
            return lambda: utils.get_source_inputs(output)
        return lambda: utils.is_keras_tensor(output)
    if name.startswith("utils.legacy."):
        layer = keras.layers.Dense(2)
        config = utils.legacy.serialize_keras_object(layer)
        if name == "utils.legacy.serialize_keras_object":
            return lambda: utils.legacy.serialize_keras_object(layer)
        return lambda: utils.legacy.deserialize_keras_object(
            config, module_objects=vars(keras.layers)
        )
    raise KeyError(name)


def ready(name: str, backend: str) -> runner.Ready:
    """``name``'s workload built in the working directory and called twice (a skip where Keras
    cannot run it, or where it needs a package that is not installed)."""
    import importlib.util

    from pytest_kerasperf.census.utils_table import BROKEN, NEEDS

    needed = NEEDS.get(name)
    if needed is not None and importlib.util.find_spec(needed) is None:
        pytest.skip(f"kerasperf census: {name} needs {needed}, which is not installed")
    runner.public(name.partition("[")[0])
    for build in (_small, _registry, _boxes_call, _files, _datasets):
        try:
            call = build(name)
        except KeyError:
            continue
        try:
            return runner.trial(name, backend, call, (), {}, BROKEN)
        except ImportError as error:  # pydot without graphviz's dot program: Keras says so
            if needed is None:
                raise
            pytest.skip(f"kerasperf census: {name}: {runner.describe(error)}")
    raise ValueError(f"no census workload for {name}")
