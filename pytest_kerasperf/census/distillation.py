"""The census's ``keras.distillation`` workloads: a teacher and a student classifier, a
``Distiller`` trained one step as users train it, and each distillation loss called on
outputs as the distiller calls it.

The teacher: ``Input((4,))`` -> ``Dense(16, relu)`` -> ``Dense(8, relu)`` named
``teacher_features`` -> ``Dense(3)``; the student: ``Input((4,))`` -> ``Dense(8, relu)`` named
``student_features`` -> ``Dense(3)``; seeded.  The data: 8 samples of ``x`` float32 (8, 4)
and class ids ``y``.  A ``Distiller`` is compiled with SGD and sparse categorical
cross-entropy (Keras's default ``jit_compile``) and measured on ``train_on_batch`` after a
first step (which builds, traces and compiles).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: workload -> (the public name it measures, what it runs): ``train:<loss>`` trains a
#: Distiller with that loss one step, ``loss:<loss>`` calls the loss's ``compute_loss``
DISTILLATION: dict[str, tuple[str, str]] = {
    "distillation.Distiller": ("distillation.Distiller", "train:logits"),
    "distillation.Distiller[features]": ("distillation.Distiller", "train:features"),
    "distillation.Distiller[both]": ("distillation.Distiller", "train:both"),
    "distillation.LogitsDistillation": ("distillation.LogitsDistillation", "loss:logits"),
    "distillation.FeatureDistillation": ("distillation.FeatureDistillation", "loss:features"),
}

#: public names with no workload of their own, and why
EXCLUDED: dict[str, str] = {
    "distillation.DistillationLoss": "the base class of the distillation losses: its methods "
    "run through LogitsDistillation and FeatureDistillation",
}

#: (backend, workload) -> why Keras fails there with an error other than NotImplementedError
BROKEN: dict[tuple[str, str], str] = {}

SAMPLES = 8


def _classifier(name: str, widths: tuple[int, ...]) -> Any:
    import keras

    inputs = keras.Input((4,))
    hidden = inputs
    for width in widths[:-1]:
        hidden = keras.layers.Dense(width, activation="relu")(hidden)
    hidden = keras.layers.Dense(widths[-1], activation="relu", name=f"{name}_features")(hidden)
    return keras.Model(inputs, keras.layers.Dense(3, name=f"{name}_logits")(hidden), name=name)


def _loss(kind: str) -> Any:
    from keras import distillation

    if kind == "logits":
        return distillation.LogitsDistillation(temperature=2.0)
    if kind == "features":
        return distillation.FeatureDistillation(
            loss="mse", teacher_layer_name="teacher_features", student_layer_name="student_features"
        )
    if kind == "both":
        return [_loss("logits"), _loss("features")]
    raise ValueError(f"no census distillation loss {kind!r}")


def data() -> tuple[Any, Any]:
    import numpy as np

    x = np.linspace(0.1, 0.9, SAMPLES * 4, dtype="float32").reshape(SAMPLES, 4)
    return x, (np.arange(SAMPLES) % 3).astype("int32")


def workload(name: str) -> Callable[[], Any]:
    """The workload's call, arguments bound: its objects built (seeded) and not measured."""
    import keras
    from keras import distillation, ops

    _, what = DISTILLATION[name]
    action, kind = what.split(":")
    keras.utils.set_random_seed(1337)
    teacher, student = _classifier("teacher", (16, 8)), _classifier("student", (8,))
    x, y = data()
    if action == "loss":
        loss = _loss(kind)
        if kind == "logits":
            teacher_out, student_out = ops.convert_to_tensor(teacher(x)), student(x)
        else:
            teacher_out = teacher.get_layer("teacher_features").output
            student_out = student.get_layer("student_features").output
            teacher_out = keras.Model(teacher.inputs, teacher_out)(x)
            student_out = keras.Model(student.inputs, student_out)(x)
        return lambda: loss.compute_loss(teacher_out, student_out)
    distiller = distillation.Distiller(
        teacher=teacher, student=student, distillation_losses=_loss(kind), student_loss_weight=0.5
    )
    distiller.compile(optimizer=keras.optimizers.SGD(0.01), loss="sparse_categorical_crossentropy")
    return lambda: distiller.train_on_batch(x, y)
