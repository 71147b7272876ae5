"""``kerasperf audit``: the same perf tests measured in several orders, compared record by record.

A count must follow the code alone, never what ran before it in the process
(``measure.canonical``).  One pytest run per order writes its results file into ``--out``;
every test's record in each order is compared with the first order's (``isolated``), exact
metric by exact metric, and a difference names the test, the two orders, the calls and where
they moved.  Exit 0 when every record agrees and every run passed, 1 when not, 2 on bad usage
(docs/reference.md; its tables for every variant: docs/exact-counts.md).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_kerasperf.record import Record

XDIST = ("load", "loadfile", "loadscope", "worksteal")
#: order -> the pytest arguments that make it (``{workers}``, ``{seed}``: the options')
ORDERS: dict[str, tuple[str, ...]] = {
    "isolated": ("--kerasperf-isolate",),
    "gate": (),
    "reverse": ("--reverse",),  # pytest-reverse
    "random": ("--random-order-bucket=global", "--random-order-seed={seed}"),  # pytest-random-order
    **{dist: ("-n", "{workers}", "--dist", dist) for dist in XDIST},  # pytest-xdist
    "shards": (),  # --shards processes, each --kerasperf-shard K/N
}
DEFAULT_ORDERS = ("isolated", "gate", "reverse", "random", "loadfile", "load", "shards")
DEFAULT_SELECTION = ("--pyargs", "pytest_kerasperf.suite", "pytest_kerasperf.census")
#: where calls moved: how many entry points a difference names
SHOWN_ENTRY_POINTS = 2


@dataclass
class Run:
    """One order's runs: their results files, exit statuses and seconds."""

    order: str
    arguments: list[str]
    paths: list[Path] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    seconds: float = 0.0
    records: dict[str, Record] = field(default_factory=dict)  # key -> its record
    error: str | None = None


@dataclass(frozen=True)
class Difference:
    key: str
    reference: str
    order: str
    what: tuple[str, ...]  # the exact metrics' words: "calls 5,216 -> 5,260 (+44)"
    where: tuple[str, ...]  # entry points, described


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "audit",
        help="measure the same perf tests in several orders and xdist modes and compare "
        "every record (counts must not follow test order)",
        description="Run the selection (after --; default: the bundled suite and census) "
        "once per order, each writing its results file into --out, and compare every test's "
        "record with the first order's (isolated: each test in a process of its own). Exit 0 "
        "when every record agrees and every run passed, 1 otherwise. Needs PYTHONHASHSEED=0.",
    )
    parser.add_argument(
        "--orders",
        default=",".join(DEFAULT_ORDERS),
        help=f"comma-separated, the first is the reference; of: {', '.join(ORDERS)}",
    )
    parser.add_argument("--seed", type=int, default=1, help="random order's seed (default 1)")
    parser.add_argument("--workers", default="2", help="xdist workers (-n; default 2)")
    parser.add_argument("--shards", type=int, default=3, help="shards order: N (default 3)")
    parser.add_argument("--out", type=Path, default=Path("kerasperf-audit"), help="results dir")
    parser.add_argument("--markdown", type=Path, help="write the audit's tables to PATH")
    parser.add_argument("--json", type=Path, help="write the audit's figures to PATH")
    parser.add_argument("pytest_args", nargs="*", help="after --: the selection and options")


def main(args: argparse.Namespace) -> int:
    orders = [order.strip() for order in args.orders.split(",") if order.strip()]
    unknown = [order for order in orders if order not in ORDERS]
    if unknown or not orders:
        known = ", ".join(ORDERS)
        sys.stderr.write(f"kerasperf audit: unknown order {', '.join(unknown)}; of {known}\n")
        return 2
    if os.environ.get("PYTHONHASHSEED") != "0":
        sys.stderr.write("kerasperf audit: needs PYTHONHASHSEED=0, as every measuring run\n")
        return 2
    selection = list(args.pytest_args) or list(DEFAULT_SELECTION)
    args.out.mkdir(parents=True, exist_ok=True)
    runs = [run_order(order, selection, args) for order in orders]
    differences = compare(runs)
    text = render(runs, differences, os.environ.get("KERAS_BACKEND", "?"))
    print(text)
    if args.markdown is not None:
        args.markdown.write_text(text + "\n", encoding="utf-8")
    if args.json is not None:
        import msgspec

        args.json.write_bytes(msgspec.json.encode(figures(runs, differences)))
    failed = any(run.error or any(run.statuses) for run in runs)
    return 1 if differences or failed else 0


def run_order(order: str, selection: Sequence[str], args: argparse.Namespace) -> Run:
    """The pytest runs of one order (a process, or ``--shards`` of them)."""
    made = [word.format(workers=args.workers, seed=args.seed) for word in ORDERS[order]]
    run = Run(order, made)
    parts = [[*made, f"--kerasperf-shard={k}/{args.shards}"] for k in range(1, args.shards + 1)]
    started = time.perf_counter()
    for index, extra in enumerate(parts if order == "shards" else [made]):
        path = args.out / (f"{order}-{index + 1}.json" if order == "shards" else f"{order}.json")
        path.unlink(missing_ok=True)
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--kerasperf"]
        command += [*extra, f"--kerasperf-json={path}", *selection]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        run.paths.append(path)
        run.statuses.append(done.returncode)
        if not path.exists():
            tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
            run.error = f"no results file ({' | '.join(tail)})"
    run.seconds = time.perf_counter() - started
    if run.error is None:
        run.records, run.error = read_records(run.paths)
    return run


def read_records(paths: Sequence[Path]) -> tuple[dict[str, Record], str | None]:
    """Key -> record of every measured test in the results files (checked as any results
    file is), or the line saying why they cannot be read."""
    from pytest_kerasperf.results_file import InputError, load_results

    try:
        outcomes = [outcome for path in paths for outcome in load_results(path).outcomes]
    except InputError as error:
        return {}, str(error)
    return {outcome.key: outcome.record for outcome in outcomes}, None


def compare(runs: Sequence[Run]) -> list[Difference]:
    """Every record of each order against the reference order's (the first), exact metrics."""
    from pytest_kerasperf.metrics import METRICS
    from pytest_kerasperf.metrics.calls import CallsChange

    exact = [metric for metric in METRICS if metric.exact]
    reference, found = runs[0], []
    for run in runs[1:]:
        if run.error is None and reference.error is None:
            # a test measured in one order and skipped or failed in the other moved too
            for key in sorted(reference.records.keys() ^ run.records.keys()):
                only = reference.order if key in reference.records else run.order
                found.append(
                    Difference(key, reference.order, run.order, (f"measured in {only} only",), ())
                )
        for key in sorted(reference.records.keys() & run.records.keys()):
            before, after = reference.records[key], run.records[key]
            moved = [m for m in exact if m.counts_moved(before, after)]
            if not moved:
                continue
            what = tuple(word for m in moved for word in m.moved_words(before, after))
            calls = next((m.compare(before, after) for m in moved if m.name == "calls"), None)
            where: tuple[str, ...] = ()
            if isinstance(calls, CallsChange):
                where = tuple(p.describe() for p in calls.entry_points[:SHOWN_ENTRY_POINTS])
                if not where and calls.function_diff:
                    where = tuple(
                        f"{name} {old:,} -> {new:,}"
                        for name, old, new in calls.function_diff[:SHOWN_ENTRY_POINTS]
                    )
            found.append(Difference(key, reference.order, run.order, what, where))
    return found


def render(runs: Sequence[Run], differences: Sequence[Difference], backend: str) -> str:
    from pytest_kerasperf.formatting import escape

    reference = runs[0]
    lines = [
        f"## kerasperf audit: {backend}",
        "",
        f"Every record compared with the `{reference.order}` order's.",
        "",
        "| order | pytest options | exit | s | measured | compared | differ |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        compared = len(reference.records.keys() & run.records.keys())
        options = " ".join(run.arguments) or "(as given)"
        if run.order == "shards":
            options = f"--kerasperf-shard K/{len(run.paths)}, each K"
        differ = "-" if run is reference else str(sum(d.order == run.order for d in differences))
        lines.append(
            f"| {run.order} | `{options}` | {','.join(map(str, run.statuses))} | "
            f"{run.seconds:.0f} | {len(run.records)} | "
            f"{'-' if run is reference else compared} | {differ} |"
        )
    for run in runs:
        if run.error:
            lines.append(f"\n{run.order}: could not be read: {escape(run.error)}")
    if differences:
        lines += ["", "| test | orders | what moved | where |", "|---|---|---|---|"]
        for d in differences:
            lines.append(
                f"| `{escape(d.key)}` | {d.reference} → {d.order} | "
                f"{escape('; '.join(d.what))} | {escape('; '.join(d.where)) or '-'} |"
            )
    total = sum(len(reference.records.keys() & run.records.keys()) for run in runs[1:])
    lines += [
        "",
        f"kerasperf audit: {total} records compared with {reference.order}'s, "
        f"{len(differences)} differ",
    ]
    return "\n".join(lines)


def figures(runs: Sequence[Run], differences: Sequence[Difference]) -> dict[str, object]:
    return {
        "runs": [
            {
                "order": run.order,
                "arguments": run.arguments,
                "statuses": run.statuses,
                "seconds": round(run.seconds, 1),
                "measured": len(run.records),
                "error": run.error,
            }
            for run in runs
        ],
        "differences": [
            {"key": d.key, "orders": [d.reference, d.order], "what": d.what, "where": d.where}
            for d in differences
        ],
    }
