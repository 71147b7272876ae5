"""How a perf test's protocol runs: on a thread of its own, and with ``--kerasperf-isolate``
in a process of its own (docs/exact-counts.md: why, and what each costs).

**A thread of its own.**  Code that walks the whole Python stack (jax's re-raiser check, its
compiles' source locations) counts the frames above the workload: pytest's, pytest-xdist's, a
forked child's.  So every perf test's setup, call and teardown run on a new thread, whose stack
and thread-locals are the same in one process, a pytest-xdist worker or a forked child; its
reports are logged after it by the thread that runs the session.

**A process of its own** (``--kerasperf-isolate``): the measuring process imports the canonical
frameworks and Keras (``measure.canonical.prepare``, no thread started), freezes its heap and
forks a *zygote* that never runs a test.  For each perf test the zygote forks a child, which
starts the frameworks' threads, runs the test's protocol on a thread of its own, writes its
reports and the gate's outcome to a file (pickled: read only by the process that forked its
zygote, trusted as its own) and exits.  Tests that are not perf tests run in the process as
usual, so they never change what the zygote holds; ``kerasperf audit`` takes this mode as its
reference.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
import signal
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO, TYPE_CHECKING, Protocol

import pytest
from _pytest.runner import runtestprotocol

from pytest_kerasperf.items import is_perf_test

if TYPE_CHECKING:
    from pytest_kerasperf.state import PluginState


class Gate(Protocol):
    """What an isolating run needs of the gate (``gate.Gate`` is one): its process state, and
    the output a child's gate leaves for the parent's to merge."""

    @property
    def state(self) -> PluginState: ...

    def worker_output(self) -> str: ...

    def merge_worker(self, text: str) -> None: ...


def on_own_thread(item: pytest.Item, nextitem: pytest.Item | None) -> list[pytest.TestReport]:
    """The reports of the item's setup, call and teardown, run on a new thread (not logged)."""
    reports: list[pytest.TestReport] = []
    raised: list[BaseException] = []

    def run() -> None:
        from pytest_kerasperf.items import item_key
        from pytest_kerasperf.measure import reach

        watch = (
            reach.watching(reach.COLLECTOR, item_key(item))
            if reach.COLLECTOR is not None
            else contextlib.nullcontext()
        )
        try:
            with watch:
                reports.extend(runtestprotocol(item, log=False, nextitem=nextitem))
        except BaseException as error:  # e.g. pytest.exit(): raised again by the caller
            raised.append(error)

    thread = threading.Thread(target=run, name="kerasperf", daemon=True)
    thread.start()
    thread.join()
    if raised:
        raise raised[0]
    return reports


class OwnThread:
    """The plugin of a measuring run: each perf test's protocol on a thread of its own."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> bool | None:
        if not is_perf_test(item):
            return None  # pytest's own protocol
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        for report in on_own_thread(item, nextitem):
            item.ihook.pytest_runtest_logreport(report=report)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True


class Isolation:
    """The plugin of an isolating run: runs each perf test's protocol in a child of the zygote."""

    def __init__(self, session: pytest.Session, gate: Gate) -> None:
        self.gate = gate
        self.positions = {id(item): index for index, item in enumerate(session.items)}
        self.directory = Path(tempfile.mkdtemp(prefix="kerasperf-isolate-"))
        from pytest_kerasperf.measure.calls import freeze_heap

        freeze_heap()  # no child collects, and so copies, the heap they share
        requests_read, requests_write = os.pipe()
        replies_read, replies_write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the zygote
            os.close(requests_write)
            os.close(replies_read)
            _zygote(session, gate, self.directory, requests_read, replies_write)
        os.close(requests_read)
        os.close(replies_write)
        self.zygote = pid
        self.requests: IO[str] = os.fdopen(requests_write, "w", buffering=1)
        self.replies: IO[str] = os.fdopen(replies_read, "r")

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> bool | None:
        if not is_perf_test(item) or id(item) not in self.positions:
            return None  # pytest's own protocol (or OwnThread's), in this process
        index = self.positions[id(item)]
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        self.requests.write(f"{index}\n")
        status = self.replies.readline().strip()
        path = self.directory / f"{index}.pickle"
        if path.exists():
            with path.open("rb") as handle:
                reports, gate_output = pickle.load(handle)
            path.unlink()
            self.gate.merge_worker(gate_output)
        else:
            reports = [_crashed(item, status)]
        for data in reports:
            report = item.config.hook.pytest_report_from_serializable(config=item.config, data=data)
            item.ihook.pytest_runtest_logreport(report=report)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True

    def pytest_sessionfinish(self) -> None:
        self.requests.close()  # the zygote exits at the end of its requests
        os.waitpid(self.zygote, 0)
        self.replies.close()
        shutil.rmtree(self.directory)


def _zygote(
    session: pytest.Session, gate: Gate, directory: Path, requests: int, replies: int
) -> None:
    """Fork a child per request (an item's position) and answer its exit status; never
    returns (nor runs pytest's or the interpreter's exit handlers)."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the measuring process handles ^C
        with os.fdopen(requests, "r") as asked, os.fdopen(replies, "w", buffering=1) as answers:
            for line in asked:
                index = int(line)
                pid = os.fork()
                if pid == 0:
                    signal.signal(signal.SIGINT, signal.SIG_DFL)
                    _child(session.items[index], gate, directory / f"{index}.pickle")
                _, status = os.waitpid(pid, 0)
                answers.write(f"{status}\n")
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _child(item: pytest.Item, gate: Gate, path: Path) -> None:
    """One test's whole protocol, its reports and outcome written to ``path``; exits."""
    code = 0
    try:
        from pytest_kerasperf import backends

        backends.start_frameworks(gate.state.backend)
        reports = on_own_thread(item, None)
        serialized = [
            item.config.hook.pytest_report_to_serializable(config=item.config, report=report)
            for report in reports
        ]
        temporary = path.with_suffix(".part")
        with temporary.open("wb") as handle:
            pickle.dump((serialized, gate.worker_output()), handle)
        temporary.rename(path)
    except BaseException as error:
        sys.stderr.write(f"kerasperf: isolated test {item.nodeid}: {error!r}\n")
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _crashed(item: pytest.Item, status: str) -> dict[str, object]:
    """The report of a child that ended without writing its reports."""
    try:
        raw = int(status)
        how = (
            f"signal {os.WTERMSIG(raw)}"
            if os.WIFSIGNALED(raw)
            else f"exit status {os.WEXITSTATUS(raw)}"
        )
    except ValueError:
        how = "no answer from the zygote"
    report = pytest.TestReport(
        item.nodeid,
        item.location,
        {name: 1 for name in item.keywords},
        "failed",
        f"kerasperf: the isolated process of this test ended ({how}) before reporting",
        "call",
    )
    data: dict[str, object] = item.config.hook.pytest_report_to_serializable(
        config=item.config, report=report
    )
    return data
