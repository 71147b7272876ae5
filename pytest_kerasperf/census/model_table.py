"""The census's Model API and callback workloads.

``MODEL``: workload id -> (the model it runs on, the call): one call of the
Model API as a user makes it, on a small compiled classifier (``model_api``):
``fit`` for one epoch of four steps (on numpy arrays, with validation data, on
a ``keras.utils.PyDataset``, on a ``tf.data.Dataset`` where tensorflow is
installed, with ``sample_weight``, with ``class_weight``), ``evaluate``,
``predict``, the three ``*_on_batch`` calls, ``save`` + ``keras.saving.load_model``
of a ``.keras`` file and ``from_config(get_config())``, on a Sequential, a
Functional and a subclassed model; on the Sequential, ``save`` + ``load_model`` of an
unzipped directory, of a legacy ``.h5`` file and of a model with assets (an adapted
``IntegerLookup``), ``predict`` on a ``tf.data.Dataset``, ``save_weights`` +
``load_weights`` whole and sharded, ``keras.saving.KerasFileEditor`` on its ``.keras`` file
(what it prints to a buffer), and ``fit`` on a Python generator, a ``torch`` ``DataLoader``
(where torch is installed); and ``Model.export`` in each format Keras exports to here
(``EXPORTS``: a TensorFlow SavedModel, OpenVINO IR, a LiteRT flatbuffer, ONNX), to the same
path each call.

``CALLBACKS``: public name of ``keras.callbacks`` -> its constructor's arguments;
the workload is the same one-epoch ``fit`` with the callback in ``callbacks=``
(``PARTS``: names for paths in the test's own temporary directory and small functions).
"""

from __future__ import annotations

from typing import Any

KINDS = ("sequential", "functional", "subclassed")
CORE = ("fit", "evaluate", "predict", "train_on_batch", "test_on_batch", "predict_on_batch")

MODEL: dict[str, tuple[str, str]] = {
    **{f"Model.{call}[{kind}]": (kind, call) for call in CORE for kind in KINDS},
    "Model.fit[validation_data]": ("sequential", "fit_validation"),
    "Model.fit[PyDataset]": ("sequential", "fit_pydataset"),
    # two reader threads: Keras's thread pool and its queue (docs/census.md: exact by experiment)
    "Model.fit[PyDataset workers=2]": ("sequential", "fit_pydataset_workers"),
    "Model.fit[tf.data]": ("sequential", "fit_tf_data"),
    "Model.fit[sample_weight]": ("sequential", "fit_sample_weight"),
    "Model.fit[class_weight]": ("sequential", "fit_class_weight"),
    **{f"Model.save+load_model[{kind}]": (kind, "save_load") for kind in KINDS},
    "Model.from_config[sequential]": ("sequential", "config"),
    "Model.from_config[functional]": ("functional", "config"),
    # saving and loading as users do besides a .keras file, and the data users fit on besides
    # arrays (issue 37: Keras's saving and data adapters changed in 18 and 12 of the last 400
    # commits, functions no workload ran).  Not one: fit on a tf.data dataset with
    # class_weight, whose map function tensorflow traces in every fit under a GroupLock that
    # waits on tf.data's threads (jax: 18,059 and 18,057 calls, Condition._is_owned 21 and 19)
    "Model.save+load_model[unzipped]": ("sequential", "save_load_dir"),
    "Model.save+load_model[h5]": ("sequential", "save_load_h5"),
    # a model whose layer saves assets (an adapted IntegerLookup's vocabulary): the .keras
    # file's assets directory, written and extracted again
    "Model.save+load_model[assets]": ("sequential", "save_load_assets"),
    # evaluate and predict read a tf.data dataset through the backend's own iterator (numpy
    # and openvino: get_numpy_iterator, which fit never reaches there)
    "Model.predict[tf.data]": ("sequential", "predict_tf_data"),
    "Model.save_weights+load_weights": ("sequential", "weights"),
    "Model.save_weights+load_weights[sharded]": ("sequential", "weights_sharded"),
    "saving.KerasFileEditor": ("sequential", "file_editor"),
    "Model.fit[generator]": ("sequential", "fit_generator"),
    "Model.fit[DataLoader]": ("sequential", "fit_dataloader"),
}

#: export format -> the file or directory it writes, relative to the working directory
EXPORTS: dict[str, str] = {
    "tf_saved_model": "sequential-saved-model",
    "openvino": "sequential.xml",
    "litert": "sequential.tflite",
    "onnx": "sequential.onnx",
}
MODEL.update({f"Model.export[{fmt}]": ("sequential", f"export:{fmt}") for fmt in EXPORTS})

#: The settings users run that change the code Keras executes (issue 37; the evidence, per
#: backend, by ``benchmarks/model_settings.py``, is in docs/census.md): name -> (the call,
#: ``compile``'s settings, the call's settings over the census's defaults).  Not one:
#: ``initial_epoch`` (the default fit's profile on every backend) and ``jit_compile=True``
#: (Keras's default's profile on jax, tensorflow and numpy; on torch it is ``torch.compile`` of
#: the step, measured in the compiled census: ``test_census_compiled.test_model_compiled``).
SETTINGS: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    **{
        f"Model.{call}[verbose={verbose}]": (call, {}, {"verbose": verbose})
        for call, verbose in (("fit", 1), ("fit", 2), ("evaluate", 1), ("predict", 1))
    },
    **{
        f"Model.{call}[{setting}={value}]": (call, {setting: value}, {})
        for call in ("fit", "evaluate", "predict")
        for setting, value in (
            ("steps_per_execution", 2),
            ("jit_compile", False),
            ("run_eagerly", True),
        )
    },
    "Model.fit[validation_split=0.25]": ("fit", {}, {"validation_split": 0.25}),
    "Model.fit[shuffle=True]": ("fit", {}, {"shuffle": True}),
    "Model.fit[shuffle=batch]": ("fit", {}, {"shuffle": "batch"}),
    "Model.fit[callbacks=3]": ("fit", {}, {"callbacks": "three"}),
    # a ReduceLROnPlateau that reduces the rate: two epochs, the second no improvement (the
    # census's callback entry never reduces: a fit's first epoch always improves on nothing)
    "Model.fit[ReduceLROnPlateau reducing]": (
        "fit",
        {},
        {"callbacks": "reduce_lr", "epochs": 2},
    ),
    # TensorBoard as users log with it: validation data, weight histograms and images every
    # epoch (the census's callback entry logs scalars only, and no validation batch)
    "Model.fit[TensorBoard histograms]": (
        "fit",
        {},
        {"callbacks": "tensorboard", "validation_data": "xy"},
    ),
}

#: the environment variables a console reads to size and colour what it prints
CONSOLE = (
    "COLORTERM",
    "COLUMNS",
    "FORCE_COLOR",
    "JUPYTER_COLUMNS",
    "JUPYTER_LINES",
    "LINES",
    "NO_COLOR",
    "TERM",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
)
#: workload -> the environment variables it runs without: ``KerasFileEditor`` prints through a
#: ``rich`` console, which sizes and colours its output by them (numpy: 3,757 calls; 3,772
#: with ``COLUMNS=200``, 3,803 with ``FORCE_COLOR=1``, 3,759 with ``NO_COLOR=1``)
UNSET: dict[str, tuple[str, ...]] = {
    "saving.KerasFileEditor": CONSOLE,
    # an export asks shutil.get_terminal_size, which reads COLUMNS and LINES first (torch's
    # openvino export: 76,280 calls alone, 76,300 under pytest-xdist, whose workers set both)
    **{f"Model.export[{fmt}]": CONSOLE for fmt in EXPORTS},
}

#: constructor-argument names that are not inputs: name -> what it is
PARTS = {
    "tmp_backup": "a directory path relative to the test's tmp_path, its working directory",
    "tmp_csv": "a .csv file path relative to the test's tmp_path",
    "tmp_checkpoint": "a .keras file path relative to the test's tmp_path",
    "tmp_logs": "a directory path relative to the test's tmp_path, its working directory",
    "callback": "keras.callbacks.Callback()",
    "noop2": "lambda epoch, logs: None",
    "same_rate": "lambda epoch, lr: lr",
}

#: callbacks whose model trains with an optimizer keeping moving averages (``use_ema=True``)
EMA = {"callbacks.SwapEMAWeights"}

#: public name -> the callback's constructor arguments (``inputs.parse``)
CALLBACKS: dict[str, str] = {
    "callbacks.BackupAndRestore": "tmp_backup",
    "callbacks.CSVLogger": "tmp_csv",
    "callbacks.Callback": "",
    "callbacks.CallbackList": "[callback]",
    "callbacks.EarlyStopping": "monitor='loss', patience=1",
    "callbacks.History": "",
    "callbacks.LambdaCallback": "on_epoch_end=noop2",
    "callbacks.LearningRateScheduler": "same_rate",
    "callbacks.ModelCheckpoint": "tmp_checkpoint, monitor='loss'",
    "callbacks.ProgbarLogger": "",
    "callbacks.ReduceLROnPlateau": "monitor='loss', patience=1",
    "callbacks.SwapEMAWeights": "",
    "callbacks.TensorBoard": "tmp_logs",
    "callbacks.TerminateOnNaN": "",
}

#: public names with no workload, and why
EXCLUDED: dict[str, str] = {
    "callbacks.RemoteMonitor": "posts every epoch's logs to an HTTP server (a network call)",
    "callbacks.OrbaxCheckpoint": "needs orbax-checkpoint, which Keras does not install",
}

#: callbacks that need a package Keras does not install: skipped, with it named, where missing
NEEDS = {
    "callbacks.TensorBoard": "tensorboard",
    "Model.fit[TensorBoard histograms]": "tensorboard",
}

#: settings whose files go to the test's tmp_path, its working directory (``runner.work_in``)
WRITES = {"Model.fit[TensorBoard histograms]"}

#: (backend, workload) -> why Keras fails there with an error other than NotImplementedError
BROKEN: dict[tuple[str, str], str] = {
    **{
        ("torch", f"Model.{call}[steps_per_execution=2]"): "Keras refuses it: "
        "`steps_per_execution` must be 1 with the PyTorch backend"
        for call in ("fit", "evaluate", "predict")
    },
    ("jax", "callbacks.SwapEMAWeights"): "a second fit fails: jax refuses to donate one buffer "
    "twice, then an EMA variable has no initializer ('NoneType' object is not callable)",
    # Model.export where Keras 3.15.1 cannot export (its own errors, besides NotImplementedError)
    **{
        (backend, "Model.export[tf_saved_model]"): "Keras's export archive of this backend has "
        "no track_and_add_endpoint (AttributeError)"
        for backend in ("numpy", "openvino")
    },
    ("torch", "Model.export[tf_saved_model]"): "torch.export refuses the dynamic shapes Keras "
    "passes (UserError: mismatch between the structure of inputs and dynamic_shapes)",
    ("jax", "Model.export[openvino]"): "OpenVINO has no conversion rule for jax's XlaCallModule "
    "(OpConversionFailure)",
    **{
        (backend, "Model.export[litert]"): "Keras: LiteRT export requires TensorFlow or PyTorch "
        "backend (ValueError)"
        for backend in ("numpy", "jax", "openvino")
    },
    ("torch", "Model.export[litert]"): "needs litert-torch, which the perf environment does not "
    "install (ImportError)",
    ("jax", "Model.export[onnx]"): "needs jax2onnx, which the perf environment does not install: "
    "it pins orbax-checkpoint<0.11.37 against flax's 0.12.8 (ImportError)",
}

#: (backend, workload) -> why its counts are not exact, measured: skipped, with the reason
NOT_EXACT: dict[tuple[str, str], str] = {
    ("jax", "Model.export[tf_saved_model]"): "jax's symbolic shapes (export/shape_poly.py) are "
    "built through caches that earlier exports fill: six exports in one process made 309,334 "
    "to 309,574 calls (docs/census.md#export)",
    ("tensorflow", "Model.export[onnx]"): "tf2onnx lifts the function's graph through "
    "tensorflow's lift_to_graph, which walks a set of operations hashed by identity: 25 "
    "profiled exports in one process never repeated 3 times (its all() over them 41 to 50 "
    "calls, dict.get 19,523 to 19,534; docs/census.md#export)",
    ("jax", "Model.fit[PyDataset workers=2]"): "the main thread's calls follow how its reader "
    "threads and jax's dispatch interleave: 3,804, 3,815 and 3,864 calls in fresh processes "
    "(torch and tensorflow repeat exactly; docs/census.md#saving-and-data)",
}
