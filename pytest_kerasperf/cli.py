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
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_kerasperf import audit, baseline, callgrind, environment, history, options
from pytest_kerasperf.baseline_names import DEFAULT_TABLES
from pytest_kerasperf.option_types import tolerance
from pytest_kerasperf.outcome import Outcome
from pytest_kerasperf.record import Record
from pytest_kerasperf.report import combined, terminal
from pytest_kerasperf.results_file import Group, InputError, collect, load_results
from pytest_kerasperf.settings import LATENCY_TOLERANCE, Settings

EXIT_OK = 0
EXIT_NOT_GREEN = 1  # kerasperf report: a regression shown, or an expected run missing
EXIT_BAD_INPUT = 2


def default_baseline_dir(cwd: Path) -> Path:
    """The baseline directory a ``pytest`` started in ``cwd`` would use: its ini key
    ``kerasperf_baseline_dir`` (in whichever file pytest reads: pytest.ini, pyproject.toml,
    tox.ini, setup.cfg, found where pytest looks), relative to its rootdir; else
    ``<rootdir>/baselines``.  pytest's own lookup, not a copy of it."""
    return ini_options(cwd).baseline_dir


def ini_options(cwd: Path) -> options.Options:
    """The options a ``pytest`` started in ``cwd`` would have from its ini file alone."""
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
        "pytest_kerasperf/report/families.toml)",
    )
    report_parser.add_argument(
        "--charts",
        type=Path,
        metavar="DIR",
        help="with --article: also draw the latency and calls charts as PNG files in DIR "
        "(needs matplotlib)",
    )
    publish_parser = commands.add_parser(
        "publish",
        help="one self-contained HTML page of results files, sweeps and per-PR tables",
        description="Write one HTML page (no server, nothing fetched when viewed) of INPUT "
        "files, each recognised by its content: results files (`pytest --kerasperf-json`), "
        "sweeps (`kerasperf sweep --json`) and per-PR tables (kerasperf-prs/2). Inputs are "
        "untrusted: a bad one is a one-line error, exit 2, and nothing is written "
        "(docs/publish.md).",
    )
    publish_parser.add_argument("inputs", nargs="+", type=Path, metavar="INPUT")
    publish_parser.add_argument(
        "-o", "--output", type=Path, required=True, metavar="PAGE.html", help="the page to write"
    )
    publish_parser.add_argument(
        "--title", default="kerasperf", metavar="TEXT", help="the page's title (kerasperf)"
    )
    history.add_parsers(commands)  # sweep, sweep-merge, bisect (docs/history.md)
    callgrind.add_parser(commands)  # pytest under callgrind (docs/instructions.md)
    audit.add_parser(commands)  # the same tests in several orders (docs/exact-counts.md)
    return parser


def _report_article(args: argparse.Namespace) -> int:
    from pytest_kerasperf.report.article import FamiliesError
    from pytest_kerasperf.report.article_files import article_report
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


def _names(paths: Sequence[Path]) -> list[str]:
    """What the page calls each input: its file name, with its folder where two share one."""
    names = [path.name for path in paths]
    return [
        path.name if names.count(path.name) == 1 else f"{path.parent.name}/{path.name}"
        for path in paths
    ]


def publish(paths: Sequence[Path], output: Path, title: str) -> str:
    """The HTML page of the inputs, each recognised by its content (docs/publish.md)."""
    from pytest_kerasperf import untrusted
    from pytest_kerasperf.report import article, html_page, publish_prs
    from pytest_kerasperf.report import publish as rows

    resolved = [path.resolve() for path in paths]
    for index, path in enumerate(resolved):
        if path in resolved[:index]:
            raise InputError(f"{paths[index]}: given twice")
    if output.resolve() in resolved:
        raise InputError(f"{output}: is an input; the page would overwrite it")
    inputs: list[tuple[str, str]] = []
    points: list[rows.RunPoint] = []
    sweeps: list[rows.Sweep] = []
    tables: list[publish_prs.PublishedPrs] = []
    hot: dict[str, str] = {}  # backend -> the results file its hot functions come from
    hot_outcomes: list[Outcome] = []
    for path, name in zip(paths, _names(paths), strict=True):
        try:
            data = untrusted.read(path)
            if isinstance(data, dict) and "schema_version" in data and "results" in data:
                outcomes = load_results(path).outcomes
                points += rows.run_points(name, outcomes)
                rows.check_page(str(path), points, sweeps)
                inputs.append((name, "results file"))
                for outcome in outcomes:
                    if hot.setdefault(outcome.backend, name) == name:
                        hot_outcomes.append(outcome)
            elif isinstance(data, dict) and data.get("schema") == rows.SWEEP_SCHEMA:
                sweeps.append(rows.sweep_from_json(name, data, where=str(path)))
                rows.check_page(str(path), points, sweeps)
                inputs.append((name, "sweep"))
            elif isinstance(data, dict) and data.get("schema") == publish_prs.PRS_SCHEMA:
                tables.append(publish_prs.prs_from_json(name, data, where=str(path)))
                inputs.append((name, "per-PR table"))
            else:
                raise InputError(
                    f"{path}: not a results file (--kerasperf-json), a sweep "
                    f"({rows.SWEEP_SCHEMA}) or a per-PR table ({publish_prs.PRS_SCHEMA})"
                )
        except (untrusted.UntrustedInputError, rows.PublishError) as error:
            raise InputError(str(error)) from None
    try:
        hot_views = article.build(hot_outcomes, article.load_families()) if hot_outcomes else None
    except ValueError as error:  # one results file with the same test twice
        raise InputError(str(error)) from None
    page = html_page.Page(
        title=title,
        inputs=tuple(inputs),
        points=tuple(points),
        hot=hot_views,
        hot_runs=tuple(dict.fromkeys(hot.values())),
        sweeps=tuple(sweeps),
        prs=tuple(tables),
    )
    return html_page.render(page)


def _publish(args: argparse.Namespace) -> int:
    from pytest_kerasperf.report.html_figures import PlotlyUnavailable

    try:
        text = publish(args.inputs, args.output, args.title)
        baseline.write_atomic(args.output, text)
    except (InputError, PlotlyUnavailable) as error:
        print(f"kerasperf publish: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as error:
        print(
            f"kerasperf publish: error: {args.output}: cannot write: {error.strerror}",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    print(f"page: {args.output}")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command in history.COMMANDS:
        return history.main(args)
    if args.command == "callgrind":
        return callgrind.main(args)
    if args.command == "audit":
        return audit.main(args)
    if args.command == "publish":
        return _publish(args)
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
        found = ini_options(Path.cwd())
        tolerance_ = found.latency_tolerance
        if args.latency_tolerance is not None:
            tolerance_ = args.latency_tolerance
        settings = Settings(
            latency_tolerance=tolerance_,
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
