"""The census's Model API workloads made ready: a small classifier, its data, one call.

The model: ``Input((3,))`` -> ``Dense(4, relu)`` -> ``Dense(3, softmax)``, as a
Sequential, a Functional or a subclassed model, compiled with SGD,
categorical cross-entropy and accuracy (Keras's default ``jit_compile="auto"``),
seeded.  The data: 8 samples of ``x`` float32 (8, 3) and one-hot labels ``y`` (8, 3),
batch size 2, so an epoch is four steps.  The first call of each workload
(which builds, traces and compiles) is not measured.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_kerasperf.census import inputs, runner
from pytest_kerasperf.census.model_table import BROKEN, EMA, NEEDS, PARTS, SETTINGS

BATCH = 2
SAMPLES = 8


def data() -> tuple[Any, Any]:
    import numpy as np

    x = np.linspace(0.1, 0.9, SAMPLES * 3, dtype="float32").reshape(SAMPLES, 3)
    y = np.eye(3, dtype="float32")[np.arange(SAMPLES) % 3]
    return x, y


def build(kind: str, *, ema: bool = False, **compiled: Any) -> Any:
    """The census classifier of ``kind``, compiled; ``compiled``: more of ``compile``'s
    settings (``steps_per_execution``, ``jit_compile``, ``run_eagerly``)."""
    import keras

    keras.utils.set_random_seed(1337)
    if kind == "sequential":
        model = keras.Sequential(
            [
                keras.Input((3,)),
                keras.layers.Dense(4, activation="relu"),
                keras.layers.Dense(3, activation="softmax"),
            ]
        )
    elif kind == "functional":
        x = keras.Input((3,))
        hidden = keras.layers.Dense(4, activation="relu")(x)
        model = keras.Model(x, keras.layers.Dense(3, activation="softmax")(hidden))
    elif kind == "subclassed":
        model = _classifier()
    else:
        raise ValueError(f"no census model {kind!r}")
    model.compile(
        optimizer=keras.optimizers.SGD(0.01, use_ema=ema),
        loss="categorical_crossentropy",
        metrics=["accuracy"],
        **compiled,
    )
    return model


def _tf_dataset(tensors: Any) -> Any:
    """``tensors`` as a ``tf.data`` dataset of batches of ``BATCH``; a skip where tensorflow
    is not installed."""
    try:
        import tensorflow as tf
    except ImportError as error:
        pytest.skip(f"kerasperf census: tf.data needs tensorflow: {error}")
    return tf.data.Dataset.from_tensor_slices(tensors).batch(BATCH)


def _skip_unless_installed(name: str) -> None:
    """A skip, naming it, where the package ``name`` needs (``NEEDS``) is not installed."""
    import importlib.util

    needed = NEEDS.get(name)
    if needed is not None and importlib.util.find_spec(needed) is None:
        pytest.skip(f"kerasperf census: {name} needs {needed}, which is not installed")


def _with_assets() -> Any:
    """A Sequential whose first layer saves assets: an ``IntegerLookup`` adapted on six ids
    (its vocabulary is written to the ``.keras`` file's assets), then an ``Embedding``."""
    import keras
    import numpy as np

    keras.utils.set_random_seed(1337)
    lookup = keras.layers.IntegerLookup()
    lookup.adapt(np.array([3, 5, 7, 5, 3, 3], dtype="int64"))
    model = keras.Sequential(
        [keras.Input((2,), dtype="int64"), lookup, keras.layers.Embedding(8, 2)]
    )
    model(np.array([[3, 5]], dtype="int64"))
    return model


def _classifier() -> Any:
    import keras

    class Classifier(keras.Model):  # type: ignore[misc]
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.hidden = keras.layers.Dense(4, activation="relu")
            self.out = keras.layers.Dense(3, activation="softmax")

        def call(self, x: Any) -> Any:
            return self.out(self.hidden(x))

    return Classifier()


def _pydataset(x: Any, y: Any, workers: int = 1) -> Any:
    """The census's batches as a ``keras.utils.PyDataset``; ``workers`` > 1: read by that many
    threads (``use_multiprocessing=False``)."""
    import keras

    class Batches(keras.utils.PyDataset):  # type: ignore[misc]
        def __len__(self) -> int:
            return SAMPLES // BATCH

        def __getitem__(self, index: int) -> tuple[Any, Any]:
            part = slice(index * BATCH, (index + 1) * BATCH)
            return x[part], y[part]

    return Batches(workers=workers, use_multiprocessing=False)


def call(kind: str, what: str, model: Any, tmp_path: Path) -> Callable[[], Any]:
    """The workload ``what`` on ``model``, arguments bound."""
    x, y = data()
    fit = {"batch_size": BATCH, "epochs": 1, "verbose": 0, "shuffle": False}
    if what == "fit":
        return lambda: model.fit(x, y, **fit)
    if what == "fit_validation":
        return lambda: model.fit(x, y, validation_data=(x, y), **fit)
    if what in ("fit_pydataset", "fit_pydataset_workers"):
        batches = _pydataset(x, y, workers=2 if what.endswith("workers") else 1)
        return lambda: model.fit(batches, epochs=1, verbose=0, shuffle=False)
    if what == "fit_tf_data":
        dataset = _tf_dataset((x, y))
        return lambda: model.fit(dataset, epochs=1, verbose=0)
    if what == "predict_tf_data":
        inputs_only = _tf_dataset(x)
        return lambda: model.predict(inputs_only, verbose=0)
    if what == "fit_sample_weight":
        weights = (x[:, 0] + 0.5).astype("float32")
        return lambda: model.fit(x, y, sample_weight=weights, **fit)
    if what == "fit_class_weight":
        return lambda: model.fit(x, y, class_weight={0: 1.0, 1: 2.0, 2: 0.5}, **fit)
    if what == "evaluate":
        return lambda: model.evaluate(x, y, batch_size=BATCH, verbose=0)
    if what == "predict":
        return lambda: model.predict(x, batch_size=BATCH, verbose=0)
    if what == "train_on_batch":
        return lambda: model.train_on_batch(x[:BATCH], y[:BATCH])
    if what == "test_on_batch":
        return lambda: model.test_on_batch(x[:BATCH], y[:BATCH])
    if what == "predict_on_batch":
        return lambda: model.predict_on_batch(x[:BATCH])
    if what == "save_load":
        import keras

        path = tmp_path / f"{kind}.keras"
        custom = {"Classifier": type(model)} if kind == "subclassed" else None

        def save_load() -> Any:
            model.save(path)
            return keras.saving.load_model(path, custom_objects=custom)

        return save_load
    if what == "config":
        return lambda: type(model).from_config(model.get_config())
    return _saved(kind, what, model) or _fed(what, model)


def _saved(kind: str, what: str, model: Any) -> Callable[[], Any] | None:
    """The saving workloads besides a ``.keras`` file's (``model_table.MODEL``), their files
    named relative to the working directory (the test's ``tmp_path``): Keras parses a path
    component by component, and the depth of ``tmp_path`` is pytest's, not the code's."""
    import contextlib
    import io

    import keras

    if what in ("save_load_dir", "save_load_h5"):
        path, options = {
            "save_load_dir": (Path(f"{kind}-dir"), {"zipped": False}),
            "save_load_h5": (Path(f"{kind}.h5"), {}),
        }[what]

        def save_load() -> Any:
            with contextlib.redirect_stderr(io.StringIO()):  # the legacy format's warning
                model.save(path, **options)
            return keras.saving.load_model(path)

        return save_load
    if what == "save_load_assets":
        lookup = _with_assets()
        path = Path("lookup.keras")

        def save_load_assets() -> Any:
            lookup.save(path)
            return keras.saving.load_model(path)

        return save_load_assets
    if what in ("weights", "weights_sharded"):
        sharded = what == "weights_sharded"
        # 1e-7 GB: the classifier's 31 float32 weights (124 bytes) in two shards
        path = Path(f"{kind}.weights.{'json' if sharded else 'h5'}")
        shard = {"max_shard_size": 1e-7} if sharded else {}

        def weights() -> Any:
            model.save_weights(path, **shard)
            model.load_weights(path)

        return weights
    if what.startswith("export:"):
        from pytest_kerasperf.census.model_table import EXPORTS

        fmt = what.partition(":")[2]
        target = EXPORTS[fmt]
        if fmt == "onnx":
            # ONNX export wants a model that has been called (Keras: "The model provided has
            # never called."); the other formats export the compiled model as it is
            model(data()[0][:BATCH])

        def export() -> Any:
            # verbose=False, and what it prints all the same (converters' notes) to buffers
            with (
                contextlib.redirect_stdout(io.StringIO()),
                contextlib.redirect_stderr(io.StringIO()),
            ):
                model.export(target, format=fmt, verbose=False)

        return export
    if what == "file_editor":
        path = Path(f"{kind}-edited.keras")
        model.save(path)

        def edit() -> Any:
            with contextlib.redirect_stdout(io.StringIO()):
                return keras.saving.KerasFileEditor(str(path))

        return edit
    return None


def _fed(what: str, model: Any) -> Callable[[], Any]:
    """The ``fit`` workloads on data besides arrays and the ``PyDataset`` (``MODEL``)."""
    x, y = data()
    if what == "fit_generator":

        def batches() -> Any:
            for start in range(0, SAMPLES, BATCH):
                yield x[start : start + BATCH], y[start : start + BATCH]

        steps = SAMPLES // BATCH
        return lambda: model.fit(batches(), steps_per_epoch=steps, epochs=1, verbose=0)
    if what == "fit_dataloader":
        try:
            import torch
        except ImportError as error:
            pytest.skip(f"kerasperf census: a DataLoader needs torch: {error}")
        tensors = torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
        loader = torch.utils.data.DataLoader(tensors, batch_size=BATCH, shuffle=False)
        return lambda: model.fit(loader, epochs=1, verbose=0)
    raise ValueError(f"no census Model API call {what!r}")


def settings_call(
    what: str, model: Any, x: Any, y: Any, given: dict[str, Any]
) -> Callable[[], Any]:
    """``fit``, ``evaluate`` or ``predict`` on ``x`` (and ``y``) with the census's batch size
    and the settings ``given`` over its defaults (``verbose=0``, one epoch, no shuffling).
    ``callbacks="three"``: a ``History``, a ``TerminateOnNaN`` and an ``EarlyStopping`` at once.
    Whatever the call prints (the progress bar of ``verbose`` 1 and 2) goes to a buffer, so
    that its code does not depend on where pytest sends the output (a terminal's progress bar
    redraws itself; a buffer is not a terminal)."""
    import contextlib
    import io

    import keras

    settings: dict[str, Any] = {"batch_size": BATCH, "verbose": 0}
    if what == "fit":
        settings.update(epochs=1, shuffle=False)
    settings.update(given)
    if settings.get("callbacks") == "reduce_lr":
        # the first epoch of a fit improves on nothing (fit resets the best), and no later
        # epoch improves by 1e9, so each fit's second epoch reduces the rate (by 0.9: float32
        # holds it for some 900 fits, far more than a measurement runs)
        settings["callbacks"] = [
            keras.callbacks.ReduceLROnPlateau(
                monitor="loss", patience=0, min_delta=1e9, factor=0.9, verbose=0
            )
        ]
    if settings.get("callbacks") == "tensorboard":
        settings["callbacks"] = [
            keras.callbacks.TensorBoard(log_dir="logs", histogram_freq=1, write_images=True)
        ]
    if settings.get("validation_data") == "xy":
        settings["validation_data"] = (x, y)
    if settings.get("callbacks") == "three":
        settings["callbacks"] = [
            keras.callbacks.History(),
            keras.callbacks.TerminateOnNaN(),
            keras.callbacks.EarlyStopping(monitor="loss", patience=1),
        ]
    method = getattr(model, what)
    arguments = (x,) if what == "predict" else (x, y)

    def run() -> Any:
        with contextlib.redirect_stdout(io.StringIO()):
            return method(*arguments, **settings)

    return run


def setting(name: str, backend: str) -> runner.Ready:
    """The Model API call ``name`` of ``SETTINGS`` on the census's Sequential, built and
    compiled with its settings, its first two calls made; a skip with Keras's reason where
    Keras refuses the setting on ``backend``."""
    what, compiled, given = SETTINGS[name]
    _skip_unless_installed(name)
    try:
        model = build("sequential", **compiled)
    except NotImplementedError as error:
        pytest.skip(
            f"kerasperf census: Keras cannot run {name} on {backend}: {runner.describe(error)}"
        )
    except Exception as error:
        known = BROKEN.get((backend, name))
        if known is None:
            raise
        pytest.skip(
            f"kerasperf census: Keras fails {name} on {backend} ({known}): {runner.describe(error)}"
        )
    x, y = data()
    return runner.trial(name, backend, settings_call(what, model, x, y, given), (), {}, BROKEN)


def parts(tmp_path: Path) -> dict[str, Callable[[], Any]]:
    import keras

    made = {
        "tmp_backup": lambda: str(tmp_path / "backup"),
        "tmp_csv": lambda: str(tmp_path / "log.csv"),
        "tmp_checkpoint": lambda: str(tmp_path / "checkpoint.keras"),
        "tmp_logs": lambda: str(tmp_path / "logs"),
        "callback": lambda: keras.callbacks.Callback(),
        "noop2": lambda: lambda epoch, logs: None,
        "same_rate": lambda: lambda epoch, lr: lr,
    }
    assert set(made) == set(PARTS)
    return made


def callback_fit(name: str, public: Any, spec: str, backend: str, tmp_path: Path) -> runner.Ready:
    """A one-epoch ``fit`` with the callback ``public(*spec)``, its first two fits made."""
    from keras import ops

    _skip_unless_installed(name)
    args, kwargs = inputs.bind(spec, ops.convert_to_tensor, runner.data_format(), parts(tmp_path))
    callback = public(*args, **kwargs)
    model = build("sequential", ema=name in EMA)
    x, y = data()

    def fit() -> Any:
        return model.fit(
            x, y, batch_size=BATCH, epochs=1, verbose=0, shuffle=False, callbacks=[callback]
        )

    return runner.trial(name, backend, fit, (), {}, BROKEN)
