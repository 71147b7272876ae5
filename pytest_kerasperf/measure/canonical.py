"""One canonical process state: what ran before a perf test never moves its numbers.

A count follows the process's history wherever Keras or a framework keeps state between calls
that changes which code a later call runs.  Found by running the census in other orders and
under pytest-xdist against the tables of the gate's order, each with what it moved
(docs/exact-counts.md, "One canonical process"):

- Keras's global state (``keras.src.backend.common.global_state``: a thread-local holding
  every setting, counter and registry Keras keeps between calls: the mask dict of the
  backends whose tensors take no attributes, layer-name counters, the dtype policy, the
  global seed generator).
- Which frameworks are imported and started (tensorflow's eager context).
- What a framework sets for good at its first use (dynamo's patches on torch): undone while
  measuring (``measure.users.as_if_never_compiled``).
- A model or compiled function another test used: each test builds and compiles its own
  (``fixtures``, ``handle.compile_once``).
- A class's ``__annotations__``, stored in the class the first time anything reads it
  (``annotate_classes``).
- A framework's history of earlier calls that changes later ones: tensorflow's retracing
  detector (``backends.forget_history``).
- Which objects a ``gc.freeze`` made immortal: the heap is frozen before a test, never inside
  one (``measure.calls.settle_heap``).
- The state of Python's global ``random`` and numpy's global generator, which a Keras object
  made without a seed draws from, and Python seeds from ``os.urandom`` in every process: a
  measuring process seeds both (``SEED``) before it keeps them.
- The configuration of the loggers that exist when the process starts measuring (an export
  sets them for good); pytest's own capture handlers are left as they are.
- Whether OpenVINO's converter sends telemetry, which it decides from the user's consent file
  (``~/intel/openvino_telemetry``) and ``CI=true``: a measuring process declines it
  (``decline_telemetry``).

So a measuring process, before its first test (``prepare``), imports the canonical frameworks
and Keras, starts tensorflow's eager context where tensorflow is installed, and keeps Keras's
global state and the global random generators' states as they are then; before each perf test
(``restore``) they are put back as kept.  A test then counts what it counts alone in a fresh
process, whatever ran before it, in whichever order, worker or shard.
``--kerasperf-isolate`` runs each perf test in a child forked from this state, and
``kerasperf audit`` compares both, and every order, record for record: a new leak of this
kind shows there.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import random
import sys
from dataclasses import dataclass
from typing import Any

from pytest_kerasperf import backends
from pytest_kerasperf.measure.calls import settle_heap

#: Keras's module of global state and its thread-locals, kept and restored whole
GLOBAL_STATE = "keras.src.backend.common.global_state"
TRACKERS = ("GLOBAL_STATE_TRACKER", "GLOBAL_SETTINGS_TRACKER")


@dataclass(frozen=True)
class KerasState:
    """Keras's global state as a fresh measuring process has it: each tracker's attributes."""

    trackers: dict[str, dict[str, object]]
    #: Python's global ``random`` state (``random.getstate()``)
    python_random: Any = None
    #: numpy's global generator's state (``numpy.random.get_state()``), where numpy is imported
    numpy_random: Any = None
    #: each logger's (level, disabled, propagate, handlers not pytest's), by name ("" the root)
    loggers: dict[str, tuple[int, bool, bool, tuple[logging.Handler, ...]]] | None = None


def prepare(backend: str, *, start: bool = True) -> KerasState | None:
    """Import the canonical frameworks and Keras, start what they start lazily (unless
    ``start`` is false: a process that will fork starts them in each child) and keep Keras's
    global state.  None where the backend's framework is missing (its tests skip)."""
    try:
        backends.import_keras()
        backends.import_frameworks()
    except (backends.FrameworkMissing, ImportError):
        return None
    if start:
        backends.start_frameworks(backend)
    decline_telemetry()
    annotate_classes()
    seed_generators()
    return keras_state()


def decline_telemetry() -> None:
    """OpenVINO's telemetry declined, on every machine, as it is where ``CI=true``: what an
    ``openvino`` export runs follows whether it may send (an opted-out user's export made 109
    calls fewer than an opted-in one's, on torch; docs/exact-counts.md), and a perf test's
    process sends nothing."""
    try:
        from openvino_telemetry.utils import opt_in_checker
    except ImportError:
        return
    declined = opt_in_checker.ConsentCheckResult.DECLINED
    opt_in_checker.OptInChecker.check = lambda self, *args, **kwargs: declined


#: the seed of Python's global ``random`` and numpy's global generator in a measuring process
SEED = 1337


def seed_generators() -> None:
    """Seed Python's global ``random`` and numpy's global generator (``SEED``): Python seeds its
    own from ``os.urandom`` in each process, and how many calls a draw costs follows its
    state."""
    import numpy

    random.seed(SEED)
    numpy.random.seed(SEED)


def annotate_classes() -> int:
    """Every class of every imported module has its ``__annotations__``; how many classes.

    Reading a class's ``__annotations__`` where it has none stores a new empty dict in the
    class (Python 3.10 to 3.13), and from then on ``dir()`` of its instances and of its
    subclasses' instances names it: Keras's ``Model.from_config`` reads it, its saving walks
    ``dir()`` (what it moved: docs/exact-counts.md).  So every class there is when the first
    test starts has it, whatever a test reads.
    """
    # the descriptor itself: inspect.get_annotations reads without storing, and a metaclass's
    # own __getattr__ must not run
    annotations = type.__dict__["__annotations__"]  # noqa: RUF063
    seen: set[int] = set()
    for module in list(sys.modules.values()):
        for value in list(getattr(module, "__dict__", {}).values()):
            if not isinstance(value, type):
                continue
            for cls in value.__mro__:
                if id(cls) in seen:
                    continue
                seen.add(id(cls))
                with contextlib.suppress(Exception):  # a built-in type keeps none
                    annotations.__get__(cls, type(cls))
    return len(seen)


def keras_state() -> KerasState:
    module = sys.modules[GLOBAL_STATE]
    numpy = sys.modules.get("numpy")
    return KerasState(
        {name: dict(vars(getattr(module, name))) for name in TRACKERS if hasattr(module, name)},
        python_random=random.getstate(),
        numpy_random=numpy.random.get_state() if numpy is not None else None,
        loggers={name: _logger_state(logger) for name, logger in _loggers().items()},
    )


def _loggers() -> dict[str, logging.Logger]:
    """Every logger of the process, by name ("" the root)."""
    found: dict[str, logging.Logger] = {"": logging.getLogger()}
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger):  # not a PlaceHolder
            found[name] = logger
    return found


def _own(handler: logging.Handler) -> bool:
    """Whether pytest owns ``handler`` (its capture handlers come and go with each phase)."""
    return type(handler).__module__.startswith("_pytest")


def _logger_state(logger: logging.Logger) -> tuple[int, bool, bool, tuple[logging.Handler, ...]]:
    handlers = tuple(h for h in logger.handlers if not _own(h))
    return logger.level, logger.disabled, logger.propagate, handlers


def _restore_loggers(kept: KerasState) -> None:
    """The loggers kept put back as they were (their level, ``disabled``, ``propagate`` and the
    handlers that are not pytest's); loggers made since are left as their modules made them."""
    if kept.loggers is None:
        return
    now = _loggers()
    for name, state in kept.loggers.items():
        logger = now.get(name)
        if logger is None or _logger_state(logger) == state:
            continue
        level, disabled, propagate, handlers = state
        if logger.level != level:
            logger.setLevel(level)
        logger.disabled = disabled
        logger.propagate = propagate
        logger.handlers[:] = [h for h in logger.handlers if _own(h)] + list(handlers)


def restore(kept: KerasState) -> list[str]:
    """Put Keras's global state back as ``kept`` (each container a fresh copy of the kept
    one), forget what a framework keeps of earlier calls (``backends.forget_history``) and
    collect the garbage (``settle_heap``); the names of Keras's attributes that differed."""
    backends.forget_history()
    settle_heap()
    module = sys.modules[GLOBAL_STATE]
    moved: list[str] = []
    for name, attributes in kept.trackers.items():
        now = vars(getattr(module, name))  # clear_session() makes new trackers
        moved += sorted(
            attribute
            for attribute in now.keys() | attributes.keys()
            if attribute not in now
            or attribute not in attributes
            or now[attribute] is not attributes[attribute]
        )
        now.clear()
        now.update({attribute: _fresh(value) for attribute, value in attributes.items()})
    if kept.python_random is not None:
        random.setstate(kept.python_random)
    numpy = sys.modules.get("numpy")
    if kept.numpy_random is not None and numpy is not None:
        numpy.random.set_state(kept.numpy_random)
    _restore_loggers(kept)
    return moved


def _fresh(value: Any) -> Any:
    """A container as kept, not the one a test may have filled; any other value as is."""
    return copy.copy(value) if isinstance(value, (dict, list, set)) else value
