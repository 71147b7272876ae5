"""What the census costs on this machine, against the targets of issue #26.

    python benchmarks/census_cost.py counts [--shards N] [numpy torch jax jax-nnx tensorflow ...]
    python benchmarks/census_cost.py compiled [--shards 4] [torch]
    python benchmarks/census_cost.py overhead [numpy] [-k EXPR]

Each run is a fresh process, gated against the committed tables
(``--kerasperf --kerasperf-strict``, ``PYTHONHASHSEED=0``), timed in wall seconds and in
CPU seconds (user + system of the process and everything it started: torch.compile's
workers count).

- ``counts``: the counts census, every census test but the compiled ones
  (``-k "not compiled"``), one process per backend (``jax-nnx``: jax with
  ``KERAS_NNX_ENABLED=true``), or with ``--shards N`` N processes one after the other, each
  ``--kerasperf-shard K/N`` of it, as the bundled workflow's shard jobs run it. Target: at
  most 180 CPU seconds a backend's job.
- ``compiled``: the compiled census (``-k compiled``), in ``--shards`` processes, one after the
  other, each ``--kerasperf-shard K/N`` of it. Target: at most 900 s a shard, 4 shards at most.
- ``overhead``: the plugin's cost per census test. The same selection runs twice: with the
  plugin (``--kerasperf``), and with ``benchmarks/census_bare.py`` in its place, which gives
  the test bodies their fixtures and calls each workload once, timed. Per test (pytest's
  setup + call + teardown, from ``--junitxml``): the plugin's overhead is the test's time with
  the plugin less its time without; the test's own cost is its time without (finding the
  symbol, building it, its inputs, two trial calls and one call); the call is that one call.

Prints a table and, with ``--json PATH``, writes the figures. Run it on an otherwise idle
machine: wall seconds follow the load, CPU seconds much less.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
COUNTS_TARGET_CPU_S = 180.0
SHARD_TARGET_S = 900.0
MAX_SHARDS = 4
CENSUS = "pytest_kerasperf.census"


def run(args: list[str], backend: str, extra_env: dict[str, str] | None = None) -> dict[str, Any]:
    """One pytest process: its wall and CPU seconds, exit status and last line."""
    env = {**os.environ, "KERAS_BACKEND": backend, "PYTHONHASHSEED": "0", **(extra_env or {})}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = proc.stdout.strip().splitlines()
    return {
        "backend": backend,
        "args": args,
        "returncode": proc.returncode,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "last_line": lines[-1] if lines else proc.stderr.strip()[-300:],
    }


def gated(select: list[str], json_path: Path) -> list[str]:
    return [
        "--kerasperf",
        "--kerasperf-strict",
        "--pyargs",
        CENSUS,
        *select,
        f"--kerasperf-json={json_path}",
    ]


def variant(name: str) -> tuple[str, dict[str, str]]:
    """``jax-nnx`` -> jax with ``KERAS_NNX_ENABLED=true``; a backend -> itself."""
    if name == "jax-nnx":
        return "jax", {"KERAS_NNX_ENABLED": "true"}
    return name, {"KERAS_NNX_ENABLED": "false"}


def counts(backends: list[str], shards: int, scratch: Path) -> list[dict[str, Any]]:
    rows = []
    for name in backends:
        backend, env = variant(name)
        for k in range(1, shards + 1):
            select = ["-k", "not compiled"]
            if shards > 1:
                select.append(f"--kerasperf-shard={k}/{shards}")
            row = run(gated(select, scratch / f"{name}-{k}.json"), backend, env)
            row["variant"] = name
            row["shard"] = f"{k}/{shards}"
            row["target"] = f"<= {COUNTS_TARGET_CPU_S:.0f} CPU s"
            row["met"] = row["returncode"] == 0 and row["cpu_s"] <= COUNTS_TARGET_CPU_S
            rows.append(row)
            print_row(f"counts {name} {k}/{shards}", row)
    return rows


def compiled(backends: list[str], shards: int, scratch: Path) -> list[dict[str, Any]]:
    rows = []
    for backend in backends:
        for k in range(1, shards + 1):
            select = ["-k", "compiled", f"--kerasperf-shard={k}/{shards}"]
            row = run(gated(select, scratch / f"{backend}-{k}.json"), backend)
            row["shard"] = f"{k}/{shards}"
            row["target"] = f"<= {SHARD_TARGET_S:.0f} s, <= {MAX_SHARDS} shards"
            row["met"] = (
                row["returncode"] == 0 and row["wall_s"] <= SHARD_TARGET_S and shards <= MAX_SHARDS
            )
            rows.append(row)
            print_row(f"compiled {k}/{shards}", row)
    return rows


def junit_times(path: Path) -> dict[str, float]:
    """Test id -> seconds (setup + call + teardown) of the tests that passed."""
    found = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        if any(child.tag in ("skipped", "failure", "error") for child in case):
            continue
        found[f"{case.get('classname')}::{case.get('name')}"] = float(case.get("time", 0.0))
    return found


def overhead(backend: str, select: list[str], scratch: Path) -> dict[str, Any]:
    with_plugin, bare = scratch / "plugin.xml", scratch / "bare.xml"
    calls = scratch / "calls.jsonl"
    plugin_run = run([*gated(select, scratch / "o.json"), f"--junitxml={with_plugin}"], backend)
    bare_run = run(
        [
            "-p",
            "no:kerasperf",
            "-p",
            "census_bare",
            "--pyargs",
            CENSUS,
            *select,
            f"--junitxml={bare}",
        ],
        backend,
        {
            "PYTHONPATH": os.pathsep.join(
                filter(None, [str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH")])
            ),
            "KERASPERF_BARE_LOG": str(calls),
        },
    )
    a, b = junit_times(with_plugin), junit_times(bare)
    both = sorted(set(a) & set(b))
    over = [a[t] - b[t] for t in both]
    own = [b[t] for t in both]
    call_s = [json.loads(line)["call_s"] for line in calls.read_text().splitlines() if line]
    summary = {
        "backend": backend,
        "select": select,
        "tests": len(both),
        "plugin_run": plugin_run,
        "bare_run": bare_run,
        "plugin_test_s_total": round(sum(a[t] for t in both), 1),
        "bare_test_s_total": round(sum(own), 1),
        "overhead_s_median": round(statistics.median(over), 4) if over else None,
        "overhead_s_p90": round(statistics.quantiles(over, n=10)[-1], 4) if len(over) > 1 else None,
        "own_s_median": round(statistics.median(own), 4) if own else None,
        "call_s_median": round(statistics.median(call_s), 5) if call_s else None,
        "overhead_over_own_median": (
            round(statistics.median(o / max(s, 1e-6) for o, s in zip(over, own, strict=True)), 2)
            if over
            else None
        ),
    }
    print_row("overhead: with the plugin", plugin_run)
    print_row("overhead: bare", bare_run)
    print(
        f"  {summary['tests']} tests in both: with the plugin {summary['plugin_test_s_total']} s, "
        f"bare {summary['bare_test_s_total']} s; per test: overhead median "
        f"{summary['overhead_s_median']} s (p90 {summary['overhead_s_p90']} s), the test's own "
        f"cost median {summary['own_s_median']} s, one call median {summary['call_s_median']} s, "
        f"overhead / own cost median {summary['overhead_over_own_median']}"
    )
    return summary


def print_row(what: str, row: dict[str, Any]) -> None:
    met = "" if "met" not in row else ("  target met" if row["met"] else "  TARGET MISSED")
    print(
        f"{what:>28} {row['backend']:>10}: wall {row['wall_s']:>7.1f} s, "
        f"CPU {row['cpu_s']:>7.1f} s, exit {row['returncode']}{met} | {row['last_line'][:160]}",
        flush=True,
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("part", choices=["counts", "compiled", "overhead"])
    parser.add_argument("backends", nargs="*")
    parser.add_argument(
        "--shards", type=int, default=None, help=f"counts: 1, compiled: {MAX_SHARDS} by default"
    )
    parser.add_argument("-k", dest="select", default=None, help="overhead: a -k selection")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_intermixed_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        result: Any
        if args.part == "counts":
            result = counts(
                args.backends or ["numpy", "torch", "jax", "jax-nnx", "tensorflow", "openvino"],
                args.shards or 1,
                scratch,
            )
            ok = all(row["met"] for row in result)
        elif args.part == "compiled":
            result = compiled(args.backends or ["torch"], args.shards or MAX_SHARDS, scratch)
            ok = all(row["met"] for row in result)
        else:
            select = ["-k", args.select or "not compiled"]
            result = [overhead(b, select, scratch) for b in args.backends or ["numpy"]]
            ok = all(r["plugin_run"]["returncode"] == 0 for r in result)
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
