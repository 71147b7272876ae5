"""Where an A/B's noise comes from: A/A pairs of processes, per workload and set-up.

Builds the throwaway repository of ``ab_power.py`` (the installed Keras, then
a comment added to ``Dense.call``: the same program) and runs ``--pairs``
pairs of processes, the unpatched commit against the comment, with
``interleave.measure_interleaved`` (what ``kerasperf ab`` runs), for each
``--config`` (backend and test) and each ``--setup``:

- ``one``: one pair at a time, pinned to one CPU;
- ``two``: one pair per CPU at once (the default of ``kerasperf ab``);
- ``two-glibc``: as ``two``, with glibc's malloc as it comes (``processes.TIMING_MALLOC``
  left out: large blocks mmapped, the heap trimmed);
- ``two-xla1``: as ``two``, with XLA's CPU client on one thread
  (``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false``, the numpy backend's convolutions run
  in XLA) and jax's CPU dispatch synchronous.

Per pair it writes, as a JSON line to ``--out``: every round's time, the
pair's number of ``stats.pair_log_ratio`` (the median of the paired rounds'
log ratios) and the log ratio of the two processes' medians, the wall time of
the pair, and where in the run each side's slowest round fell.  Then, per
configuration and set-up: the mean (the A/A bias) and the standard deviation
over the pairs of both numbers, and the seconds per pair; from the standard
deviation, the pairs an A/B needs for 3 % (``docs/history.md``).

    .venv/bin/python benchmarks/ab_variance.py --pairs 12 --setup two \
        --config numpy:lm numpy:cnn torch:lm torch:cnn
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))

import git  # noqa: E402
from ab_power import ANCHOR, DENSE, commit, copy_keras, insert  # noqa: E402

from pytest_kerasperf.ab import interleave, processes, runner, stats  # noqa: E402

TESTS = {
    "lm": "test_standard.py::test_lm_forward[eager]",
    "cnn": "test_standard.py::test_cnn_forward[eager]",
}
SETUPS: dict[str, tuple[int, dict[str, str]]] = {
    "one": (1, {}),
    "two": (2, {}),
    # as "two", with glibc's malloc as it comes (processes.TIMING_MALLOC left out)
    "two-glibc": (2, {}),
    "two-xla1": (
        2,
        {
            "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
            "JAX_CPU_ENABLE_ASYNC_DISPATCH": "false",
        },
    ),
}


def build_repo(root: Path) -> tuple[git.Repo, str, str]:
    work = copy_keras(root / "keras-repo")
    repo = git.Repo.init(work)
    with repo.config_writer() as config:
        config.set_value("user", "name", "kerasperf benchmark")
        config.set_value("user", "email", "kerasperf@example.com")
    base = commit(repo, "Initial")
    dense = work / DENSE
    clean = dense.read_text()
    assert ANCHOR in clean
    insert(dense, "        # A comment: the same program.\n", clean)
    return repo, base, commit(repo, "Comment")


def worst_round(times: list[float]) -> float:
    """Where the slowest round fell, 0 (first) … 1 (last)."""
    return times.index(max(times)) / max(len(times) - 1, 1)


def summarise(rows: list[dict[str, Any]]) -> None:
    groups: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["config"], row["setup"], row["rounds"]), []).append(row)
    print(
        "config | set-up | rounds | pairs | mean paired | SD paired | mean of medians | "
        "SD of medians | s per pair (wall/width) | pairs for 3 % (paired SD)"
    )
    for (config, setup, rounds), group in sorted(groups.items()):
        paired = [row["paired"] for row in group]
        medians = [row["medians"] for row in group]
        sd = statistics.stdev(paired) if len(paired) > 1 else float("nan")
        # 3 % at 9/10 past the rule's t (about 3.9 at 16 pairs, alpha 0.01 over 7 looks)
        need = math.ceil(((3.9 + 1.28) * sd / math.log(1.03)) ** 2) if sd == sd else 0
        per_pair = statistics.median(row["seconds_per_pair"] for row in group)
        print(
            f"{config} | {setup} | {rounds} | {len(group)} | {statistics.mean(paired):+.2%} | "
            f"{sd:.2%} | {statistics.mean(medians):+.2%} | "
            f"{statistics.stdev(medians) if len(medians) > 1 else float('nan'):.2%} | "
            f"{per_pair:.1f} | {need}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=stats.DEFAULT_ROUNDS)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--config", nargs="+", default=["numpy:lm", "numpy:cnn"])
    parser.add_argument("--setup", nargs="+", default=["two"], choices=sorted(SETUPS))
    parser.add_argument("--out", type=Path, default=Path("ab_variance.jsonl"))
    parser.add_argument("--summary-of", type=Path, metavar="JSONL")
    args = parser.parse_args()
    if args.summary_of is not None:
        summarise([json.loads(x) for x in args.summary_of.read_text().splitlines() if x])
        return 0
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="kerasperf-ab-variance-") as name:
        root = Path(name)
        repo, base, same = build_repo(root)
        with args.out.open("a", encoding="utf-8") as out:
            for config in args.config:
                backend, model = config.split(":")
                for setup in args.setup:
                    width, env = SETUPS[setup]
                    saved = {k: os.environ.get(k) for k in env}
                    os.environ.update(env)
                    malloc = dict(processes.TIMING_MALLOC)
                    if setup == "two-glibc":
                        processes.TIMING_MALLOC.clear()
                    try:
                        scratch = root / f"{backend}-{model}-{setup}"
                        trees: dict[stats.Side, Path] = {}
                        targets: dict[stats.Side, list[str]] = {}
                        sides: tuple[tuple[stats.Side, str], ...] = (("base", base), ("head", same))
                        for side, sha in sides:
                            trees[side], targets[side] = interleave.prepare_side(
                                repo, sha, side, [TESTS[model]], scratch, Path.cwd()
                            )
                        started = time.monotonic()
                        measured = interleave.measure_interleaved(
                            trees,
                            targets,
                            backend,
                            args.rounds,
                            args.pairs,
                            scratch,
                            warmup=args.warmup,
                            parallel=width,
                            timeout_s=runner.DEFAULT_TIMEOUT_S,
                            log=lambda line: print(f"  {line}", flush=True),
                        )
                        seconds = time.monotonic() - started
                    finally:
                        processes.TIMING_MALLOC.update(malloc)
                        for key, value in saved.items():
                            if value is None:
                                os.environ.pop(key, None)
                            else:
                                os.environ[key] = value
                    ((key),) = measured.keys("base")
                    base_runs, head_runs = stats.paired_samples(measured.runs(key))
                    for index, (b, h) in enumerate(zip(base_runs, head_runs, strict=True)):
                        row = {
                            "config": config,
                            "setup": setup,
                            "rounds": args.rounds,
                            "pair": index,
                            "paired": stats.pair_log_ratio(b, h),
                            "medians": math.log(statistics.median(h) / statistics.median(b)),
                            "base_ms": list(b),
                            "head_ms": list(h),
                            "worst_round": {
                                "base": worst_round(list(b)),
                                "head": worst_round(list(h)),
                            },
                            "seconds_per_pair": seconds / args.pairs * width,
                            "wall_s": seconds,
                        }
                        rows.append(row)
                        out.write(json.dumps(row) + "\n")
                    out.flush()
                    summarise([r for r in rows if r["config"] == config and r["setup"] == setup])
    print()
    summarise(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
