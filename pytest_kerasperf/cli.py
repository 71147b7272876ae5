"""The ``kerasperf`` command (``python -m pytest_kerasperf``): accept, report.

``kerasperf accept RESULTS.json...`` writes baseline entries from
``--kerasperf-json`` files, e.g. downloaded from a CI run measured with the
pinned versions, as PyTorch's compile benchmarks accept CI results: the same
validation, the same "rewrite only what moved" rule, the same file lock and
atomic write, and the same change listing as ``--kerasperf-update-baseline``.
"""

from __future__ import annotations

import argparse
import configparser
import json
import os
import re
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_kerasperf import baseline, environment, history, untrusted
from pytest_kerasperf.options import tolerance
from pytest_kerasperf.record import Record, test_key
from pytest_kerasperf.report import json_report, markdown, terminal

EXIT_OK = 0
EXIT_NOT_GREEN = 1  # kerasperf report: a regression shown, or an expected run missing
EXIT_BAD_INPUT = 2


class InputError(Exception):
    """A results or baseline file that cannot be used; one line naming it."""


def default_baseline_dir(cwd: Path) -> Path:
    """``kerasperf_baseline_dir`` from ./pyproject.toml or ./pytest.ini, else ./baselines."""
    pyproject = cwd / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError):
            data = {}
        value = data.get("tool", {}).get("pytest", {}).get("ini_options", {})
        if isinstance(value, dict) and value.get("kerasperf_baseline_dir"):
            return cwd / str(value["kerasperf_baseline_dir"])
    ini = cwd / "pytest.ini"
    if ini.is_file():
        parser = configparser.ConfigParser()
        try:
            parser.read(ini, encoding="utf-8")
        except configparser.Error:
            pass
        else:
            if parser.has_option("pytest", "kerasperf_baseline_dir"):
                return cwd / parser.get("pytest", "kerasperf_baseline_dir")
    return cwd / "baselines"


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


def _load_results(path: Path) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = _load_document(path)["results"]
    return results


Group = tuple[str, str]  # (backend, variant)


def collect(paths: Sequence[Path]) -> tuple[dict[Group, dict[str, Record]], list[str]]:
    """(backend, variant) -> key -> record from every results file; lines about what was left
    out.  Every file is read and checked before anything is returned."""
    by_group: dict[Group, dict[str, Record]] = {}
    origin: dict[tuple[str, str, str], Path] = {}
    left_out: list[str] = []
    for path in paths:
        for result in _load_results(path):
            if result["test_failed"]:
                left_out.append(
                    f"{path}: {result['key']}: the test failed on its own; not accepted"
                )
                continue
            record = Record.from_json(result["record"])
            group = (record.backend, environment.variant_of(record.environment, record.backend))
            key = str(result["key"])
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


def accept(paths: Sequence[Path], baseline_dir: Path, latency_tolerance: float) -> list[str]:
    """Write the records of the results files into the baseline files; the change listing.

    Nothing is written unless every results file and every baseline file it
    would change is valid.
    """
    by_group, lines = collect(paths)
    if not by_group:
        raise InputError("no result to accept: " + ", ".join(map(str, paths)))
    stores = {
        group: baseline.Baselines(baseline_dir, group[0], group[1]) for group in sorted(by_group)
    }
    try:
        for store in stores.values():
            baseline.refuse_legacy(store.root, store.backend)
            store.load()  # every file it would change, validated before the first write
    except baseline.BaselineError as error:
        raise InputError(str(error)) from None
    for group, store in stores.items():
        policy = baseline.UpdatePolicy(
            latency_tolerance=latency_tolerance, mismatch=environment.mismatch_for(group[0])
        )
        try:
            changes = store.update(by_group[group], policy)
        except baseline.BaselineError as error:
            raise InputError(str(error)) from None
        except OSError as error:
            raise InputError(f"{store.directory}: cannot write: {error.strerror}") from None
        lines.append(f"baseline {store.directory}:")
        lines += [terminal.change_line(change) for change in changes]
    return lines


def run_name(result: Mapping[str, Any]) -> str:
    """``jax``, ``jax-nnx``: the backend, then the variant's settings after the device kind."""
    backend = str(result["record"]["backend"])
    variant = result.get("variant") or environment.variant_of(
        result["record"]["environment"], backend
    )
    settings = str(variant).split("-")[2:]
    return "-".join([backend, *settings])


@dataclass(frozen=True)
class Report:
    lines: list[str]  # the terminal table and verdict line
    markdown: str
    regressions: int
    missing: list[str]  # expected runs without results


def report(paths: Sequence[Path], expect: Sequence[str] = ()) -> Report:
    """One table of several runs' results (e.g. one per backend and variant)."""
    results: list[dict[str, Any]] = []
    not_measured = 0
    stale: list[str] = []
    for path in paths:
        document = _load_document(path)
        results += document["results"]
        summary = document["summary"] or {}
        not_measured += sum(summary.get("not_measured", {}).values())
        stale += [f"{_backend_of(document)}: {key}" for key in summary.get("stale", [])]
    present = {run_name(result) for result in results}
    missing = [name for name in expect if name not in present]
    if not results and not expect:
        raise InputError("no result to report: " + ", ".join(map(str, paths)))
    lines = terminal.results_table(results, by_backend=True) if results else []
    lines.append(markdown.verdict_line(results, not_measured, len(stale)).replace("**", ""))
    if missing:
        lines.append(f"kerasperf report: no results for {', '.join(missing)} (expected)")
    backends = sorted({r["record"]["backend"] for r in results})
    text = markdown.render(
        results,
        title=f"kerasperf ({', '.join(backends) or 'no results'})",
        not_measured=not_measured,
        stale=stale,
        missing=missing,
    )
    regressions = sum(1 for r in results if markdown.category(r) == "regression")
    return Report(lines, text, regressions, missing)


def _backend_of(document: Mapping[str, Any]) -> str:
    backends = {r["record"]["backend"] for r in document["results"]}
    return ", ".join(sorted(backends)) or "?"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kerasperf", description="pytest-kerasperf: Keras performance baselines"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    accept_parser = commands.add_parser(
        "accept",
        help="write baseline entries from --kerasperf-json results files (e.g. from CI)",
        description="Write the baseline entries of the tests in RESULTS (files written by "
        "`pytest --kerasperf-json`, e.g. artifacts of a CI run with the pinned versions). "
        "Entries whose counts, call edges and graph breaks did not move keep their bytes; "
        "tests that failed on their own are left out.",
    )
    accept_parser.add_argument("results", nargs="+", type=Path, metavar="RESULTS.json")
    accept_parser.add_argument(
        "--baseline-dir",
        type=Path,
        metavar="DIR",
        help="directory of the baseline files (default: kerasperf_baseline_dir of "
        "./pyproject.toml or ./pytest.ini, else ./baselines)",
    )
    accept_parser.add_argument(
        "--latency-tolerance",
        type=tolerance,
        default=0.10,
        metavar="FRACTION",
        help="a stored latency is kept unless the new median moved by more than this (0.10)",
    )
    report_parser = commands.add_parser(
        "report",
        help="one table of several --kerasperf-json results files (e.g. one per backend)",
        description="Print one table of the results in RESULTS (files written by `pytest "
        "--kerasperf-json`, e.g. one per backend from a CI run): backend, test, mode, calls "
        "(Δ), graph breaks (Δ), latency (Δ %), verdict, and the run's verdict line. Results "
        "files are untrusted input (a fork's CI run): each is checked (strict JSON, the schema, "
        "counts that add up) and a bad one is a one-line error, exit 2. Exit 1 when the "
        "report shows a regression or an --expect'ed run has no results.",
    )
    report_parser.add_argument("results", nargs="*", type=Path, metavar="RESULTS.json")
    report_parser.add_argument(
        "--expect",
        nargs="+",
        metavar="RUN",
        help="the runs there must be results of, named backend[-setting] as the variant's "
        "settings say (torch jax jax-nnx tensorflow numpy openvino): a missing one is not "
        "green (exit 1), like a regression",
    )
    report_parser.add_argument(
        "--markdown",
        metavar="PATH",
        help="also write the report as Markdown to PATH ('-': to stdout instead of the table; "
        "e.g. >> $GITHUB_STEP_SUMMARY)",
    )
    report_parser.add_argument(
        "--article",
        action="store_true",
        help="print the article's views instead (docs/article-report.md): every config and "
        "workload's latency against the baseline and the plain framework, Python calls per "
        "backend, graph breaks per compiled model, hot functions by family",
    )
    report_parser.add_argument(
        "--families",
        type=Path,
        metavar="PATH",
        help="with --article: the hot-function families mapping (TOML; default: the bundled "
        "pytest_kerasperf/report/families.toml)",
    )
    report_parser.add_argument(
        "--charts",
        type=Path,
        metavar="DIR",
        help="with --article: also draw the latency and calls charts as PNG files in DIR "
        "(needs matplotlib)",
    )
    history.add_parsers(commands)  # sweep, sweep-merge, bisect (docs/history.md)
    return parser


def article_report(
    paths: Sequence[Path], families: Path | None, charts_dir: Path | None, markdown_path: str | None
) -> tuple[list[str], str, list[Path]]:
    """The article's views of several results files: terminal lines, Markdown, charts written."""
    from pytest_kerasperf.report import article, charts

    mapping = article.load_families(families)
    results: list[dict[str, Any]] = []
    origin: dict[tuple[str, str], Path] = {}
    for path in paths:
        for result in _load_document(path)["results"]:
            at = (str(result["backend"]), str(result["key"]))
            if at in origin:
                raise InputError(
                    f"{path}: {at[1]} ({at[0]}) is also in {origin[at]}: "
                    "report one results file per backend of one run"
                )
            origin[at] = path
            results.append(result)
    if not results:
        raise InputError("no result to report: " + ", ".join(map(str, paths)))
    try:
        views = article.build(results, mapping)
    except ValueError as error:
        raise InputError(str(error)) from None
    written = charts.write(views, charts_dir) if charts_dir is not None else []
    if markdown_path and markdown_path != "-":
        where = Path(markdown_path).resolve().parent
        shown = [Path(os.path.relpath(p.resolve(), where)).as_posix() for p in written]
    else:
        shown = [p.as_posix() for p in written]
    return article.terminal_lines(views), article.markdown(views, shown), written


def _report_article(args: argparse.Namespace) -> int:
    from pytest_kerasperf.report.article import FamiliesError
    from pytest_kerasperf.report.charts import ChartsUnavailable

    try:
        lines, text, written = article_report(
            args.results, args.families, args.charts, args.markdown
        )
        if args.markdown and args.markdown != "-":
            Path(args.markdown).write_text(text, encoding="utf-8")
    except (InputError, FamiliesError, ChartsUnavailable) as error:
        print(f"kerasperf report: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as error:
        print(f"kerasperf report: error: {error.filename}: {error.strerror}", file=sys.stderr)
        return EXIT_BAD_INPUT
    chart_lines = [f"chart: {path}" for path in written]
    if args.markdown == "-":
        print(text)
        if chart_lines:
            print("\n".join(chart_lines), file=sys.stderr)
    else:
        print("\n".join(lines + ([""] if chart_lines else []) + chart_lines))
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command in history.COMMANDS:
        return history.main(args)
    if args.command == "report" and args.article:
        return _report_article(args)
    if args.command == "report":
        if args.families is not None or args.charts is not None:
            parser.error("--families and --charts go with --article")
        try:
            shown = report(args.results, args.expect or ())
        except InputError as error:
            print(f"kerasperf report: error: {error}", file=sys.stderr)
            return EXIT_BAD_INPUT
        if args.markdown == "-":
            print(shown.markdown)
        else:
            print("\n".join(shown.lines))
            if args.markdown:
                try:
                    Path(args.markdown).write_text(shown.markdown + "\n", encoding="utf-8")
                except OSError as error:
                    print(
                        f"kerasperf report: error: {args.markdown}: cannot write: {error.strerror}",
                        file=sys.stderr,
                    )
                    return EXIT_BAD_INPUT
        problems = []
        if shown.regressions:
            problems.append(
                f"{shown.regressions} regression{'s' if shown.regressions != 1 else ''}"
            )
        if shown.missing:
            problems.append(f"no results for {', '.join(shown.missing)}")
        if problems:
            print(f"kerasperf report: not green: {'; '.join(problems)}", file=sys.stderr)
            return EXIT_NOT_GREEN
        return EXIT_OK
    if args.command == "accept":
        baseline_dir = args.baseline_dir or default_baseline_dir(Path.cwd())
        try:
            lines = accept(args.results, baseline_dir, args.latency_tolerance)
        except InputError as error:
            print(f"kerasperf accept: error: {error}", file=sys.stderr)
            return EXIT_BAD_INPUT
        print("\n".join(lines))
    return EXIT_OK
