"""What a measuring process wrote, read as untrusted input: its results file
(``--kerasperf-json``), the probe plugin's file and pytest-benchmark's JSON.  The process runs
the commit's code (a fork's, in a pull request), so each file is bounded, typed and checked as
``kerasperf accept`` checks a CI artifact: HistoryError with one line where it is not."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import msgspec

from pytest_kerasperf import results_file, untrusted
from pytest_kerasperf.ab.commits import HistoryError
from pytest_kerasperf.codec import validation_text
from pytest_kerasperf.record import Record


class MeasuredTest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One test's measurement at one commit (``key``: the baseline key, e.g. with ``[eager]``)."""

    key: str
    nodeid: str
    record: Record


#: The most a measuring process's results file may hold: one commit's tests, a few MB at most.
#: The process runs the commit's code (a fork's, in a pull request), so its files are untrusted.
MAX_RESULTS_BYTES = 16 * 1024 * 1024
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
    try:
        probed = msgspec.convert(untrusted.read(path, MAX_PROBE_BYTES), _Probed)
    except untrusted.UntrustedInputError as error:
        reason = str(error).removeprefix(f"{path}: ")
        raise HistoryError(f"{path}: not the probe plugin's file: {reason}") from None
    except msgspec.ValidationError as error:
        raise HistoryError(
            f"{path}: not the probe plugin's file: {validation_text(error)}"
        ) from None
    fields = msgspec.structs.asdict(probed)
    return {key: value for key, value in fields.items() if value is not None}


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
    """pytest-benchmark's JSON of a measuring process, checked (strict JSON; its benchmarks,
    names and round times in seconds, at most ``MAX_TIMINGS_BYTES``): the process runs the
    commit's code, so the file is untrusted.  HistoryError with one line where it is not."""
    try:
        data = untrusted.read(path, MAX_TIMINGS_BYTES)
        return msgspec.convert(data, _Timings)
    except untrusted.UntrustedInputError as error:
        reason = str(error).removeprefix(f"{path}: ")
    except msgspec.ValidationError as error:
        reason = validation_text(error, data, _Timings)
    raise HistoryError(f"{path}: not pytest-benchmark's JSON: {reason}")
