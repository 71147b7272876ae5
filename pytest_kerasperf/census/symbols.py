"""What the installed Keras makes public, family by family, and where a census name points.

A census name is the public path below ``keras``: ``ops.add``,
``ops.image.resize``, ``layers.Dense``.  A family's namespaces are listed in
the order their names are preferred: a function exported by several
(``keras.ops.add`` is ``keras.ops.numpy.add``) is one symbol, named by the
first.
"""

from __future__ import annotations

import inspect
from typing import Any

#: family -> its namespaces below ``keras``, preferred first
FAMILIES: dict[str, tuple[str, ...]] = {
    "ops": ("ops", "ops.image", "ops.nn", "ops.linalg", "ops.numpy", "ops.core"),
    "layers": ("layers",),
    "losses": ("losses",),
    "metrics": ("metrics",),
    "optimizers": ("optimizers",),
    "optimizers.schedules": ("optimizers.schedules",),
    "random": ("random",),
    "activations": ("activations",),
    "initializers": ("initializers",),
    "regularizers": ("regularizers",),
    "constraints": ("constraints",),
    "callbacks": ("callbacks",),
    "utils": ("utils", "utils.bounding_boxes", "utils.legacy"),
    "applications": ("applications",),
    "distillation": ("distillation",),
    "distribution": ("distribution",),
    "wrappers": ("wrappers",),
}


def _namespace(path: str) -> Any | None:
    import keras

    module: Any = keras
    for part in path.split("."):
        module = getattr(module, part, None)
        if module is None:
            return None
    return module


def public(family: str) -> dict[str, Any]:
    """census name -> object, for every public callable of ``family`` in the installed Keras."""
    found: dict[str, Any] = {}
    seen: set[int] = set()
    for path in FAMILIES[family]:
        module = _namespace(path)
        if module is None:
            continue
        for name in sorted(dir(module)):
            if name.startswith("_"):
                continue
            obj = getattr(module, name)
            if inspect.ismodule(obj) or not callable(obj) or id(obj) in seen:
                continue
            seen.add(id(obj))
            found[f"{path}.{name}"] = obj
    return found


def resolve(name: str) -> Any:
    """The object a census name points to; AttributeError naming what is missing."""
    path, _, attribute = name.rpartition(".")
    module = _namespace(path)
    if module is None or not hasattr(module, attribute):
        raise AttributeError(f"keras.{name}: not in this Keras")
    return getattr(module, attribute)
