"""What installing pytest-kerasperf costs a pytest run that does not use it.

The pytest11 entry point loads ``pytest_kerasperf.plugin`` in every pytest
process of the environment.  This script times a trivial one-test pytest run
with the plugin loaded and with ``-p no:kerasperf``, alternating the two so
that drift of the machine hits both alike, and prints the medians and their
ratio (the target: at most 1.15).  Run it with the environment's Python:

    .venv/bin/python benchmarks/startup.py --runs 40
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TEST = "def test_one():\n    assert 1 + 1 == 2\n"


def time_run(args: list[str], cwd: Path) -> float:
    env = {**os.environ, "PYTHONHASHSEED": "0"}  # --kerasperf needs it; the others ignore it
    start = time.perf_counter()
    completed = subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False, env=env)
    elapsed = time.perf_counter() - start
    if completed.returncode != 0:
        raise SystemExit(
            f"{' '.join(args)} exited {completed.returncode}:\n{completed.stdout}{completed.stderr}"
        )
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="runs of each kind (30)")
    parser.add_argument(
        "--kerasperf", action="store_true", help="also time the plugin side with --kerasperf"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kerasperf-startup-") as name:
        cwd = Path(name)
        (cwd / "test_one.py").write_text(TEST)
        base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_one.py"]
        kinds = {"without (-p no:kerasperf)": [*base, "-p", "no:kerasperf"], "with": base}
        if args.kerasperf:
            kinds["with --kerasperf"] = [*base, "--kerasperf"]
        times: dict[str, list[float]] = {kind: [] for kind in kinds}
        for command in kinds.values():  # warm the file cache, not counted
            time_run(command, cwd)
        for _ in range(args.runs):
            for kind, command in kinds.items():
                times[kind].append(time_run(command, cwd))
    without = statistics.median(times["without (-p no:kerasperf)"])
    print(f"trivial one-test pytest run, {args.runs} runs each, interleaved (median, min-max):")
    for kind, values in times.items():
        median = statistics.median(values)
        print(
            f"  {kind:28} {median * 1000:7.1f} ms  ({min(values) * 1000:.1f}-"
            f"{max(values) * 1000:.1f})  ratio {median / without:.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
