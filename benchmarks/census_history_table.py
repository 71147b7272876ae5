"""The census over real history, beside the two-model suite: a Markdown table of a sweep.

Reads the JSON of ``kerasperf sweep --tests <the census's modules> <the suite's module>``
(one process per commit measures both) and prints, for each commit where a count moved,
how many of the suite's tests and of the census's changed (calls moved, or calls equal and
the functions that make them moved), the workloads that moved most, and the Keras functions
whose calls changed (the sweep's explanation):

    .venv/bin/python benchmarks/census_history_table.py sweep.json [--suite test_standard.py]

then a line per outcome: commits measured, commits where the suite saw a move, where the
census did, and where neither could measure (the commit did not import).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

#: workloads named per commit, the largest moves first
SHOWN = 4


def where(row: dict[str, Any]) -> str:
    """The functions whose calls changed, from the sweep's explanation: each group's caller
    (the Keras function that calls more or fewer), with its change."""
    groups = (row.get("explanation") or {}).get("groups") or []
    named = [f"`{g['caller']}` {g['delta']:+,}" for g in groups[:2]]
    return f" ({', '.join(named)})" if named else ""


def table(sweep: dict[str, Any], suite: str) -> list[str]:
    commits = {c["sha"]: c for c in sweep["commits"]}
    order = [c["sha"] for c in sweep["commits"]]
    moved: dict[str, list[dict[str, Any]]] = defaultdict(list)
    failed: dict[str, str] = {}
    measured: set[str] = set()
    for row in sweep["rows"]:
        if row.get("error"):
            failed[row["commit"]] = str(row["error"]).splitlines()[0][:80]
            continue
        measured.add(row["commit"])
        if row.get("status") == "changed":  # calls moved, or calls equal and functions moved
            moved[row["commit"]].append(row)
    lines = [
        "| commit | PR | the suite's tests changed | census tests changed | the largest census "
        "changes: calls, and the Keras functions where they changed |",
        "|---|---|---|---|---|",
    ]
    for sha in order:
        if sha not in moved:
            continue
        rows = moved[sha]
        in_suite = [r for r in rows if r["test"].split("::", 1)[0] == suite]
        in_census = [r for r in rows if r not in in_suite]
        largest = sorted(in_census, key=lambda r: -abs(r["calls_delta"] or 0))[:SHOWN]
        shown = "; ".join(
            f"`{r['test'].split('::', 1)[1]}` {r['calls_delta'] or 0:+,}{where(r)}" for r in largest
        )
        commit = commits[sha]
        pr = f"#{commit['pr']}" if commit.get("pr") else "-"
        title = commit["title"].replace("|", "\\|")
        more = f"; and {len(in_census) - SHOWN} more" if len(in_census) > SHOWN else ""
        lines.append(
            f"| {sha[:10]} {title} | {pr} | {len(in_suite)} | {len(in_census)} | {shown}{more} |"
        )
    suite_seen = sum(
        1 for sha in moved if any(r["test"].split("::", 1)[0] == suite for r in moved[sha])
    )
    census_seen = sum(
        1 for sha in moved if any(r["test"].split("::", 1)[0] != suite for r in moved[sha])
    )
    lines += [
        "",
        f"{len(order)} commits; {len(measured)} measured; a test changed at {len(moved)}: "
        f"the suite's at {suite_seen}, the census's at {census_seen}; "
        f"{len(failed)} did not run ({', '.join(s[:10] for s in failed) or 'none'}).",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sweep", type=Path, help="the JSON of kerasperf sweep --json")
    parser.add_argument("--suite", default="test_standard.py", help="the suite's test module")
    args = parser.parse_args()
    sweep = json.loads(args.sweep.read_text(encoding="utf-8"))
    print("\n".join(table(sweep, args.suite)))


if __name__ == "__main__":
    main()
