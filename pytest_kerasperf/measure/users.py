"""How every measurement runs Keras: as users run it, not as the test session configures it.

Shared by the measuring handle (its count, graph and timing passes) and the
sampling profiler (``measure.profile``), so that both see the same code paths.
"""

from __future__ import annotations

import contextlib
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
    """
    keras = backends.import_keras()
    was_on = keras.config.is_traceback_filtering_enabled()
    if not was_on:
        keras.config.enable_traceback_filtering()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        if not was_on:
            keras.config.disable_traceback_filtering()
