"""What a measuring process wrote, read as untrusted input: its results file
(``--kerasperf-json``), the probe plugin's file and pytest-benchmark's JSON.  The process runs
the commit's code (a fork's, in a pull request), so each file is bounded, typed and checked as
``kerasperf accept`` checks a CI artifact: HistoryError with one line where it is not."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, TypeVar

import msgspec

from pytest_kerasperf import results_file, untrusted
from pytest_kerasperf.ab.commits import HistoryError
from pytest_kerasperf.codec import validation_text
from pytest_kerasperf.record import Record

T = TypeVar("T")


class MeasuredTest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One test's measurement at one commit (``key``: the baseline key, e.g. with ``[eager]``)."""

    key: str
    nodeid: str
    record: Record


#: The most a measuring process's results file may hold: the reader's own cap, which fits a run
#: of the census (35 MB on numpy to 85 MB on tensorflow, docs/github.md).
MAX_RESULTS_BYTES = untrusted.MAX_BYTES
#: The most the probe plugin's file may hold: two short strings.
MAX_PROBE_BYTES = 64 * 1024


def read_results(path: Path) -> list[MeasuredTest]:
    """The tests a measuring process measured (``--kerasperf-json``), failed tests left out.

    The file is checked as ``kerasperf accept`` checks a CI artifact (strict JSON, its types,
    its claims, at most ``MAX_RESULTS_BYTES``): HistoryError with one line where it is not."""
    if not path.is_file():
        return []
    try:
        outcomes = results_file.load_results(path, MAX_RESULTS_BYTES).outcomes
    except results_file.InputError as error:
        raise HistoryError(f"the measuring process's results: {error}") from None
    return [
        MeasuredTest(outcome.key, outcome.nodeid, outcome.record)
        for outcome in outcomes
        if not outcome.test_failed
    ]


class _Probed(msgspec.Struct, frozen=True):
    keras_file: Annotated[str, msgspec.Meta(max_length=4096)] | None = None
    keras_version: Annotated[str, msgspec.Meta(max_length=200)] | None = None


def read_probe(path: Path) -> dict[str, str]:
    """What the probe plugin wrote (``keras_file``, ``keras_version``), or nothing; checked
    (strict JSON, two strings): HistoryError with one line where it is not."""
    if not path.is_file():
        return {}
    probed = _read(path, MAX_PROBE_BYTES, _Probed, "the probe plugin's file")
    return {k: v for k, v in msgspec.structs.asdict(probed).items() if v is not None}


#: The most pytest-benchmark's JSON of one measuring process may hold (a few tests' rounds).
MAX_TIMINGS_BYTES = 16 * 1024 * 1024
#: The most rounds one timed test may report.
MAX_TIMED_ROUNDS = 1_000_000
#: A round's time in seconds, as pytest-benchmark writes it: never negative, at most an hour.
Seconds = Annotated[float, msgspec.Meta(ge=0, le=3600)]


class _Stats(msgspec.Struct, frozen=True):
    data: Annotated[list[Seconds], msgspec.Meta(max_length=MAX_TIMED_ROUNDS)] = []


class _Bench(msgspec.Struct, frozen=True):
    fullname: Annotated[str, msgspec.Meta(max_length=2000)]
    stats: _Stats


class _Timings(msgspec.Struct, frozen=True):
    """What ``read_timings`` takes of pytest-benchmark's ``--benchmark-json``."""

    benchmarks: Annotated[list[_Bench], msgspec.Meta(max_length=20_000)]


def read_timings(path: Path) -> _Timings:
    """pytest-benchmark's JSON of a measuring process, checked (its benchmarks, names and round
    times in seconds): HistoryError with one line where it is not."""
    return _read(path, MAX_TIMINGS_BYTES, _Timings, "pytest-benchmark's JSON")


def _read(path: Path, max_bytes: int, type_: type[T], what: str) -> T:
    """The file at ``path`` as ``type_`` (strict JSON); HistoryError ``PATH: not WHAT: why``."""
    try:
        data = untrusted.read(path, max_bytes)
        return msgspec.convert(data, type_)
    except untrusted.UntrustedInputError as error:
        reason = str(error).removeprefix(f"{path}: ")
    except msgspec.ValidationError as error:
        reason = validation_text(error, data, type_)
    raise HistoryError(f"{path}: not {what}: {reason}")
