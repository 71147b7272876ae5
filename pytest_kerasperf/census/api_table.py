"""The census's workloads of Keras's smaller public families: activations, losses, metrics,
optimizers, initializers, regularizers and constraints, one entry per public name.

An entry is ``(kind, constructor arguments, call arguments)`` (``inputs.parse``):

- ``call``: a function, measured as ``fn(*call)`` (the constructor part is empty);
- ``object``: a class built with the first, then its call measured, ``obj(*call)``
  (a loss, an initializer, a regularizer, a constraint);
- ``metric``: a metric built with the first, then ``update_state(*call)`` and
  ``result()`` measured as one workload, as ``fit`` drives a metric per step;
- ``optimizer``: an optimizer built with the first, then one ``apply`` of two
  gradients to two variables (``keras.Variable`` of ``x`` and ``v``) measured; the
  first apply, which builds its slots, is not.

Names a constructor or call takes that are not inputs are ``PARTS``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: names for objects an entry's arguments take: name -> what it is
PARTS = {
    "fn_relu": "keras.activations.relu",
    "fn_mse": "keras.losses.mean_squared_error",
    "loss_mse": "keras.losses.MeanSquaredError()",
    "metric_mean": "keras.metrics.Mean()",
    "opt_sgd": "keras.optimizers.SGD(0.01)",
    "init_zeros": "keras.initializers.Zeros()",
    "reg_l2": "keras.regularizers.L2(0.01)",
    "con_nonneg": "keras.constraints.NonNeg()",
    "opt_map": "keras.optimizers.OptimizerMap(keras.optimizers.SGD(0.01))",
    "sched_exp": "keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.9)",
}


def parts() -> dict[str, Callable[[], Any]]:
    import keras

    return {
        "fn_relu": lambda: keras.activations.relu,
        "fn_mse": lambda: keras.losses.mean_squared_error,
        "loss_mse": lambda: keras.losses.MeanSquaredError(),
        "metric_mean": lambda: keras.metrics.Mean(),
        "opt_sgd": lambda: keras.optimizers.SGD(0.01),
        "init_zeros": lambda: keras.initializers.Zeros(),
        "reg_l2": lambda: keras.regularizers.L2(0.01),
        "con_nonneg": lambda: keras.constraints.NonNeg(),
        "opt_map": lambda: keras.optimizers.OptimizerMap(keras.optimizers.SGD(0.01)),
        "sched_exp": lambda: keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.9),
    }


#: keras.optimizers.schedules: schedule -> its constructor's arguments
SCHEDULES = {
    "CosineDecay": "0.1, 10, warmup_target=0.2, warmup_steps=2",
    "CosineDecayRestarts": "0.1, 4",
    "ExponentialDecay": "0.1, 10, 0.9",
    "InverseTimeDecay": "0.1, 10, 0.5",
    "PiecewiseConstantDecay": "[2, 4], [0.1, 0.01, 0.001]",
    "PolynomialDecay": "0.1, 10",
}
#: keras.random: function -> its arguments before the seed
RANDOM = {
    "normal": "(2, 3)",
    "uniform": "(2, 3)",
    "truncated_normal": "(2, 3)",
    "randint": "(2, 3), 0, 5",
    "categorical": "probs, 3",
    "dropout": "x, 0.5",
    "shuffle": "x",
    "gamma": "(2, 3), 2.0",
    "binomial": "(2, 3), 5, 0.5",
    "beta": "(2, 3), 2.0, 3.0",
}

Entry = tuple[str, str, str]
ACT = ("call", "", "x")
LOSS = ("object", "", "onehot, probs")
SPARSE_LOSS = ("object", "", "labels, probs")
LOSS_FN = ("call", "", "onehot, probs")
SPARSE_FN = ("call", "", "labels, probs")
METRIC = ("metric", "", "onehot, probs")
SPARSE_METRIC = ("metric", "", "labels, probs")
OPT = ("optimizer", "learning_rate=0.01", "")
INIT = ("object", "", "(2, 3)")
#: a random initializer, seeded: unseeded, each process draws other values, and numpy's truncated
#: normal redraws until its values fall in range (58 calls in one process, 49 in another)
RANDOM_INIT = ("object", "seed=1337", "(2, 3)")

ENTRIES: dict[str, Entry] = {
    # keras.activations
    **{
        f"activations.{name}": ACT
        for name in [
            "celu",
            "elu",
            "exponential",
            "gelu",
            "hard_shrink",
            "hard_sigmoid",
            "hard_silu",
            "hard_tanh",
            "leaky_relu",
            "linear",
            "log_sigmoid",
            "log_softmax",
            "mish",
            "relu",
            "relu6",
            "selu",
            "sigmoid",
            "silu",
            "soft_shrink",
            "softmax",
            "softplus",
            "softsign",
            "sparse_plus",
            "sparse_sigmoid",
            "sparsemax",
            "squareplus",
            "tanh",
            "tanh_shrink",
        ]
    },
    "activations.glu": ("call", "", "small"),
    "activations.threshold": ("call", "", "x, 0.5, 0.0"),
    "activations.get": ("call", "", "'relu'"),
    "activations.deserialize": ("call", "", "'relu'"),
    "activations.serialize": ("call", "", "fn_relu"),
    # keras.losses
    **{
        f"losses.{name}": LOSS
        for name in [
            "BinaryCrossentropy",
            "BinaryFocalCrossentropy",
            "CategoricalCrossentropy",
            "CategoricalFocalCrossentropy",
            "CategoricalHinge",
            "CosineSimilarity",
            "Dice",
            "Hinge",
            "Huber",
            "KLDivergence",
            "LogCosh",
            "MeanAbsoluteError",
            "MeanAbsolutePercentageError",
            "MeanSquaredError",
            "MeanSquaredLogarithmicError",
            "Poisson",
            "SquaredHinge",
            "Tversky",
        ]
    },
    "losses.SparseCategoricalCrossentropy": SPARSE_LOSS,
    "losses.CategoricalGeneralizedCrossEntropy": SPARSE_LOSS,
    "losses.CTC": ("object", "", "ctarget, seq"),
    "losses.Circle": ("object", "", "labels, x"),
    **{
        f"losses.{name}": LOSS_FN
        for name in [
            "binary_crossentropy",
            "binary_focal_crossentropy",
            "categorical_crossentropy",
            "categorical_focal_crossentropy",
            "categorical_hinge",
            "cosine_similarity",
            "dice",
            "hinge",
            "huber",
            "kl_divergence",
            "log_cosh",
            "mean_absolute_error",
            "mean_absolute_percentage_error",
            "mean_squared_error",
            "mean_squared_logarithmic_error",
            "poisson",
            "squared_hinge",
            "tversky",
        ]
    },
    "losses.sparse_categorical_crossentropy": SPARSE_FN,
    "losses.categorical_generalized_cross_entropy": ("call", "", "labels, probs, 0.5"),
    "losses.ctc": ("call", "", "ctarget, seq"),
    "losses.circle": ("call", "", "labels, x"),
    "losses.get": ("call", "", "'mse'"),
    "losses.deserialize": ("call", "", "'mean_squared_error'"),
    "losses.serialize": ("call", "", "loss_mse"),
    # keras.metrics
    **{
        f"metrics.{name}": METRIC
        for name in [
            "AUC",
            "BinaryAccuracy",
            "BinaryCrossentropy",
            "BinaryIoU",
            "CategoricalAccuracy",
            "CategoricalCrossentropy",
            "CategoricalHinge",
            "CosineSimilarity",
            "F1Score",
            "FBetaScore",
            "FalseNegatives",
            "FalsePositives",
            "Hinge",
            "KLDivergence",
            "LogCoshError",
            "MeanAbsoluteError",
            "MeanAbsolutePercentageError",
            "MeanSquaredError",
            "MeanSquaredLogarithmicError",
            "Poisson",
            "Precision",
            "Recall",
            "RootMeanSquaredError",
            "SquaredHinge",
            "TrueNegatives",
            "TruePositives",
        ]
    },
    "metrics.Accuracy": ("metric", "", "labels, labels"),
    "metrics.ConcordanceCorrelation": ("metric", "", "x, y"),
    "metrics.PearsonCorrelation": ("metric", "", "x, y"),
    "metrics.R2Score": ("metric", "", "x, y"),
    "metrics.IoU": ("metric", "num_classes=3, target_class_ids=[0]", "labels, labels"),
    "metrics.MeanIoU": ("metric", "num_classes=3", "labels, labels"),
    "metrics.OneHotIoU": ("metric", "num_classes=3, target_class_ids=[0]", "onehot, probs"),
    "metrics.OneHotMeanIoU": ("metric", "num_classes=3", "onehot, probs"),
    "metrics.Mean": ("metric", "", "x"),
    "metrics.Sum": ("metric", "", "x"),
    "metrics.MeanMetricWrapper": ("metric", "fn_mse", "onehot, probs"),
    "metrics.PrecisionAtRecall": ("metric", "0.5", "onehot, probs"),
    "metrics.RecallAtPrecision": ("metric", "0.5", "onehot, probs"),
    "metrics.SensitivityAtSpecificity": ("metric", "0.5", "onehot, probs"),
    "metrics.SpecificityAtSensitivity": ("metric", "0.5", "onehot, probs"),
    "metrics.SparseCategoricalAccuracy": SPARSE_METRIC,
    "metrics.SparseCategoricalCrossentropy": SPARSE_METRIC,
    "metrics.SparseTopKCategoricalAccuracy": ("metric", "k=1", "labels, probs"),
    "metrics.TopKCategoricalAccuracy": ("metric", "k=1", "onehot, probs"),
    **{
        f"metrics.{name}": LOSS_FN
        for name in [
            "binary_accuracy",
            "binary_crossentropy",
            "binary_focal_crossentropy",
            "categorical_accuracy",
            "categorical_crossentropy",
            "categorical_focal_crossentropy",
            "categorical_hinge",
            "hinge",
            "huber",
            "kl_divergence",
            "log_cosh",
            "mean_absolute_error",
            "mean_absolute_percentage_error",
            "mean_squared_error",
            "mean_squared_logarithmic_error",
            "poisson",
            "squared_hinge",
        ]
    },
    "metrics.sparse_categorical_accuracy": SPARSE_FN,
    "metrics.sparse_categorical_crossentropy": SPARSE_FN,
    "metrics.sparse_top_k_categorical_accuracy": ("call", "", "labels, probs, 1"),
    "metrics.top_k_categorical_accuracy": ("call", "", "onehot, probs, 1"),
    "metrics.concordance_correlation": ("call", "", "x, y"),
    "metrics.pearson_correlation": ("call", "", "x, y"),
    "metrics.get": ("call", "", "'accuracy'"),
    "metrics.deserialize": ("call", "", "'mean_squared_error'"),
    "metrics.serialize": ("call", "", "metric_mean"),
    # keras.optimizers
    **{
        f"optimizers.{name}": OPT
        for name in [
            "Adadelta",
            "Adafactor",
            "Adagrad",
            "Adam",
            "AdamW",
            "Adamax",
            "Ftrl",
            "Lamb",
            "Lion",
            "Muon",
            "Nadam",
            "RMSprop",
            "SGD",
            "ScheduleFreeAdamW",
        ]
    },
    "optimizers.LossScaleOptimizer": ("optimizer", "opt_sgd", ""),
    "optimizers.MultiOptimizer": ("optimizer", "opt_map", ""),
    "optimizers.OptimizerMap": ("call", "", "opt_sgd"),
    "optimizers.get": ("call", "", "'adam'"),
    "optimizers.deserialize": (
        "call",
        "",
        "{'module': 'keras.optimizers', 'class_name': 'SGD', 'config': {'learning_rate': 0.01}}",
    ),
    "optimizers.serialize": ("call", "", "opt_sgd"),
    # keras.optimizers.schedules: each schedule called at step 5, as an optimizer calls it
    # with its iterations (CosineDecay past its 2 warm-up steps)
    **{f"optimizers.schedules.{name}": ("object", made, "5") for name, made in SCHEDULES.items()},
    "optimizers.schedules.serialize": ("call", "", "sched_exp"),
    "optimizers.schedules.deserialize": (
        "call",
        "",
        "{'class_name': 'ExponentialDecay', 'config': {'initial_learning_rate': 0.1, "
        "'decay_steps': 10, 'decay_rate': 0.9}}",
    ),
    # keras.random: each draw seeded with an integer (a SeedGenerator's draws are measured
    # through every seeded layer); categorical draws from the census's probabilities as logits
    **{f"random.{name}": ("call", "", f"{args}, seed=1337") for name, args in RANDOM.items()},
    # keras.initializers
    **{
        f"initializers.{name}": RANDOM_INIT
        for name in [
            "GlorotNormal",
            "GlorotUniform",
            "HeNormal",
            "HeUniform",
            "LecunNormal",
            "LecunUniform",
            "RandomNormal",
            "RandomUniform",
            "TruncatedNormal",
            "VarianceScaling",
        ]
    },
    "initializers.Ones": INIT,
    "initializers.Zeros": INIT,
    "initializers.Constant": ("object", "0.5", "(2, 3)"),
    "initializers.Identity": ("object", "", "(3, 3)"),
    "initializers.Orthogonal": ("object", "seed=1337", "(3, 3)"),
    "initializers.STFT": ("object", "", "(8, 1, 10)"),
    "initializers.get": ("call", "", "'zeros'"),
    "initializers.deserialize": ("call", "", "'zeros'"),
    "initializers.serialize": ("call", "", "init_zeros"),
    # keras.regularizers
    "regularizers.L1": ("object", "0.01", "x"),
    "regularizers.L1L2": ("object", "0.01, 0.01", "x"),
    "regularizers.L2": ("object", "0.01", "x"),
    "regularizers.OrthogonalRegularizer": ("object", "0.01", "m"),
    "regularizers.get": ("call", "", "'l2'"),
    "regularizers.deserialize": ("call", "", "'l2'"),
    "regularizers.serialize": ("call", "", "reg_l2"),
    # keras.constraints
    "constraints.MaxNorm": ("object", "", "x"),
    "constraints.MinMaxNorm": ("object", "", "x"),
    "constraints.NonNeg": ("object", "", "x"),
    "constraints.UnitNorm": ("object", "", "x"),
    "constraints.get": ("call", "", "'non_neg'"),
    "constraints.deserialize": ("call", "", "'non_neg'"),
    "constraints.serialize": ("call", "", "con_nonneg"),
}

#: public names with no workload, and why
EXCLUDED: dict[str, str] = {
    "losses.Loss": "the base class: its __call__ is every loss's, measured through all of them",
    "metrics.Metric": "the base class: measured through every metric's update_state/result",
    "optimizers.Optimizer": "the base class: measured through every optimizer's apply",
    "optimizers.schedules.LearningRateSchedule": "the base class: measured through every "
    "schedule's call",
    "random.SeedGenerator": "its next() is measured through every seeded random layer (Dropout, "
    "the random image preprocessing layers), which draw from one",
    "initializers.Initializer": "the base class: measured through every initializer",
    "regularizers.Regularizer": "the base class: measured through every regularizer",
    "constraints.Constraint": "the base class: measured through every constraint",
}

#: (backend, public name) -> why Keras fails there with an error other than NotImplementedError
BROKEN: dict[tuple[str, str], str] = {
    ("openvino", "losses.ctc"): "OpenVINO's CTCLoss shape inference refuses labels shorter than "
    "the time steps",
    ("openvino", "losses.CTC"): "OpenVINO's CTCLoss shape inference refuses labels shorter than "
    "the time steps",
    ("jax", "optimizers.LossScaleOptimizer"): "its second eager apply raises "
    "UnexpectedTracerError: a tracer leaks out of its ops.cond (fit runs it inside a jitted step)",
}

#: the families this table holds
FAMILIES = (
    "activations",
    "losses",
    "metrics",
    "optimizers",
    "optimizers.schedules",
    "random",
    "initializers",
    "regularizers",
    "constraints",
)
