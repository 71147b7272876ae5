"""A results file (``--kerasperf-json``): its one typed model, its codec, and the checks
of a file that came from elsewhere.

The model is ``ResultsDocument``: the run's account and one ``outcome.Outcome`` per perf test.
Its JSON codec and schema (``schemas/results.schema.json``) are generated from these types by
msgspec; nothing else reads or writes the format.  A results file may come from a CI artifact or
a fork, so ``load_results`` reads it as untrusted input, for every command that reads one:
strict JSON (``untrusted``), no control character in any text a report prints, the types and
their limits, and the invariants the types cannot state (a result is one test's own, its counts
and edges add up, its variant is its record's, its claims agree with what it carries:
``results_claims``).  An older file gets one line naming its version.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from pytest_kerasperf import baseline, environment, untrusted
from pytest_kerasperf import results_claims as claims
from pytest_kerasperf.accounting import RunAccount
from pytest_kerasperf.codec import to_data, validation_text
from pytest_kerasperf.outcome import Outcome, outcome_data
from pytest_kerasperf.record import Record

RESULTS_SCHEMA_VERSION = 4
#: More results are refused (the bundled suite writes 10 per backend; a census about 700).
MAX_RESULTS = 20_000


class InputError(Exception):
    """A results or baseline file that cannot be used; one line naming it."""


class ResultsDocument(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A results file: the run's account (None where the run ended before it) and its results."""

    schema_version: Literal[4]
    summary: RunAccount | None
    results: Annotated[list[Outcome], msgspec.Meta(max_length=MAX_RESULTS)]


def encode(outcomes: Sequence[Outcome], summary: RunAccount | None) -> str:
    """A results file's text (each record in its whole form: ``outcome_data``)."""
    data = {
        "schema_version": RESULTS_SCHEMA_VERSION,
        "summary": None if summary is None else to_data(summary),
        "results": [outcome_data(outcome) for outcome in outcomes],
    }
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def schema() -> dict[str, object]:
    """The results file's JSON schema, generated from ``ResultsDocument``."""
    generated: dict[str, object] = msgspec.json.schema(ResultsDocument)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://github.com/pytest-kerasperf/schemas/results.schema.json",
        "title": f"pytest-kerasperf results file (--kerasperf-json), schema version "
        f"{RESULTS_SCHEMA_VERSION}",
        "description": "Generated from pytest_kerasperf.results_file.ResultsDocument "
        "(`python -m pytest_kerasperf.schemas`); invariants the types cannot state are "
        "checked when a file is read (results_file.load_results).",
        **generated,
    }


# ------------------------------------------------------------- untrusted input


def _printable(document: Mapping[str, object], path: Path) -> None:
    """No control character (Cc: C0, DEL, C1) and no bidirectional control in a string that a
    report or an annotation will print (``untrusted.UNPRINTABLE``); a profile's text may hold
    newlines and tabs."""
    for text in untrusted.strings(document.get("summary")):  # stale keys are shown too
        _refuse_control(text, f"{path}: summary")
    for index, result in enumerate(_results(document)):
        for name, value in result.items() if isinstance(result, dict) else ():
            where = f"{path}: results/{index}/{name}"
            if name == "profile" and isinstance(value, dict):  # its text may hold several lines
                _refuse_control(value["text"], where, untrusted.UNPRINTABLE_MULTILINE_RE)
                value = {k: v for k, v in value.items() if k != "text"}
            for text in untrusted.strings(value):
                _refuse_control(text, where)


def _refuse_control(text: str, where: str, pattern: re.Pattern[str] | None = None) -> None:
    if (pattern or untrusted.UNPRINTABLE_RE).search(text):
        shown = text[:60].encode("unicode_escape").decode("ascii")
        raise InputError(f"{where}: a control character in {shown!r}")


def _keys(document: ResultsDocument, path: Path) -> None:
    """Each key, and each stale key, names a test file and a test, as ``accept`` requires: a
    report prints keys first on a line, where ``::name::`` would be a workflow command."""
    stale = document.summary.stale if document.summary else ()
    for where, key in [
        *((f"results/{i} ({o.key})", o.key) for i, o in enumerate(document.results)),
        *((f"summary/stale/{i}", key) for i, key in enumerate(stale)),
    ]:
        try:
            baseline.relative_file(key)
        except baseline.BaselineError as error:
            raise InputError(f"{path}: {where}: {error}") from None


def _version(data: Any, path: Path) -> None:
    """An older (or newer) file gets one line naming its version."""
    version = data.get("schema_version") if isinstance(data, dict) else None
    if type(version) is int and version != RESULTS_SCHEMA_VERSION:  # a bool is no version
        raise InputError(
            f"{path}: not a pytest-kerasperf results file of schema version "
            f"{RESULTS_SCHEMA_VERSION}: it is of version {version} (docs/json-output.md); run "
            "the tests again with this version of pytest-kerasperf to write one"
        )


def _results(data: Any) -> list[Any]:
    """The results of parsed JSON, [] where they are not a list (the types then say why)."""
    results = data.get("results") if isinstance(data, Mapping) else None
    return results if isinstance(results, list) else []


def _whole_profiles(data: Any, path: Path) -> None:
    """A result's record holds its whole profile; its summary is made from it, never read.  A
    census table's totals (``totals_only``) are never a result's: they would skip the check
    that its calls add up."""
    for index, result in enumerate(_results(data)):
        record = result.get("record") if isinstance(result, dict) else None
        if isinstance(record, dict) and "totals_only" in record:
            raise InputError(
                f"{path}: results/{index}/record/totals_only: a census table's totals where the "
                "whole profile belongs: a result's calls must add up from its calls_by_function"
            )
        if isinstance(record, dict) and ("profile_sha256" in record or "functions" in record):
            raise InputError(
                f"{path}: results/{index}/record: a summary (profile_sha256, functions) where the "
                "whole profile belongs: the summary is made from calls_by_function and call_edges"
            )


def _check_result(outcome: Outcome, where: str, updating: bool) -> None:
    """What the types cannot say: the counts and edges add up, the variant is the record's."""
    record = outcome.record
    counted = record.count_problem()
    if counted is not None:
        raise InputError(f"{where}: {counted}")
    counts = record.calls_by_function
    into: dict[str, int] = {}
    for caller, callees in record.call_edges.items():
        if caller not in counts:
            raise InputError(f"{where}: call_edges names {caller!r}, which was never called")
        for callee, n in callees.items():
            into[callee] = into.get(callee, 0) + n
    for callee, n in into.items():
        if n > counts.get(callee, 0):
            raise InputError(
                f"{where}: {callee!r} is called {n:,} times by its callers but "
                f"{counts.get(callee, 0):,} times in all"
            )
    variant = environment.variant_of(record.environment, record.backend)
    if outcome.variant not in (None, variant):
        raise InputError(
            f"{where}: variant {outcome.variant!r}, but its record's environment is {variant!r}"
        )
    problem = claims.placement(outcome) or claims.verdict(outcome, updating)
    if problem is not None:
        raise InputError(f"{where}: {problem}")


def decode(data: Any, path: Path) -> ResultsDocument:
    """A results file's parsed (strict) JSON, checked; InputError naming the file and the field."""
    _version(data, path)
    _whole_profiles(data, path)
    try:
        document = msgspec.convert(data, ResultsDocument)
    except msgspec.ValidationError as error:
        raise InputError(
            f"{path}: not a pytest-kerasperf results file (--kerasperf-json, schema version "
            f"{RESULTS_SCHEMA_VERSION}): {validation_text(error, data, ResultsDocument)}"
        ) from None
    _printable(data, path)
    _keys(document, path)
    updating = document.summary.updating if document.summary else False
    for index, outcome in enumerate(document.results):
        _check_result(outcome, f"{path}: results/{index} ({outcome.key})", updating)
    problem = claims.one_run(document.results) or claims.summary(document.summary, document.results)
    if problem is not None:
        raise InputError(f"{path}: {problem}")
    return document


@dataclass(frozen=True)
class ResultsFile:
    """A results file, checked: its outcomes and the run's account as written."""

    path: Path
    outcomes: list[Outcome]
    summary: RunAccount | None

    @property
    def backends(self) -> str:
        return ", ".join(sorted({o.backend for o in self.outcomes})) or "?"

    @property
    def not_measured(self) -> int:
        return sum(self.summary.not_measured.values()) if self.summary else 0

    @property
    def stale(self) -> tuple[str, ...]:
        return self.summary.stale if self.summary else ()


def load_results(path: Path, max_bytes: int = untrusted.MAX_BYTES) -> ResultsFile:
    """The outcomes of a results file (untrusted: strict JSON, its types, invariants), read
    only where it is at most ``max_bytes``."""
    try:
        data = untrusted.read(path, max_bytes)
    except untrusted.UntrustedInputError as error:
        raise InputError(str(error)) from None
    document = decode(data, path)
    return ResultsFile(path, document.results, document.summary)


Group = tuple[str, str]  # (backend, variant)


def collect(paths: Sequence[Path]) -> tuple[dict[Group, dict[str, Record]], list[str]]:
    """(backend, variant) -> key -> record from every results file; lines about what was left
    out.  Every file is read and checked before anything is returned."""
    by_group: dict[Group, dict[str, Record]] = {}
    origin: dict[tuple[str, str, str], Path] = {}
    left_out: list[str] = []
    for path in paths:
        for outcome in load_results(path).outcomes:
            if outcome.test_failed:
                left_out.append(f"{path}: {outcome.key}: the test failed on its own; not accepted")
                continue
            record = outcome.record
            group = (record.backend, environment.variant_of(record.environment, record.backend))
            key = outcome.key
            _check_entry(group, key, record, f"{path}: {key}")
            if (*group, key) in origin:
                raise InputError(
                    f"{path}: {key} ({group[0]}, {group[1]}) is also in "
                    f"{origin[(*group, key)]}: accept one results file per backend and run"
                )
            origin[(*group, key)] = path
            by_group.setdefault(group, {})[key] = record
    return by_group, left_out


def _check_entry(group: Group, key: str, record: Record, where: str) -> None:
    """The baseline file ``record`` would make is one the gate can read back: its variant
    (from the record's environment) names a variant directory (its key names a file: ``_keys``)."""
    try:
        baseline.decode(json.loads(baseline.dumps(group[0], group[1], key, record)), where)
    except baseline.BaselineError as error:
        message = str(error).removeprefix(f"{where}: ")
        raise InputError(
            f"{where}: would make a baseline entry that is not valid: {message}"
        ) from None
