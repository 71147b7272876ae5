"""The census's ``keras.wrappers`` workloads: the scikit-learn wrappers as scikit-learn calls
them, ``fit`` and ``predict`` (``transform`` for the transformer).

The data: 16 samples of ``x`` float32 (16, 4), ``y`` class ids 0..2 for the classifier and
a float32 target for the regressor and the transformer.  The model: the function Keras's own
wrapper tests use (``keras/src/wrappers/sklearn_test.py``'s ``dynamic_model``):
``Input((4,))`` -> ``Dense(10, relu)`` -> ``Dense(outputs)``, compiled with ``rmsprop``.  The
wrapper builds it from ``(X, y)`` on each ``fit``, so ``fit`` measures what a scikit-learn
pipeline's ``fit`` runs: validating the data, encoding the target, building, compiling and
training the model one epoch (``verbose=0``); ``predict`` and ``transform`` run on a fitted
wrapper, their progress bar printed to a buffer (the wrappers call ``Model.predict`` with its
default ``verbose``).  Where Keras cannot train (numpy, openvino) both skip with Keras's reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: workload -> (the public wrapper, the method measured): ``fit[warm_start]`` is ``fit`` of a
#: fitted wrapper made with ``warm_start=True`` (which continues training its model where
#: Keras honours it: keras-team/keras#23098, after 3.15.1)
WRAPPERS: dict[str, tuple[str, str]] = {
    "wrappers.SKLearnClassifier": ("wrappers.SKLearnClassifier", "fit"),
    "wrappers.SKLearnClassifier[warm_start]": ("wrappers.SKLearnClassifier", "fit[warm_start]"),
    "wrappers.SKLearnClassifier[predict]": ("wrappers.SKLearnClassifier", "predict"),
    "wrappers.SKLearnClassifier[decision_function]": (
        "wrappers.SKLearnClassifier",
        "decision_function",
    ),
    "wrappers.SKLearnRegressor": ("wrappers.SKLearnRegressor", "fit"),
    "wrappers.SKLearnRegressor[predict]": ("wrappers.SKLearnRegressor", "predict"),
    "wrappers.SKLearnTransformer": ("wrappers.SKLearnTransformer", "fit"),
    "wrappers.SKLearnTransformer[transform]": ("wrappers.SKLearnTransformer", "transform"),
}

#: what a workload may call
METHODS = frozenset({"fit", "fit[warm_start]", "predict", "decision_function", "transform"})

#: public names with no workload of their own, and why
EXCLUDED: dict[str, str] = {}

#: (backend, workload) -> why Keras fails there with an error other than NotImplementedError
BROKEN: dict[tuple[str, str], str] = {}

SAMPLES = 16
#: each wrapper's model arguments: the loss and the output layer's activation
MODEL_KWARGS: dict[str, dict[str, str]] = {
    "wrappers.SKLearnClassifier": {"loss": "categorical_crossentropy", "activation": "softmax"},
    "wrappers.SKLearnRegressor": {"loss": "mse", "activation": "linear"},
    "wrappers.SKLearnTransformer": {"loss": "mse", "activation": "linear"},
}


def dynamic_model(X: Any, y: Any, loss: str, activation: str) -> Any:
    """Keras's wrapper tests' model: one hidden ``Dense(10, relu)``, one output per target."""
    import keras

    inputs = keras.Input((X.shape[1],))
    hidden = keras.layers.Dense(10, activation="relu")(inputs)
    outputs = keras.layers.Dense(y.shape[1] if y.ndim > 1 else 1, activation=activation)(hidden)
    model = keras.Model(inputs, outputs)
    model.compile(loss=loss, optimizer="rmsprop")
    return model


def data(public: str) -> tuple[Any, Any]:
    import numpy as np

    x = np.linspace(0.1, 0.9, SAMPLES * 4, dtype="float32").reshape(SAMPLES, 4)
    if public == "wrappers.SKLearnClassifier":
        return x, np.arange(SAMPLES) % 3
    return x, x.sum(axis=1)


def wrapper(name: str) -> tuple[Any, Any, Any]:
    """The workload's wrapper (seeded, not fitted) and its data."""
    import keras

    from pytest_kerasperf.census import runner

    public, method = WRAPPERS[name]
    keras.utils.set_random_seed(1337)
    warm = {"warm_start": True} if method == "fit[warm_start]" else {}
    estimator = runner.public(public)(
        model=dynamic_model,
        model_kwargs=MODEL_KWARGS[public],
        fit_kwargs={"epochs": 1, "verbose": 0},
        **warm,
    )
    x, y = data(public)
    return estimator, x, y


def workload(estimator: Any, method: str, x: Any, y: Any) -> Callable[[], Any]:
    """The measured call on ``estimator`` (fitted already, where ``method`` is not ``fit``);
    what it prints goes to a buffer."""
    import contextlib
    import io

    import pytest

    if method.startswith("fit"):
        return lambda: estimator.fit(x, y)
    bound = getattr(estimator, method, None)
    if bound is None:
        kind = type(estimator).__name__
        pytest.skip(f"kerasperf census: keras.wrappers.{kind}.{method}: not in this Keras")

    def run() -> Any:
        with contextlib.redirect_stdout(io.StringIO()):
            return bound(x)

    return run
