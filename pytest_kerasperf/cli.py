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
import sys
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_kerasperf import baseline, environment, history
from pytest_kerasperf.options import tolerance
from pytest_kerasperf.record import Record
from pytest_kerasperf.report import markdown, terminal

EXIT_OK = 0
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


def _load_document(path: Path) -> dict[str, Any]:
    import jsonschema

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise InputError(f"{path}: cannot read: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise InputError(
            f"{path}: not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})"
        ) from None
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
            f"{path}: not a pytest-kerasperf results file (--kerasperf-json, schema version 2): "
            f"at {where}: {errors[0].message}"
        )
    document: dict[str, Any] = data
    return document


def _load_results(path: Path) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = _load_document(path)["results"]
    return results


def collect(paths: Sequence[Path]) -> tuple[dict[str, dict[str, Record]], list[str]]:
    """backend -> key -> record from every results file; lines about what was left out."""
    by_backend: dict[str, dict[str, Record]] = {}
    origin: dict[tuple[str, str], Path] = {}
    left_out: list[str] = []
    for path in paths:
        raw: dict[str, dict[str, Any]] = {}
        for result in _load_results(path):
            if result["test_failed"]:
                left_out.append(
                    f"{path}: {result['key']}: the test failed on its own; not accepted"
                )
                continue
            backend = str(result["backend"])
            key = str(result["key"])
            if (backend, key) in origin:
                raise InputError(
                    f"{path}: {key} ({backend}) is also in {origin[(backend, key)]}: "
                    "accept one results file per backend and run"
                )
            origin[(backend, key)] = path
            raw.setdefault(backend, {})[key] = result["record"]
        for backend, entries in raw.items():
            try:
                baseline.check_entries(backend, entries, str(path))
            except baseline.BaselineError as error:
                raise InputError(str(error)) from None
            for key, data in entries.items():
                by_backend.setdefault(backend, {})[key] = Record.from_json(data)
    return by_backend, left_out


def accept(paths: Sequence[Path], baseline_dir: Path, latency_tolerance: float) -> list[str]:
    """Write the records of the results files into the baseline files; the change listing."""
    by_backend, lines = collect(paths)
    if not by_backend:
        raise InputError("no result to accept: " + ", ".join(map(str, paths)))
    for backend, records in sorted(by_backend.items()):
        path = baseline.baseline_path(baseline_dir, backend)
        policy = baseline.UpdatePolicy(
            latency_tolerance=latency_tolerance, mismatch=environment.mismatch_for(backend)
        )
        try:
            changes = baseline.update(path, backend, records, policy)
        except baseline.BaselineError as error:
            raise InputError(str(error)) from None
        except OSError as error:
            raise InputError(f"{path}: cannot write: {error.strerror}") from None
        lines.append(f"baseline {path}:")
        lines += [terminal.change_line(change) for change in changes]
    return lines


def report(paths: Sequence[Path]) -> tuple[list[str], str]:
    """One table of several runs' results (e.g. one per backend): terminal lines, Markdown."""
    results: list[dict[str, Any]] = []
    not_measured = 0
    stale: list[str] = []
    for path in paths:
        document = _load_document(path)
        results += document["results"]
        summary = document["summary"] or {}
        not_measured += sum(summary.get("not_measured", {}).values())
        stale += [f"{_backend_of(document)}: {key}" for key in summary.get("stale", [])]
    if not results:
        raise InputError("no result to report: " + ", ".join(map(str, paths)))
    lines = terminal.results_table(results, by_backend=True)
    lines.append(markdown.verdict_line(results, not_measured, len(stale)).replace("**", ""))
    backends = sorted({r["record"]["backend"] for r in results})
    text = markdown.render(
        results,
        title=f"kerasperf ({', '.join(backends)})",
        not_measured=not_measured,
        stale=stale,
    )
    return lines, text


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
        "(Δ), graph breaks (Δ), latency (Δ %), verdict, and the run's verdict line.",
    )
    report_parser.add_argument("results", nargs="+", type=Path, metavar="RESULTS.json")
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
            lines, text = report(args.results)
        except InputError as error:
            print(f"kerasperf report: error: {error}", file=sys.stderr)
            return EXIT_BAD_INPUT
        if args.markdown == "-":
            print(text)
            return EXIT_OK
        print("\n".join(lines))
        if args.markdown:
            Path(args.markdown).write_text(text + "\n", encoding="utf-8")
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
