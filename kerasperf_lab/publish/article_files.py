"""``kerasperf report --article``: the article's views of several results files."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pytest_kerasperf.outcome import Outcome
from pytest_kerasperf.results_file import InputError, load_results


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
    if markdown_path and markdown_path != "-":
        where = Path(markdown_path).resolve().parent
        shown = [Path(os.path.relpath(p.resolve(), where)).as_posix() for p in written]
    else:
        shown = [p.as_posix() for p in written]
    return article_render.terminal_lines(views), article_render.markdown(views, shown), written
