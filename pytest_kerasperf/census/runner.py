"""Getting a census workload ready: its callable found, its inputs made, one trial call.

Whether Keras can run a symbol on a backend is decided by running it: the
trial calls (two, not measured; the measuring handle makes its own first call;
a workload may fail only when called again)
skips the test with Keras's own error text when Keras raises
``NotImplementedError``, or when the backend cannot hold an input (its
``convert_to_tensor`` refuses the dtype).  Any other error fails the test,
unless the family's ``BROKEN`` table names it for this backend with a reason;
such an entry is checked on every run and fails the test once the call runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from pytest_kerasperf import untrusted
from pytest_kerasperf.census import inputs

T = TypeVar("T")

#: How much of an error's text a skip reason keeps.
REASON_CHARS = 300


@dataclass(frozen=True)
class Ready:
    """A workload ready to measure: ``call(*args, **kwargs)``."""

    call: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: Mapping[str, object]


def work_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unset: Iterable[str] = ()) -> None:
    """Make ``tmp_path`` the test's working directory and unset ``unset``: a workload names its
    files relative to it (Keras parses a path component by component, and the depth of
    ``tmp_path`` is pytest's: ``-n`` adds ``popen-gwN``, ``--basetemp`` chooses it), and the
    environment variables its count follows are the code's to set, not the shell's."""
    monkeypatch.chdir(tmp_path)
    for variable in unset:
        monkeypatch.delenv(variable, raising=False)


def describe(error: BaseException) -> str:
    text = untrusted.printable(str(error)) or type(error).__name__
    if len(text) > REASON_CHARS:
        text = text[: REASON_CHARS - 1] + "…"
    return f"{type(error).__name__}: {text}"


def public(name: str) -> Any:
    """The object a census name points to in this Keras; a skip, naming it, where it is not."""
    from pytest_kerasperf.census import symbols

    try:
        return symbols.resolve(name)
    except AttributeError as error:
        pytest.skip(f"kerasperf census: {error}")


def settings(backend: str) -> list[str]:
    """The names a table's entry may use for this run, most specific first: ``jax-nnx`` (jax
    with ``KERAS_NNX_ENABLED``), then the backend."""
    import keras

    nnx = backend == "jax" and bool(getattr(keras.config, "is_nnx_enabled", lambda: False)())
    return [f"{backend}-nnx", backend] if nnx else [backend]


def entry(table: Mapping[tuple[str, str], str], name: str, backend: str) -> str | None:
    """A (backend, workload) table's reason for ``name`` on this run, most specific setting
    first (``settings``); None where it has none."""
    return next((table[k] for k in ((s, name) for s in settings(backend)) if k in table), None)


def data_format() -> str:
    import keras

    return str(keras.config.image_data_format())


def arguments(
    name: str,
    spec: str,
    backend: str,
    extra: Mapping[str, Callable[[], Any]] | None = None,
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The spec's arguments as backend tensors (``extra``: a table's own names); a skip where
    the backend cannot hold one."""
    from keras import ops

    try:
        args, kwargs = inputs.bind(spec, ops.convert_to_tensor, data_format(), extra)
    except inputs.SpecError:
        raise
    except Exception as error:
        pytest.skip(
            f"kerasperf census: the {backend} backend cannot hold {name}'s inputs: "
            f"{describe(error)}"
        )
    return tuple(args), kwargs


def trial(
    name: str,
    backend: str,
    call: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: Mapping[str, object],
    broken: Mapping[tuple[str, str], str],
    calls: int = 2,
    *,
    measured: bool = True,
) -> Ready:
    """``call`` ``calls`` times: a skip (with Keras's reason) or a failure where it raises;
    else Ready.  A ``broken`` workload that runs fails the test (its entry is stale) where the
    call is the ``measured`` one, not a step that builds it."""
    known = entry(broken, name, backend)
    try:
        for _ in range(calls):
            call(*args, **kwargs)
    except NotImplementedError as error:
        pytest.skip(f"kerasperf census: Keras cannot run {name} on {backend}: {describe(error)}")
    except Exception as error:
        if known is not None:
            pytest.skip(
                f"kerasperf census: Keras fails {name} on {backend} ({known}): {describe(error)}"
            )
        raise
    if known is not None and measured:
        pytest.fail(
            f"kerasperf census: {name} now runs on {backend}: remove its BROKEN entry "
            f"({known!r}) so that it is measured",
            pytrace=False,
        )
    return Ready(call, args, dict(kwargs))


def attempt(
    name: str,
    backend: str,
    broken: Mapping[tuple[str, str], str],
    make: Callable[[], T],
) -> T:
    """``make()``, a step that builds a workload (a compile), as ``trial`` calls one: a skip
    with Keras's reason where it raises ``NotImplementedError`` or ``broken`` names it; the
    entry's staleness is ``trial``'s to judge, on the call it builds."""
    try:
        return make()
    except NotImplementedError as error:
        pytest.skip(f"kerasperf census: Keras cannot run {name} on {backend}: {describe(error)}")
    except Exception as error:
        known = entry(broken, name, backend)
        if known is None:
            raise
        pytest.skip(
            f"kerasperf census: Keras fails {name} on {backend} ({known}): {describe(error)}"
        )


def judge_known(
    known_table: Mapping[tuple[str, str], str], name: str, backend: str, gave_up: tuple[str, ...]
) -> None:
    """A compiled workload with a ``COMPILE_KNOWN`` entry: skipped with dynamo's line while a
    frame is given up on (``gave_up``, the record's), failed once none is (the entry is stale)."""
    known = entry(known_table, name, backend)
    if known is not None and gave_up:
        pytest.skip(f"kerasperf census: a known compile-health failure ({known}): {gave_up[0]}")
    if known is not None:
        pytest.fail(
            f"kerasperf census: {name} now compiles without a frame dynamo gives up on, on "
            f"{backend}: remove its COMPILE_KNOWN entry ({known!r})",
            pytrace=False,
        )
