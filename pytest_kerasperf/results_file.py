"""Reading ``--kerasperf-json`` results files: untrusted input, checked before use.

A results file may come from a CI artifact or a fork: strict JSON, its
schema, the invariants between its fields, no control character in what a
report prints, and every baseline entry it would make readable back by the
gate.  ``kerasperf accept`` and ``kerasperf report`` read through here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_kerasperf import baseline, environment, untrusted
from pytest_kerasperf.outcome import Outcome
from pytest_kerasperf.record import Record, test_key
from pytest_kerasperf.report import json_report


class InputError(Exception):
    """A results or baseline file that cannot be used; one line naming it."""


#: Strings of a results file that may hold several lines (everything else is one line).
_MULTILINE = {("profile", "text")}


def _printable(document: Any, path: Path) -> None:
    """No control character in a string that a report or an annotation will print."""
    for text in untrusted.strings(document.get("summary")):  # stale keys are shown too
        _refuse_control(text, f"{path}: summary")
    for index, result in enumerate(document.get("results", [])):
        for name, value in result.items() if isinstance(result, dict) else ():
            if isinstance(value, dict):
                value = {k: v for k, v in value.items() if (name, k) not in _MULTILINE}
            for text in untrusted.strings(value):
                _refuse_control(text, f"{path}: results/{index}/{name}")


def _refuse_control(text: str, where: str) -> None:
    if _CONTROL.search(text):
        shown = text[:60].encode("unicode_escape").decode("ascii")
        raise InputError(f"{where}: a control character in {shown!r}")


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _load_document(path: Path) -> dict[str, Any]:
    """A results file (``--kerasperf-json``), untrusted: strict JSON, the schema, invariants."""
    import jsonschema

    try:
        data = untrusted.read(path)
    except untrusted.UntrustedInputError as error:
        raise InputError(str(error)) from None
    schema = json.loads(
        (Path(__file__).parent / "schemas" / "results.schema.json").read_text(encoding="utf-8")
    )
    errors = sorted(
        jsonschema.Draft202012Validator(schema).iter_errors(data),
        key=lambda e: list(e.absolute_path),
    )
    if errors:
        where = "/".join(str(p) for p in errors[0].absolute_path) or "<top level>"
        raise InputError(
            f"{path}: not a pytest-kerasperf results file (--kerasperf-json, schema version "
            f"{json_report.RESULTS_SCHEMA_VERSION}): at {where}: {errors[0].message[:300]}"
        )
    _printable(data, path)
    record_schema = baseline.schema()
    validator = jsonschema.Draft202012Validator(
        {"$ref": "#/$defs/full_record", "$defs": record_schema["$defs"]}
    )
    for index, result in enumerate(data["results"]):
        where = f"{path}: results/{index} ({result['key']})"
        record_errors = sorted(
            validator.iter_errors(result["record"]), key=lambda e: list(e.absolute_path)
        )
        if record_errors:
            at = "/".join(str(p) for p in record_errors[0].absolute_path) or "<top level>"
            raise InputError(f"{where}: record/{at}: {record_errors[0].message[:300]}")
        _check_result(result, where)
    document: dict[str, Any] = data
    return document


def _check_result(result: Mapping[str, Any], where: str) -> None:
    """What the schema cannot say: the result is one test's own, and its counts add up."""
    record = result["record"]
    if result["key"] != test_key(result["nodeid"]):
        raise InputError(
            f"{where}: key {result['key']!r} is not the test key of nodeid {result['nodeid']!r}"
        )
    if record["backend"] != result["backend"] or record["mode"] != result["mode"]:
        raise InputError(
            f"{where}: the record is of {record['backend']} {record['mode']}, the result of "
            f"{result['backend']} {result['mode']}"
        )
    if record["calls"] != result["calls"]:
        raise InputError(
            f"{where}: calls {result['calls']:,} but its record has {record['calls']:,}"
        )
    counts = record["calls_by_function"]
    if sum(counts.values()) != record["calls"]:
        raise InputError(
            f"{where}: calls {record['calls']:,} but calls_by_function adds up to "
            f"{sum(counts.values()):,}"
        )
    into: dict[str, int] = {}
    for caller, callees in record["call_edges"].items():
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
    variant = environment.variant_of(record["environment"], record["backend"])
    if result.get("variant") not in (None, variant):
        raise InputError(
            f"{where}: variant {result['variant']!r}, but its record's environment is {variant!r}"
        )


@dataclass(frozen=True)
class ResultsFile:
    """A results file, checked: its outcomes and the run's account as written."""

    path: Path
    outcomes: list[Outcome]
    summary: Mapping[str, Any]

    @property
    def backends(self) -> str:
        return ", ".join(sorted({o.backend for o in self.outcomes})) or "?"


def load_results(path: Path) -> ResultsFile:
    """The outcomes of a results file (untrusted: strict JSON, schema, invariants)."""
    document = _load_document(path)
    try:
        outcomes = [Outcome.from_json(result) for result in document["results"]]
    except (ValueError, KeyError, TypeError) as error:
        raise InputError(f"{path}: not a pytest-kerasperf results file: {error}") from None
    return ResultsFile(path, outcomes, document["summary"] or {})


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
    (from the record's environment) names a variant directory, its key a file."""
    import jsonschema

    try:
        baseline.relative_file(key)
    except baseline.BaselineError as error:
        raise InputError(f"{where}: {error}") from None
    data = json.loads(baseline.dumps(group[0], group[1], key, record))
    errors = sorted(
        jsonschema.Draft202012Validator(baseline.schema()).iter_errors(data),
        key=lambda e: list(e.absolute_path),
    )
    if errors:
        at = "/".join(str(p) for p in errors[0].absolute_path) or "<top level>"
        raise InputError(
            f"{where}: would make a baseline entry that is not valid: at {at}: "
            f"{errors[0].message[:300]}"
        )
