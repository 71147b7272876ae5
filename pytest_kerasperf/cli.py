"""The ``kerasperf`` command (``python -m pytest_kerasperf``): accept, report, publish.

``kerasperf accept RESULTS.json...`` writes baseline entries from
``--kerasperf-json`` files, e.g. downloaded from a CI run measured with the
pinned versions, as PyTorch's compile benchmarks accept CI results: the same
validation, the same "rewrite only what moved" rule, the same file lock and
atomic write, and the same change listing as ``--kerasperf-update-baseline``.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_kerasperf import audit, baseline, callgrind, diff_coverage, environment, options
from pytest_kerasperf.baseline_names import DEFAULT_TABLES
from pytest_kerasperf.option_types import tolerance
from pytest_kerasperf.record import Record
from pytest_kerasperf.report import combined, terminal
from pytest_kerasperf.results_file import Group, InputError, collect
from pytest_kerasperf.settings import LATENCY_TOLERANCE, Settings

EXIT_OK = 0
EXIT_NOT_GREEN = 1  # kerasperf report: a regression shown, or an expected run missing
EXIT_BAD_INPUT = 2


def ini_options(cwd: Path) -> options.Options:
    """The options a ``pytest`` started in ``cwd`` would have from its ini file alone (found
    as pytest finds it: pytest's own lookup, not a copy of it)."""
    import pytest

    return options.options(pytest.Config.fromdictargs({}, [str(cwd)]))


def accept(
    paths: Sequence[Path],
    baseline_dir: Path,
    settings: Settings,
    tables: tuple[str, ...] = DEFAULT_TABLES,
) -> list[str]:
    """Write the records of the results files into the baseline files; the change listing.

    ``settings``: the tolerances an update keeps a stored latency or count under (the
    ini's, as ``--kerasperf-update-baseline`` reads them).  Nothing is written unless every
    results file and every baseline file it would change is valid.
    """
    by_group, lines = collect(paths)
    if not by_group:
        raise InputError("no result to accept: " + ", ".join(map(str, paths)))
    stores = {
        group: baseline.Baselines(baseline_dir, group[0], group[1], tables)
        for group in sorted(by_group)
    }
    try:
        for store in stores.values():
            baseline.refuse_legacy(store.root, store.backend)
            entries = store.load()  # every file it would change, validated before any write
            store.refuse_shared_files([*entries, *by_group[(store.backend, store.variant)]])
    except baseline.BaselineError as error:
        raise InputError(str(error)) from None
    for write in (False, True):  # every file checked (its size too) before the first is written
        lines += _update(stores, by_group, settings, write)
    return lines


def _update(
    stores: dict[Group, baseline.Baselines],
    by_group: dict[Group, dict[str, Record]],
    settings: Settings,
    write: bool,
) -> list[str]:
    lines: list[str] = []
    for group, store in stores.items():
        under = dataclasses.replace(settings, mismatch=environment.mismatch_for(group[0]))
        try:
            changes = store.update(by_group[group], under, write=write)
        except baseline.BaselineError as error:
            raise InputError(str(error)) from None
        except OSError as error:
            raise InputError(f"{store.directory}: cannot write: {error.strerror}") from None
        if not write:
            continue
        lines.append(f"baseline {store.directory}:")
        lines += [terminal.change_line(change) for change in changes]
    return lines


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
        metavar="FRACTION",
        help="a stored latency is kept unless the new median moved by more than this "
        f"(default: kerasperf_latency_tolerance of the ini file, else {LATENCY_TOLERANCE:.2f})",
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
        "--coverage",
        metavar="BASE..HEAD",
        help="add the perf coverage of this git range of the Keras repository --repo: the "
        "changed functions of keras/src that no perf test of RESULTS executes, and the tests "
        "that watch each other one (docs/census.md#perf-coverage-of-a-diff)",
    )
    report_parser.add_argument(
        "--repo",
        type=Path,
        default=Path("."),
        help="with --coverage: the Keras repository (default: the current directory)",
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
        "kerasperf_lab/publish/families.toml)",
    )
    report_parser.add_argument(
        "--charts",
        type=Path,
        metavar="DIR",
        help="with --article: also draw the latency and calls charts as PNG files in DIR "
        "(needs matplotlib)",
    )
    diff_coverage.add_parser(commands)  # a diff's functions no perf test runs (docs/census.md)
    for entry in _lab("pytest_kerasperf.commands"):  # the lab's: sweep, bisect, ab, prs, publish
        entry.load()(commands)
    callgrind.add_parser(commands)  # pytest under callgrind (docs/instructions.md)
    audit.add_parser(commands)  # the same tests in several orders (docs/exact-counts.md)
    return parser


def _lab(group: str) -> list[importlib.metadata.EntryPoint]:
    """The lab's entry points of ``group`` (``kerasperf_lab``, installed with the plugin; it
    registers itself here, and the plugin never imports it)."""
    return sorted(importlib.metadata.entry_points(group=group), key=lambda entry: entry.name)


def _report_article(args: argparse.Namespace) -> int:
    for entry in _lab("pytest_kerasperf.report"):
        if entry.name == "article":
            status: int = entry.load()(args)
            return status
    print("kerasperf report: error: --article needs the lab (kerasperf_lab)", file=sys.stderr)
    return EXIT_BAD_INPUT


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    run = getattr(args, "run", None)
    if run is not None:  # a lab command
        status: int = run(args)
        return status
    own = {"coverage": diff_coverage.main, "callgrind": callgrind.main, "audit": audit.main}
    if args.command in own:
        return own[args.command](args)
    if args.command == "report" and args.article:
        return _report_article(args)
    if args.command == "report":
        if args.families is not None or args.charts is not None:
            parser.error("--families and --charts go with --article")
        try:
            shown = combined.report(args.results, args.expect or (), args.coverage, args.repo)
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
        found, latency = ini_options(Path.cwd()), args.latency_tolerance
        settings = Settings(
            latency_tolerance=found.latency_tolerance if latency is None else latency,
            instructions_tolerance=found.instructions_tolerance,
            instructions_floor=found.instructions_floor,
        )
        try:
            lines = accept(
                args.results, args.baseline_dir or found.baseline_dir, settings, found.tables
            )
        except InputError as error:
            print(f"kerasperf accept: error: {error}", file=sys.stderr)
            return EXIT_BAD_INPUT
        print("\n".join(lines))
    return EXIT_OK
