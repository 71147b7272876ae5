"""The lab's publishing commands: ``kerasperf publish`` (one HTML page of results files,
sweeps and per-PR tables: docs/publish.md) and ``kerasperf report --article`` (the article's
views of results files: docs/article-report.md)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_kerasperf import baseline
from pytest_kerasperf.cli import EXIT_BAD_INPUT, EXIT_OK
from pytest_kerasperf.outcome import Outcome
from pytest_kerasperf.results_file import InputError, load_results


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "publish",
        help="one self-contained HTML page of results files, sweeps and per-PR tables",
        description="Write one HTML page (no server, nothing fetched when viewed) of INPUT "
        "files, each recognised by its content: results files (`pytest --kerasperf-json`), "
        "sweeps (`kerasperf sweep --json`) and per-PR tables (kerasperf-prs/3). Inputs are "
        "untrusted: a bad one is a one-line error, exit 2, and nothing is written "
        "(docs/publish.md).",
    )
    parser.add_argument("inputs", nargs="+", type=Path, metavar="INPUT")
    parser.add_argument(
        "-o", "--output", type=Path, required=True, metavar="PAGE.html", help="the page to write"
    )
    parser.add_argument(
        "--title", default="kerasperf", metavar="TEXT", help="the page's title (kerasperf)"
    )
    parser.set_defaults(run=main)


def article_report(
    paths: Sequence[Path], families: Path | None, charts_dir: Path | None, markdown_path: str | None
) -> tuple[list[str], str, list[Path]]:
    """The article's views of several results files: terminal lines, Markdown, charts written."""
    from kerasperf_lab.publish import article, article_render, charts

    mapping = article.load_families(families)
    results: list[Outcome] = []
    origin: dict[tuple[str, str], Path] = {}
    for path in paths:
        for result in load_results(path).outcomes:
            at = (result.backend, result.key)
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
    shown = [p.as_posix() for p in written]
    if markdown_path and markdown_path != "-":
        where = Path(markdown_path).resolve().parent
        shown = [Path(os.path.relpath(p.resolve(), where)).as_posix() for p in written]
    return article_render.terminal_lines(views), article_render.markdown(views, shown), written


def report_article(args: argparse.Namespace) -> int:
    """``kerasperf report --article``: the article's views, and with ``--charts`` its PNGs."""
    from kerasperf_lab.publish.charts import ChartsUnavailable
    from kerasperf_lab.publish.families import FamiliesError

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


def publish(paths: Sequence[Path], output: Path, title: str) -> str:
    """The HTML page of the inputs, each recognised by its content (docs/publish.md)."""
    from kerasperf_lab.publish import article, html_page, publish_prs
    from kerasperf_lab.publish import publish as rows
    from pytest_kerasperf import untrusted

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
    # what the page calls each input: its file name, with its folder where two share one
    names = [path.name for path in paths]
    for path in paths:
        name = path.name if names.count(path.name) == 1 else f"{path.parent.name}/{path.name}"
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
            elif isinstance(data, dict) and data.get("schema") in rows.SWEEP_SCHEMAS:
                sweeps.append(rows.sweep_from_json(name, data, where=str(path)))
                rows.check_page(str(path), points, sweeps)
                inputs.append((name, "sweep"))
            elif isinstance(data, dict) and data.get("schema") in publish_prs.PRS_SCHEMAS:
                tables.append(publish_prs.prs_from_json(name, data, where=str(path)))
                inputs.append((name, "per-PR table"))
            else:
                raise InputError(
                    f"{path}: not a results file (--kerasperf-json), a sweep "
                    f"({rows.SWEEP_SCHEMAS[-1]}) or a per-PR table ({publish_prs.PRS_SCHEMA})"
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


def main(args: argparse.Namespace) -> int:
    """``kerasperf publish``: write the page; the exit status."""
    from kerasperf_lab.publish.html_figures import PlotlyUnavailable

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
