"""How well ``kerasperf ab`` tells a slowdown from noise on this machine (docs/history.md, A/B).

Builds a throwaway git repository from the installed Keras source:

- ``Initial``: the unpatched copy (the base of every comparison);
- ``Comment``: the same code, one comment added to ``Dense.call`` (A/A: a
  different commit, the same program);
- ``Slow N%``, one commit per requested slowdown, each from the unpatched
  tree: a ``time.sleep`` at the top of ``Dense.call`` (5 calls per LM
  forward) sized from a calibration run so the LM forward is N % slower
  (less this machine's sleep overshoot).  A sleep, not a busy loop: a busy
  loop's cost moves with the load of the shared CPUs (loops sized for 10 %
  measured from -11 % to +28 % in single A/B runs here), a sleep's does not.

Then runs ``ab.measure`` (the code ``kerasperf ab`` runs: pairs of processes
timed in lockstep, the verdict of ``stats.decide``) ``--aa-runs`` times on
Initial vs Comment and ``--runs`` times per slowdown, and prints the
false-alarm rate and the detection rates.  Each verdict, with every round's
time, is appended to ``--out`` (JSON lines) as it comes, so an interrupted
run keeps its figures.

BLAS threads are pinned to one (``OMP_NUM_THREADS=1`` ...) unless already
set: on a shared 2-core machine the numpy LM forward is 5x slower and its
IQR is 50 % of the median with the default thread count, 2.5 % with one.

    .venv/bin/python benchmarks/ab_power.py --aa-runs 20 --runs 8 --slowdowns 0.10 0.07 0.05
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import git  # noqa: E402
import numpy as np  # noqa: E402

from pytest_kerasperf.history import ab, interleave, runner, stats  # noqa: E402

TEST = "test_standard.py::test_lm_forward[eager]"
DENSE = "keras/src/layers/core/dense.py"
DENSE_CALL = "keras/src/layers/core/dense.py:Dense.call"
ANCHOR = "    def call(self, inputs, training=None):\n"


def copy_keras(dest: Path) -> Path:
    spec = importlib.util.find_spec("keras")
    assert spec is not None, "keras is not installed"
    assert spec.submodule_search_locations, "keras is not a package"
    source = Path(next(iter(spec.submodule_search_locations)))
    shutil.copytree(source, dest / "keras", ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def commit(repo: git.Repo, message: str) -> str:
    repo.git.add("-A")
    repo.git.commit("-q", "-m", message)
    return str(repo.head.commit.hexsha)


def insert(path: Path, text: str, clean: str) -> None:
    assert clean.count(ANCHOR) == 1, f"{path}: Dense.call not found once"
    path.write_text(clean.replace(ANCHOR, ANCHOR + text))


def sleep_overshoot(seconds: float) -> float:
    """How much longer than asked ``time.sleep(seconds)`` takes here (median of 50)."""
    taken = []
    for _ in range(50):
        start = time.perf_counter()
        time.sleep(seconds)
        taken.append(time.perf_counter() - start - seconds)
    return float(np.median(taken))


def planted_sleep(seconds: float) -> str:
    """A fixed wall-clock delay: one ``time.sleep`` call per ``Dense.call``, so the counts stay
    exact and the delay does not depend on how busy the shared CPUs are."""
    return f"        __import__('time').sleep({seconds!r})\n"


def summarise(summary: dict[float, list[dict[str, Any]]]) -> None:
    """The table of docs/history.md: per planted slowdown, the decisions and effects."""
    print(
        "planted (nominal) | planted of base (median) | runs | slower | faster | no change | "
        "median effect | effects | median p"
    )
    for slowdown, rows in sorted(summary.items()):
        decisions = [row["decision"] for row in rows]
        effects = [row["effect"] for row in rows]
        print(
            f"{slowdown:.0%} | {np.median([row['planted_of_base'] for row in rows]):.1%} | "
            f"{len(rows)} | {decisions.count('slower')} | "
            f"{decisions.count('faster')} | {decisions.count('no change')} | "
            f"{np.median(effects):+.1%} | {min(effects):+.1%} … {max(effects):+.1%} | "
            f"{np.median([row['p_value'] for row in rows]):.2g}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--aa-runs", type=int, default=20)
    parser.add_argument("--runs", type=int, default=6, help="A/B runs per slowdown")
    parser.add_argument("--slowdowns", type=float, nargs="*", default=[0.10, 0.05, 0.03])
    parser.add_argument(
        "--rounds", type=int, default=stats.DEFAULT_ROUNDS, help="rounds per process"
    )
    parser.add_argument(
        "--processes", type=int, default=stats.DEFAULT_PROCESSES, help="processes per side"
    )
    parser.add_argument("--backend", default="numpy")
    parser.add_argument("--out", type=Path, default=Path("ab_power.jsonl"))
    parser.add_argument(
        "--summary-of",
        type=Path,
        metavar="JSONL",
        help="only print the table of an earlier (or interrupted) run's --out file",
    )
    args = parser.parse_args()
    if args.summary_of is not None:
        rows = [json.loads(line) for line in args.summary_of.read_text().splitlines() if line]
        grouped: dict[float, list[dict[str, Any]]] = {}
        for row in rows:
            grouped.setdefault(row["planted"], []).append(row)
        summarise(grouped)
        return 0
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kerasperf-ab-power-") as name:
        root = Path(name)
        work = copy_keras(root / "keras-repo")
        repo = git.Repo.init(work)
        with repo.config_writer() as config:
            config.set_value("user", "name", "kerasperf benchmark")
            config.set_value("user", "email", "kerasperf@example.com")
        base = commit(repo, "Initial")
        dense = work / DENSE
        clean = dense.read_text()
        insert(dense, "        # A comment: the same program.\n", clean)
        same = commit(repo, "Comment")

        output = interleave.run_process(
            work, [f"{runner.suite_dir() / TEST}"], args.backend, 30, root / "calibrate"
        )
        ((key, times),) = output.times_ms.items()
        version = output.keras_version
        forward_ms = float(np.median(times))
        dense_calls = output.records[key].calls_by_function[DENSE_CALL]
        print(
            f"keras {version}, {args.backend}, {TEST}: forward {forward_ms:.2f} ms (median of 30), "
            f"Dense.call {dense_calls}x per forward; {args.processes} processes x "
            f"{args.rounds} rounds per side; threads: OMP_NUM_THREADS="
            f"{os.environ['OMP_NUM_THREADS']}",
            flush=True,
        )
        heads = {0.0: same}
        for slowdown in args.slowdowns:
            delay = slowdown * forward_ms / 1000.0 / dense_calls
            asked = max(delay - sleep_overshoot(delay), 0.0)
            insert(dense, planted_sleep(asked), clean)
            print(
                f"planted {slowdown:.0%}: sleep({asked * 1000:.3f} ms) per Dense.call "
                f"(for {delay * 1000:.3f} ms)",
                flush=True,
            )
            heads[slowdown] = commit(repo, f"Slow {slowdown:.0%}")

        summary: dict[float, list[dict[str, Any]]] = {}
        # The first slowdown, then A/A, then the others: an interrupted run has both kinds.
        plan = [(s, args.runs) for s in args.slowdowns]
        plan.insert(min(1, len(plan)), (0.0, args.aa_runs))
        with args.out.open("a", encoding="utf-8") as out:
            for slowdown, runs in plan:
                for index in range(runs):
                    result = ab.measure(
                        repo,
                        base,
                        heads[slowdown],
                        TEST,
                        args.backend,
                        rounds=args.rounds,
                        processes=args.processes,
                    )
                    verdict = result.verdict
                    row = {
                        "planted": slowdown,
                        "run": index,
                        "forward_ms": forward_ms,
                        # the planted delay against this run's base: the slowdown it really is
                        "planted_ms": slowdown * forward_ms,
                        "planted_of_base": slowdown * forward_ms / verdict.base_median,
                        "calls_delta": result.counts.calls_delta,
                        "process_medians": {
                            side: [float(np.median(times)) for times in result.side(side)]
                            for side in ("base", "head")
                        },
                        "runs": [
                            {"side": run.side, "times_ms": list(run.times_ms)}
                            for run in result.runs
                        ],
                        **verdict.to_json(),
                    }
                    summary.setdefault(slowdown, []).append(row)
                    out.write(json.dumps(row) + "\n")
                    out.flush()
                    medians = row["process_medians"]
                    print(
                        f"planted {slowdown:4.0%} run {index + 1:2}/{runs}: {verdict.describe()}; "
                        f"process medians base {medians['base']} head {medians['head']}",
                        flush=True,
                    )
    print(f"\n{time.monotonic() - started:.0f} s in all")
    summarise(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
