"""``kerasperf report``: one table of several runs' results files (e.g. one per backend and
variant from a CI run), its Markdown, and with ``--coverage`` the perf coverage of a diff."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_kerasperf import environment
from pytest_kerasperf.outcome import Outcome
from pytest_kerasperf.report import markdown, terminal
from pytest_kerasperf.results_file import InputError, load_results


def run_name(outcome: Outcome) -> str:
    """``jax``, ``jax-nnx``: the backend, then the variant's settings after the device kind."""
    variant = outcome.variant or environment.variant_of(outcome.record.environment, outcome.backend)
    return "-".join([outcome.backend, *variant.split("-")[2:]])


@dataclass(frozen=True)
class Report:
    lines: list[str]  # the terminal table and verdict line
    markdown: str
    regressions: int
    missing: list[str]  # expected runs without results


def report(
    paths: Sequence[Path],
    expect: Sequence[str] = (),
    coverage: str | None = None,
    repo: Path = Path("."),
) -> Report:
    """One table of several runs' results (e.g. one per backend and variant); with
    ``coverage`` (``BASE..HEAD`` of ``repo``), the perf coverage of that diff after it."""
    results: list[Outcome] = []
    not_measured = 0
    stale: list[str] = []
    selections: list[str] = []  # --kerasperf-changed: what each run ran, and why
    sharded: dict[str, dict[int, set[int]]] = {}  # run -> N -> the shards K of N it has
    for path in paths:
        loaded = load_results(path)
        results += loaded.outcomes
        not_measured += loaded.not_measured
        stale += [f"{loaded.backends}: {key}" for key in loaded.stale]
        shard = loaded.summary.shard if loaded.summary else None
        changed = loaded.summary.changed if loaded.summary else None
        names = {run_name(outcome) for outcome in loaded.outcomes}
        if changed is not None:  # a run may have run no test: its file still says so
            names.add(changed.run)
            selections.append(f"{changed.run}: {terminal.changed_line(changed, prefix=False)}")
        k, n = shard or (1, 1)  # a whole run: shard 1 of 1
        for name in names:
            sharded.setdefault(name, {}).setdefault(n, set()).add(k)
    missing = [name for name in expect if name not in sharded]  # every run is in ``sharded``
    missing += missing_shards(sharded, expect)
    if not results and not expect:
        raise InputError("no result to report: " + ", ".join(map(str, paths)))
    lines = terminal.results_table(results, by_backend=True) if results else []
    lines.append(markdown.verdict_line(results, not_measured, len(stale)).replace("**", ""))
    lines += [f"kerasperf --kerasperf-changed: {line}" for line in selections]
    if missing:
        lines.append(f"kerasperf report: no results for {', '.join(missing)} (expected)")
    backends = sorted({r.backend for r in results})
    text = markdown.render(
        results,
        title=f"kerasperf ({', '.join(backends) or 'no results'})",
        not_measured=not_measured,
        stale=stale,
        missing=missing,
        selections=selections,
    )
    if coverage is not None:
        section, shown = _coverage(coverage, repo, results)
        lines += ["", *shown]
        text += "\n\n#### Perf coverage of this diff\n\n" + section
    regressions = sum(1 for r in results if r.category == "regression")
    return Report(lines, text, regressions, missing)


def missing_shards(sharded: dict[str, dict[int, set[int]]], expect: Sequence[str]) -> list[str]:
    """``torch shard 3/4`` for each shard of an expected run that no results file holds:
    a run split with --kerasperf-shard is whole only when every shard K of its N came back,
    or a results file of the whole run did."""
    missing = []
    for name in expect:
        counts = sharded.get(name, {})
        if 1 in counts:
            continue  # a whole run came back
        for count, found in sorted(counts.items()):
            missing += [f"{name} shard {k}/{count}" for k in range(1, count + 1) if k not in found]
    return missing


def _coverage(span: str, repo: Path, results: Sequence[Outcome]) -> tuple[str, list[str]]:
    """(Markdown, terminal lines) of the perf coverage of ``span``; where it cannot be read
    (no git, an unknown commit, no profile), one line that says why, and the gate's verdict
    is left as it is."""
    from pytest_kerasperf import diff_coverage as diff
    from pytest_kerasperf.ab.commits import HistoryError
    from pytest_kerasperf.formatting import escape

    try:
        found, what = diff.of_range(repo, span, results)
    except HistoryError as error:
        line = f"perf coverage of {span}: not computed: {error}"
        print(f"kerasperf report: {line}", file=sys.stderr)
        return f"❔ {escape(line)}", [line]
    markdown = diff.render(found, what, markdown=True).rstrip("\n")
    return markdown, diff.render(found, what).rstrip("\n").split("\n")
