"""The A/B engine: a Keras commit's perf tests in fresh processes, pairs of them in lockstep,
and the statistics that stop a sequential A/B (``--kerasperf-compare-ref`` runs on it, and the
lab's sweep, bisect and ``kerasperf ab`` too).

In layers, bottom to top (``tests/test_layers.py``): the pure and light ``stats`` (the A/B
verdict), ``text`` (names in text) and ``commits`` (the repository, GitPython, bare or not);
measuring: ``abplan`` (an A/B's settings and when it stops), ``interleave`` (pairs of
processes timed in lockstep), ``processes`` (one measuring process: its timing environment,
CPU pinning, a pair in lockstep), ``outputs`` (what a process wrote) and ``runner`` (a
commit's suite in a fresh pytest process, with ``probe``, the ``-p`` plugin of that process).

numpy, scipy and git are imported inside the functions that use them.
"""

from __future__ import annotations

#: What the engine imports beyond the plugin (the ``history`` extra).
NEEDS = ("git", "numpy", "scipy")


def missing_modules() -> list[str]:
    """The modules of the ``history`` extra that cannot be imported here (git also needs a
    ``git`` executable on PATH: GitPython's import fails without one)."""
    import importlib

    missing = []
    for name in NEEDS:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing
