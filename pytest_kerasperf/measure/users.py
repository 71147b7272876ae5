"""How every measurement runs Keras: as users run it, not as the test session configures it.

Shared by the measuring handle (its count, graph and timing passes) and the
sampling profiler (``measure.profile``), so that both see the same code paths.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
import warnings
from collections.abc import Iterator

from pytest_kerasperf import backends


@contextlib.contextmanager
def as_users_run_it() -> Iterator[None]:
    """Measure Keras as users run it, not as the test session configures it.

    - Keras traceback filtering on: ``keras.src.testing.TestCase`` turns it off
      in ``setUp``, which skips code paths users go through.
    - Warnings ignored: pytest records every warning (three Python calls each)
      and ``-W``/``filterwarnings`` change what a warning costs; in a user's
      process a warning after its first showing costs one C call, as an
      ignored one does.
    - jax's persistent compilation cache never written (``no_cache_writes``);
    - the program's own command line, not pytest's (``own_command_line``).
    """
    keras = backends.import_keras()
    was_on = keras.config.is_traceback_filtering_enabled()
    if not was_on:
        keras.config.enable_traceback_filtering()
    try:
        with warnings.catch_warnings(), no_cache_writes(), own_command_line():
            warnings.simplefilter("ignore")
            yield
    finally:
        if not was_on:
            keras.config.disable_traceback_filtering()


#: jax's option: a compile shorter than this many seconds is not written to the persistent cache
CACHE_WRITE_OPTION = "jax_persistent_cache_min_compile_time_secs"


@contextlib.contextmanager
def no_cache_writes() -> Iterator[None]:
    """No compile in a measured call writes jax's persistent compilation cache.

    After each XLA compile jax writes the cache only when the compile took at
    least ``jax_persistent_cache_min_compile_time_secs`` (1 s): six Python calls
    more, on a loaded machine only.  A workload that compiles in every call (an
    eager recurrent layer's ``lax.scan`` on jax) would count by the machine's
    load, and a write would change what the next process reads.  The threshold
    is set to infinity for the measurement and put back after it.  Keras's numpy
    backend imports jax too, so this holds wherever jax is imported.
    """
    if "jax" not in sys.modules:
        yield
        return
    import jax

    before = getattr(jax.config, CACHE_WRITE_OPTION)
    jax.config.update(CACHE_WRITE_OPTION, float("inf"))  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        jax.config.update(CACHE_WRITE_OPTION, before)  # type: ignore[no-untyped-call]


#: command-line arguments kept while measuring: XLA's own flags (jax hashes them into a
#: compile's cache key)
KEPT_ARGUMENTS = ("--xla",)


@contextlib.contextmanager
def own_command_line() -> Iterator[None]:
    """``sys.argv`` is the program alone (and any ``--xla`` flag) while measuring.

    jax computes a cache key for every XLA compile, and to hash XLA's flags it looks at each
    element of ``sys.argv`` (``cache_key.py:_hash_xla_flags``: a ``startswith``, an ``any`` and
    its generator per argument).  A workload that compiles in its measured call (an eager
    recurrent layer's ``lax.scan``) would count 3 calls more per compile for each pytest
    option: ``--kerasperf-update-baseline`` alone recorded 9 calls fewer per compile than the
    gate's ``--kerasperf --kerasperf-strict --kerasperf-ratchet --kerasperf-json=...``
    measured.  So the count does not depend on how pytest was invoked.
    """
    before = sys.argv
    sys.argv = before[:1] + [arg for arg in before[1:] if arg.startswith(KEPT_ARGUMENTS)]
    try:
        yield
    finally:
        sys.argv = before


#: what dynamo's first compiled call in a process patches on ``torch.nn.Module``
#: (``torch/_dynamo/mutation_guard.py:install_generation_tagging_init``)
_DYNAMO_PATCHED = ("__init__", "__setstate__")
PATCH_PREFIX = "install_generation_tagging_init.<locals>.patched_"
PATCH_FLAG = "___needs_generation_tag_patch"  # False once patched
_ABSENT = object()


@contextlib.contextmanager
def as_if_never_compiled(backend: str, mode: str) -> Iterator[None]:
    """An eager torch workload runs with ``nn.Module``'s own ``__init__`` and ``__setstate__``.

    The first call of anything ``torch.compile`` made in a process patches both for good, so
    that dynamo can tag the modules created afterwards: each ``nn.Module`` built from then on
    costs 6 Python calls more (the patched ``__init__``, ``GenerationTracker.tag``, two
    ``ExactWeakKeyDictionary`` calls, their lambda and an ``id``).  An eager workload that
    builds modules in every call (``fit``, ``evaluate``, a ``train_on_batch``) would count by
    whether a compiled test ran before it in the process, and so would ``save``, which walks
    every attribute name of each module, dynamo's flag ``___needs_generation_tag_patch`` on
    ``nn.Module`` among them.  So an eager measurement restores torch's own methods, hides
    the flag, and puts dynamo's back after it; a compiled one keeps them.  The same first
    compile turns off ``torch.distributions``' argument checks for the process
    (``distributions_checked``).
    """
    if backend != "torch" or mode != "eager" or "torch._dynamo.mutation_guard" not in sys.modules:
        yield
        return
    from torch.nn import Module

    patched = {name: Module.__dict__[name] for name in _DYNAMO_PATCHED if name in Module.__dict__}
    own = {name: _unpatched(method) for name, method in patched.items()}
    flag = Module.__dict__.get(PATCH_FLAG, _ABSENT)
    try:
        for name, method in own.items():
            if method is not None:
                setattr(Module, name, method)
        if flag is not _ABSENT and all(method is not None for method in own.values()):
            delattr(Module, PATCH_FLAG)  # it is in every module's dir(), which saving walks
        with distributions_checked():
            yield
    finally:
        for name, method in patched.items():
            setattr(Module, name, method)
        if flag is not _ABSENT:
            setattr(Module, PATCH_FLAG, flag)


def _unpatched(method: object) -> object | None:
    """The method dynamo's patch wraps, or None when ``method`` is not dynamo's patch."""
    qualname = str(getattr(method, "__qualname__", ""))
    module = getattr(method, "__module__", None)
    if module != "torch._dynamo.mutation_guard" or not qualname.startswith(PATCH_PREFIX):
        return None
    found = inspect.getclosurevars(method).nonlocals  # type: ignore[arg-type]
    wrapped = found.get("init", found.get("setstate"))  # the names of dynamo's closures
    return wrapped if callable(wrapped) else None


@contextlib.contextmanager
def distributions_checked() -> Iterator[None]:
    """``torch.distributions`` check their arguments, as they do before any compile.

    dynamo's ``TorchPatcher.patch`` (``torch/_dynamo/eval_frame.py``), run once by the first
    compile in a process, calls ``Distribution.set_default_validate_args(False)``: from then on
    every distribution skips its constraint checks (the calls it moved: docs/exact-counts.md).
    Where dynamo's patch ran, the default is torch's own (``__debug__``) while measuring, and
    dynamo's after.
    """
    eval_frame = sys.modules.get("torch._dynamo.eval_frame")
    patch = getattr(getattr(eval_frame, "TorchPatcher", None), "patch", None)
    if patch is None or not patch.cache_info().currsize:
        yield
        return
    from torch.distributions import Distribution

    before = Distribution._validate_args
    Distribution.set_default_validate_args(__debug__)
    try:
        yield
    finally:
        Distribution.set_default_validate_args(before)
