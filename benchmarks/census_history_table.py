"""The census over real history, beside the two-model suite: a Markdown table of a sweep.

Reads the JSON of ``kerasperf sweep --tests <the census's modules> <the suite's module>``
(one process per commit measures both; ``kerasperf-sweep/2``, read as the lab's
``SweepTable``) and prints, for each commit where a count moved,
how many of the suite's tests and of the census's changed (calls moved, or calls equal and
the functions that make them moved), the workloads that moved most, and the Keras functions
whose calls changed (the sweep's explanation):

    .venv/bin/python benchmarks/census_history_table.py sweep.json [--suite test_standard.py]

then a line per outcome: commits measured, commits where the suite saw a move, where the
census did, and where neither could measure (the commit did not import).
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import msgspec

from kerasperf_lab.history.steps import Step, SweepTable
from pytest_kerasperf.metrics.calls import CallsChange

#: workloads named per commit, the largest moves first
SHOWN = 4


def delta(step: Step) -> int:
    change = step.change(CallsChange)
    return change.delta if change else 0


def where(step: Step) -> str:
    """The functions whose calls changed, from the sweep's explanation: each group's caller
    (the Keras function that calls more or fewer), with its change."""
    change = step.change(CallsChange)
    groups = change.explanation.groups if change and change.explanation else ()
    named = [f"`{g.caller}` {g.delta:+,}" for g in groups[:2]]
    return f" ({', '.join(named)})" if named else ""


def table(sweep: SweepTable, suite: str) -> list[str]:
    order = [c.sha for c in sweep.commits]
    commits = {c.sha: c for c in sweep.commits}
    moved: dict[str, list[Step]] = defaultdict(list)
    failed: dict[str, str] = {}
    measured: set[str] = set()
    for step in sweep.steps:
        if step.error:
            failed[step.commit.sha] = step.error.splitlines()[0][:80]
            continue
        measured.add(step.commit.sha)
        if step.status == "changed":  # calls moved, or calls equal and functions moved
            moved[step.commit.sha].append(step)

    def in_suite(step: Step) -> bool:
        return (step.key or "").split("::", 1)[0] == suite

    lines = [
        "| commit | PR | the suite's tests changed | census tests changed | the largest census "
        "changes: calls, and the Keras functions where they changed |",
        "|---|---|---|---|---|",
    ]
    for sha in order:
        if sha not in moved:
            continue
        suite_steps = [s for s in moved[sha] if in_suite(s)]
        census = [s for s in moved[sha] if not in_suite(s)]
        largest = sorted(census, key=lambda s: -abs(delta(s)))[:SHOWN]
        shown = "; ".join(
            f"`{(s.key or '').split('::', 1)[1]}` {delta(s):+,}{where(s)}" for s in largest
        )
        commit = commits[sha]
        pr = f"#{commit.pr}" if commit.pr else "-"
        title = (commit.title or commit.subject).replace("|", "\\|")
        more = f"; and {len(census) - SHOWN} more" if len(census) > SHOWN else ""
        lines.append(
            f"| {sha[:10]} {title} | {pr} | {len(suite_steps)} | {len(census)} | {shown}{more} |"
        )
    suite_seen = sum(1 for steps in moved.values() if any(in_suite(s) for s in steps))
    census_seen = sum(1 for steps in moved.values() if not all(in_suite(s) for s in steps))
    lines += [
        "",
        f"{len(order)} commits; {len(measured)} measured; a test changed at {len(moved)}: "
        f"the suite's at {suite_seen}, the census's at {census_seen}; "
        f"{len(failed)} did not run ({', '.join(s[:10] for s in failed) or 'none'}).",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("sweep", type=Path, help="the JSON of kerasperf sweep --json")
    parser.add_argument("--suite", default="test_standard.py", help="the suite's test module")
    args = parser.parse_args()
    sweep = msgspec.json.decode(args.sweep.read_bytes(), type=SweepTable)
    print("\n".join(table(sweep, args.suite)))


if __name__ == "__main__":
    main()
