"""Which Model API settings change the code Keras runs (issue 37): the evidence for the census.

For each candidate setting of ``fit``, ``evaluate`` and ``predict`` (``verbose``, ``steps_per_
execution``, ``jit_compile``, ``run_eagerly``, ``validation_split``, ``shuffle``, ``initial_epoch``,
several callbacks), the census's small classifier (``census.model_api``) runs the call twice,
then one call is profiled as the gate profiles it (``measure.calls.count_calls``) and compared
with the same call at Keras's defaults: the calls, and the Keras functions it executes that
the default call does not (and the reverse).  A setting whose profile is the default's runs
no other code: it is not a workload.

    PYTHONHASHSEED=0 KERAS_BACKEND=numpy python benchmarks/model_settings.py

prints one line per setting: ``name  calls  (default calls)  +new functions  -gone functions``;
``same`` where the whole profile (every function and edge) is the default's.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Callable
from typing import Any

from pytest_kerasperf.measure import canonical
from pytest_kerasperf.measure.calls import count_calls
from pytest_kerasperf.parts.calls import is_detailed, profile_digest

#: Candidates the census left out: their profile was the default's on every backend the
#: census measures them on (``jit_compile=True`` differs on torch, where it is not measured).
LEFT_OUT: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "Model.fit[initial_epoch=1]": ("fit", {}, {"initial_epoch": 1, "epochs": 2}),
    **{
        f"Model.{call}[jit_compile=True]": (call, {"jit_compile": True}, {})
        for call in ("fit", "evaluate", "predict")
    },
}


def candidates() -> dict[str, tuple[str, dict[str, Any], dict[str, Any]]]:
    """name -> (the call, compile's settings, the call's settings): the defaults first, then
    the census's settings (``model_table.SETTINGS``) and those it left out."""
    from pytest_kerasperf.census.model_table import SETTINGS

    defaults: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
        f"Model.{call}": (call, {}, {}) for call in ("fit", "evaluate", "predict")
    }
    return {**defaults, **SETTINGS, **LEFT_OUT}


def workload(what: str, compiled: dict[str, Any], given: dict[str, Any]) -> Callable[[], Any]:
    from pytest_kerasperf.census import model_api

    model = model_api.build("sequential", **compiled)
    x, y = model_api.data()
    return model_api.settings_call(what, model, x, y, given)


def main() -> int:
    import keras

    kept = canonical.prepare(keras.backend.backend())
    results: dict[str, tuple[int, set[str], str]] = {}
    for name, (what, compiled, given) in candidates().items():
        if kept is not None:
            canonical.restore(kept)  # each candidate from the state a fresh process has
        try:
            call = workload(what, compiled, given)
            with contextlib.redirect_stdout(io.StringIO()):
                call()
                call()
            counts = count_calls(call)
        except Exception as error:  # a setting the backend refuses is evidence too
            print(f"{name:34} refused: {type(error).__name__}: {str(error).splitlines()[0][:120]}")
            continue
        functions = {f for f in counts.calls_by_function if is_detailed(f)}
        digest = profile_digest(counts.calls_by_function, counts.call_edges)
        results[name] = (counts.calls, functions, digest)
        default = f"Model.{what}"
        base = results.get(default)
        if base is None or name == default:
            print(f"{name:34} {counts.calls:>7,}")
            continue
        if digest == base[2]:
            print(f"{name:34} {counts.calls:>7,}  same as {default} (every function and edge)")
            continue
        new, gone = sorted(functions - base[1]), sorted(base[1] - functions)
        print(
            f"{name:34} {counts.calls:>7,}  ({default} {base[0]:,})  +{len(new)} functions, "
            f"-{len(gone)}: {', '.join(f.split(':', 1)[1] for f in new[:4])}"
        )
    print(f"backend {keras.backend.backend()}, keras {keras.__version__}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
