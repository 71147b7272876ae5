"""pytest wiring, loaded by the pytest11 entry point in every pytest process.

This module stays light: it declares the options and markers, registers the
fixtures, parametrizes ``kerasperf_mode``, marks perf tests and skips them
when they are not asked for.  A run with ``--kerasperf`` (or its update and
compare-ref forms) registers a ``gate.Gate``, which imports what measuring,
judging and reporting need; a run without it imports none of that, nor any
framework, numpy, scipy or git (``tests/test_install.py`` pins this).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import pytest

from pytest_kerasperf import budget, fixtures, markers, options, shards
from pytest_kerasperf.budget import PERF_MARKER
from pytest_kerasperf.items import budgets, declared_mode, is_perf_test
from pytest_kerasperf.state import STATE, PluginState

if TYPE_CHECKING:
    from pytest_kerasperf.gate import Gate

WORKER_OUTPUT = "kerasperf"  # workeroutput key of a worker's collection
GATE = "kerasperf-gate"  # the registered name of the Gate of a measuring run


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _gate(config: pytest.Config) -> Gate | None:
    """The run's ``gate.Gate``, or None when perf tests are not measured."""
    gate: Gate | None = config.pluginmanager.get_plugin(GATE)
    return gate


def pytest_configure(config: pytest.Config) -> None:
    for line in markers.help_lines(full=bool(getattr(config.option, "markers", False))):
        config.addinivalue_line("markers", line)
    config.pluginmanager.register(fixtures, "kerasperf-fixtures")
    opts = options.options(config)
    state = PluginState(options=opts, backend=budget.active_backend())
    config.stash[STATE] = state
    if opts.enabled:
        from pytest_kerasperf.gate import Gate

        config.pluginmanager.register(Gate(config, state), GATE)
    if not _is_xdist_worker(config) and config.pluginmanager.has_plugin("xdist"):
        config.pluginmanager.register(WorkerCollections(state), "kerasperf-xdist")


# --------------------------------------------------------------- collection


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``[eager]`` and ``[compiled]`` where the backend has both; ``[eager]`` on numpy."""
    if "kerasperf_mode" in metafunc.fixturenames:
        backend = metafunc.config.stash[STATE].backend
        metafunc.parametrize(
            "kerasperf_mode", budget.modes(backend), indirect=True, scope="session"
        )


def pytest_itemcollected(item: pytest.Item) -> None:
    """Mark every perf test ``kerasperf`` (for ``-m``, which runs before modifyitems)."""
    if is_perf_test(item) and item.get_closest_marker(PERF_MARKER) is None:
        item.add_marker(PERF_MARKER)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    state = config.stash[STATE]
    gate = _gate(config)
    try:
        _check_collected(state, items)
        if gate is not None:
            gate.collected(config, items)  # every test, in the shard or not: none is stale
        _keep_shard(config, state, items)
        if gate is not None:  # within the shard: a shard's index knows the shard's tests
            from pytest_kerasperf.changed import keep_changed

            keep_changed(config, state, items)
    except pytest.UsageError as error:
        if not _is_xdist_worker(config):
            raise
        # A worker that raised would crash; the controller prints it as one line.
        state.usage_error = str(error)
        config.hook.pytest_deselected(items=list(items))
        items.clear()


def _check_collected(state: PluginState, items: list[pytest.Item]) -> None:
    """Budget and mode markers parse; perf tests are skipped unless asked for."""
    skip = pytest.mark.skip(reason="perf test: run with --kerasperf to measure and gate it")
    for item in items:
        budgets(item)  # a wrong marker argument is a collection error, run or not
        if not is_perf_test(item):
            continue
        declared_mode(item)
        state.perf_tests += 1
        if not state.options.enabled:
            item.add_marker(skip)


def _keep_shard(config: pytest.Config, state: PluginState, items: list[pytest.Item]) -> None:
    """``--kerasperf-shard K/N``: keep items K-1, K-1+N, ... of the collection, deselect
    the others.  Round-robin, so a module's tests (the compiled census) spread evenly; no test
    counts what another ran before it (``measure.canonical``), so any split counts alike."""
    if state.options.shard is None:
        return
    member = [shards.in_shard(position, state.options.shard) for position in range(len(items))]
    kept = [item for item, keep in zip(items, member, strict=True) if keep]
    dropped = [item for item, keep in zip(items, member, strict=True) if not keep]
    state.shard_tests = (len(kept), len(items))
    state.perf_tests = sum(1 for item in kept if is_perf_test(item))
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


# ---------------------------------------------------------------- the end


class WorkerCollections:
    """On the xdist controller: what each worker collected and could not use."""

    def __init__(self, state: PluginState) -> None:
        self._state = state

    def pytest_testnodedown(self, node: Any, error: object) -> None:
        output = getattr(node, "workeroutput", {})
        if WORKER_OUTPUT not in output:
            return
        perf_tests, usage_error, gate_output, shard_tests, changed = output[WORKER_OUTPUT]
        self._state.perf_tests = max(self._state.perf_tests, int(perf_tests))
        if shard_tests is not None:
            self._state.shard_tests = (int(shard_tests[0]), int(shard_tests[1]))
        self._state.usage_error = self._state.usage_error or usage_error
        if changed is not None:
            import msgspec

            from pytest_kerasperf.accounting import ChangedAccount

            self._state.changed = msgspec.convert(changed, ChangedAccount)
        gate = _gate(node.config)
        if gate is not None and gate_output is not None:
            gate.merge_worker(gate_output)


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if STATE not in config.stash:
        return
    state = config.stash[STATE]
    gate = _gate(config)
    if _is_xdist_worker(config):
        config.workeroutput[WORKER_OUTPUT] = (  # type: ignore[attr-defined]
            state.perf_tests,
            state.usage_error,
            gate.worker_output() if gate is not None else None,
            state.shard_tests,
            None if state.changed is None else _builtins(state.changed),
        )
        return
    if state.usage_error:
        # Raised on an xdist worker: the one line pytest prints for a usage error.
        sys.stderr.write(f"ERROR: {state.usage_error}\n")
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
        return
    if gate is not None:
        gate.finish(session)


def _builtins(value: object) -> Any:
    import msgspec

    return msgspec.to_builtins(value)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if STATE not in config.stash or _is_xdist_worker(config):
        return
    state = config.stash[STATE]
    if state.usage_error:
        return
    gate = _gate(config)
    if state.shard_tests is not None and state.options.shard is not None:
        kept, selected = state.shard_tests
        index, count = state.options.shard
        terminalreporter.write_line(
            f"kerasperf: shard {index}/{count}: {kept} of the {selected} selected tests ran here "
            f"(positions {index}, {index + count}, {index + 2 * count}, ...), the others deselected"
        )
    if gate is not None:
        gate.terminal_summary(terminalreporter)
    elif state.perf_tests:
        terminalreporter.write_line(
            f"kerasperf: {state.perf_tests} perf test{'s' if state.perf_tests != 1 else ''} "
            "not run (pass --kerasperf to measure and gate them)"
        )
