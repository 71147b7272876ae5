"""The noise floor of instruction counts on small workloads: an A/A over many processes.

Counts a few small census workloads (an op, a layer, a metric, an optimizer step, a loss,
``predict_on_batch`` of the census's two-``Dense`` model) under ``kerasperf callgrind`` in
``--processes`` processes, each started differently: from a working directory whose name
is 8 to 80 characters long and with an environment padded by 0 to 1,500 characters (what
moves where Python's objects lie, docs/instructions.md). Nothing changes between them, so
every difference between two processes' counts of one workload is noise, and each ordered
pair of processes is one A/A comparison the gate could make. For each workload it prints
the counts' range, and how many pairs a gate would fail (a count above its recorded one
beyond the threshold) at the relative tolerance alone and with an absolute floor
(``--kerasperf-instructions-floor``): the threshold is ``max(tolerance * recorded, floor)``.

    .venv/bin/python benchmarks/instructions_floor.py --processes 12 --out floor.json \
        [--mmap-threshold 0]
    .venv/bin/python benchmarks/instructions_floor.py --summary-of floor.json --floor 20000

Each process's results file is kept in ``--out``'s directory as it finishes, so an
interrupted run keeps what it counted (``--summary-of`` reads them).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CENSUS = Path(__file__).resolve().parents[1] / "pytest_kerasperf" / "census"
WORKLOADS = (
    "test_census_ops.py::test_op[ops.add]",
    "test_census_layers.py::test_layer[layers.Dense]",
    "test_census_layers.py::test_layer[layers.LSTM]",
    "test_census_api.py::test_api[metrics.AUC]",
    "test_census_api.py::test_api[optimizers.Adam]",
    "test_census_api.py::test_api[losses.MeanSquaredError]",
    "test_census_model.py::test_model[Model.predict_on_batch[sequential]]",
)
TOLERANCE = 0.001  # the gate's default --kerasperf-instructions-tolerance


def count_once(index: int, processes: int, out: Path, backend: str, mmap_threshold: int) -> Path:
    """One process under callgrind, started from its own directory and environment."""
    target = out.parent / f"{out.stem}-{index:02d}.json"
    name = "d" * (8 + (72 * index) // max(1, processes - 1))
    with tempfile.TemporaryDirectory() as scratch:
        cwd = Path(scratch) / name
        cwd.mkdir()
        env = dict(os.environ, KERAS_BACKEND=backend, PYTHONHASHSEED="0")
        env["KERASPERF_AA_PADDING"] = "p" * ((1500 * index) // max(1, processes - 1))
        command = [
            sys.executable, "-m", "pytest_kerasperf", "callgrind",
            f"--mmap-threshold={mmap_threshold}", "--",
            "-p", "no:cacheprovider", "-q", "--kerasperf",
            f"--kerasperf-baseline-dir={cwd / 'empty-baselines'}",
            f"--kerasperf-json={target}",
            *(str(CENSUS / workload) for workload in WORKLOADS),
        ]  # fmt: skip
        started = time.monotonic()
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
        took = time.monotonic() - started
    if done.returncode != 0 or not target.is_file():
        sys.exit(f"process {index}: exit {done.returncode}\n{done.stdout[-3000:]}{done.stderr}")
    print(f"process {index + 1}/{processes}: {took:.0f} s", file=sys.stderr, flush=True)
    return target


def counts_of(files: list[Path]) -> dict[str, list[int]]:
    """workload -> its median count in each process (the process order kept)."""
    counts: dict[str, list[int]] = {}
    for path in files:
        for result in json.loads(path.read_text(encoding="utf-8"))["results"]:
            instructions = result["record"].get("instructions")
            if instructions is not None:
                counts.setdefault(result["key"], []).append(int(instructions["median"]))
    return counts


def alarms(values: list[int], tolerance: float, floor: int) -> tuple[int, int]:
    """(false alarms, comparisons): ordered pairs whose second count exceeds the first
    beyond ``max(tolerance * first, floor)``."""
    pairs = list(itertools.permutations(values, 2))
    failed = sum(1 for then, now in pairs if now - then > max(tolerance * then, floor))
    return failed, len(pairs)


def summary(counts: dict[str, list[int]], floor: int) -> dict[str, Any]:
    rows = []
    for key, values in sorted(counts.items()):
        low, high = min(values), max(values)
        relative, relative_n = alarms(values, TOLERANCE, 0)
        floored, floored_n = alarms(values, TOLERANCE, floor)
        rows.append(
            {
                "workload": key,
                "processes": len(values),
                "low": low,
                "high": high,
                "spread": high - low,
                "spread_pct": 100 * (high - low) / low,
                "false_alarms_tolerance": [relative, relative_n],
                "false_alarms_with_floor": [floored, floored_n],
            }
        )
    return {"tolerance": TOLERANCE, "floor": floor, "workloads": rows}


def print_table(result: dict[str, Any]) -> None:
    print(
        f"| workload | processes | instructions per call | spread | false alarms at "
        f"{result['tolerance']:.1%} | with a floor of {result['floor']:,} |"
    )
    print("|---|---|---|---|---|---|")
    for row in result["workloads"]:
        a, n = row["false_alarms_tolerance"]
        b, m = row["false_alarms_with_floor"]
        print(
            f"| `{row['workload'].split('::', 1)[1]}` | {row['processes']} | {row['low']:,} … "
            f"{row['high']:,} | {row['spread']:,} ({row['spread_pct']:.3f} %) | {a} of {n} | "
            f"{b} of {m} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=12)
    parser.add_argument("--backend", default="numpy")
    parser.add_argument(
        "--mmap-threshold", type=int, default=1024, help="kerasperf callgrind --mmap-threshold"
    )
    parser.add_argument("--out", type=Path, default=Path("instructions-floor.json"))
    parser.add_argument("--floor", type=int, default=20_000, help="the floor to evaluate")
    parser.add_argument("--summary-of", type=Path, help="summarize the processes of this --out")
    args = parser.parse_args()
    out: Path = (args.summary_of or args.out).resolve()
    if args.summary_of is None:
        for index in range(args.processes):
            count_once(index, args.processes, out, args.backend, args.mmap_threshold)
    files = sorted(out.parent.glob(f"{out.stem}-[0-9][0-9].json"))
    result = summary(counts_of(files), args.floor)
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print_table(result)


if __name__ == "__main__":
    main()
