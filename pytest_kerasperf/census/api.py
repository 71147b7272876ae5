"""A census workload of ``api_table`` made ready: built, its first call made, measured next."""

from __future__ import annotations

from typing import Any

from pytest_kerasperf.census import api_table, runner


def _bound(name: str, spec: str, backend: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return runner.arguments(name, spec, backend, api_table.parts())


def ready(name: str, backend: str) -> runner.Ready:
    """``name``'s workload, built and called once (a skip where Keras cannot run it)."""
    public = runner.public(name)
    kind, made, call = api_table.ENTRIES[name]
    broken = api_table.BROKEN
    if kind == "call":
        args, kwargs = _bound(name, call, backend)
        return runner.trial(name, backend, public, args, kwargs, broken)
    args, kwargs = _bound(name, made, backend)
    # building an object whose calls Keras fails (its BROKEN entry) runs: only its calls say
    built = runner.trial(name, backend, public, args, kwargs, broken, measured=False)
    obj: Any = built.call(*built.args, **built.kwargs)
    if kind == "object":
        call_args, call_kwargs = _bound(name, call, backend)
        return runner.trial(name, backend, obj, call_args, call_kwargs, broken)
    if kind == "metric":
        call_args, call_kwargs = _bound(name, call, backend)

        def step() -> Any:
            obj.update_state(*call_args, **call_kwargs)
            return obj.result()

        return runner.trial(name, backend, step, (), {}, broken)
    if kind == "optimizer":
        import keras

        variables, grads = _bound(name, "[x, v], [y, v]", backend)[0]
        variables = [keras.Variable(value) for value in variables]
        return runner.trial(name, backend, obj.apply, (grads, variables), {}, broken)
    raise ValueError(f"{name}: no census kind {kind!r}")
