"""How well ``kerasperf ab`` tells a slowdown from noise on this machine (docs/history.md, A/B).

Builds a throwaway git repository from the installed Keras source:

- ``Initial``: the unpatched copy (the base of every comparison);
- ``Comment``: the same code, one comment added to ``Dense.call`` (A/A: a
  different commit, the same program);
- before each planted run, a ``Slow N% <config> run <i>`` commit from the
  unpatched tree: a ``time.sleep`` at the top of ``Functional.call`` (once
  per forward) sized so the forward is N % slower than the latest run's
  base median (the first from a calibration A/A of 2 pairs in
  lockstep: the forward as the A/B times it), less the sleep's overshoot in
  a process pinned to one CPU.  A sleep, not a busy loop: a busy loop's cost
  moves with the load of the shared CPUs (loops sized for 10 % measured from
  -11 % to +28 % in single A/B runs here), a sleep's does not.

Then, per configuration (``--config backend:model``, the eager forward of the
issue's LM or CNN), runs ``ab.measure`` (the code ``kerasperf ab`` runs,
with its defaults: up to 16 pairs of processes in lockstep, one pair per CPU
at once, the sequential rule of ``stats.Plan``) ``--aa-runs`` times on
Initial vs Comment and ``--runs`` times per slowdown, the planted runs
spread among the A/A runs.  Each verdict, with every round's time, is
appended to ``--out`` (JSON lines) as it comes, so an interrupted run keeps
its figures; ``--summary-of`` prints the table of such a file.

    .venv/bin/python benchmarks/ab_power.py --config numpy:lm torch:lm numpy:cnn torch:cnn \
        --aa-runs 50 --runs 10 --slowdowns 0.03
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import git

from kerasperf_lab.history import ab
from pytest_kerasperf.ab import stats
from pytest_kerasperf.ab.abplan import ABSettings
from pytest_kerasperf.ab.commits import HistoryError
from pytest_kerasperf.codec import to_data

TESTS = {
    "lm": "test_standard.py::test_lm_forward[eager]",
    "cnn": "test_standard.py::test_cnn_forward[eager]",
}
DENSE = "keras/src/layers/core/dense.py"
ANCHOR = "    def call(self, inputs, training=None):\n"
#: where the plant goes: the model's call, once per forward (a sleep per Dense call of the LM,
#: 5 per forward, would be 0.1 ms each, near the 0.05-0.09 ms a sleep overshoots here)
FUNCTIONAL = "keras/src/models/functional.py"
FUNCTIONAL_CALL = "keras/src/models/functional.py:Functional.call"
FUNCTIONAL_ANCHOR = "    def call(self, inputs, training=None, mask=None, **kwargs):\n"


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


def insert(path: Path, text: str, clean: str, anchor: str = ANCHOR) -> None:
    assert clean.count(anchor) == 1, f"{path}: {anchor.strip()} not found once"
    path.write_text(clean.replace(anchor, anchor + text))


OVERSHOOT = """
import statistics, sys, time
seconds = float(sys.argv[1])
taken = []
for _ in range(200):
    start = time.perf_counter()
    time.sleep(seconds)
    taken.append(time.perf_counter() - start - seconds)
print(statistics.median(taken))
"""


def sleep_overshoot(seconds: float, cpu: int) -> float:
    """How much longer than asked ``time.sleep(seconds)`` takes in a process pinned to one CPU,
    as the A/B's processes are (median of 200)."""
    done = subprocess.run(
        [sys.executable, "-c", OVERSHOOT, repr(seconds)],
        capture_output=True,
        text=True,
        check=True,
        preexec_fn=lambda: os.sched_setaffinity(0, {cpu}),
    )
    return float(done.stdout)


def planted_sleep(seconds: float) -> str:
    """A fixed wall-clock delay: one ``time.sleep`` call where it is planted, so the counts stay
    exact and the delay does not depend on how busy the shared CPUs are."""
    return f"        __import__('time').sleep({seconds!r})\n"


def plant(
    repo: git.Repo,
    functional: Path,
    clean: str,
    name: str,
    slowdown: float,
    forward_ms: float,
) -> tuple[str, float]:
    """A commit whose forward is ``slowdown`` slower than ``forward_ms`` (now), and the delay
    it adds per forward (ms)."""
    delay = slowdown * forward_ms / 1000.0
    overshoot = sleep_overshoot(delay, 0)
    asked = max(delay - overshoot, 0.0)
    insert(functional, planted_sleep(asked), clean, FUNCTIONAL_ANCHOR)
    added = (asked + overshoot) * 1000.0
    print(
        f"  planted {slowdown:.0%} of {forward_ms:.3f} ms: sleep({asked * 1000:.3f} ms) in "
        f"Functional.call, {overshoot * 1e6:.0f} µs overshoot in a pinned process: "
        f"{added:.3f} ms per forward",
        flush=True,
    )
    return commit(repo, name), added


def summarise(rows: list[dict[str, Any]]) -> None:
    """The table of docs/history.md: per configuration and planted slowdown, the decisions,
    the effects, the pairs and the seconds of each A/B."""
    print(
        "config | planted (nominal) | planted, of the run's base median | runs | slower | "
        "faster | no change | median effect | effects seen | pairs (median, max) | "
        "seconds (median, max)"
    )
    groups: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for row in rows:
        if "error" in row:
            print(f"{row['config']} run {row['run']}: error: {row['error']}")
            continue
        groups.setdefault((row["config"], row["planted"]), []).append(row)
    for (config, planted), group in sorted(groups.items()):
        decisions = [row["decision"] for row in group]
        effects = [row["effect"] for row in group]
        pairs = [row["processes"] for row in group]
        seconds = [row.get("wall_s", row["seconds"]) for row in group]
        print(
            f"{config} | {'A/A' if not planted else f'{planted:.0%}'} | "
            f"{statistics.median(row['planted_of_base'] for row in group):.1%} | {len(group)} | "
            f"{decisions.count('slower')} | {decisions.count('faster')} | "
            f"{decisions.count('no change')} | {statistics.median(effects):+.2%} | "
            f"{min(effects):+.2%} … {max(effects):+.2%} | "
            f"{statistics.median(pairs):g}, {max(pairs)} | "
            f"{statistics.median(seconds):.0f}, {max(seconds):.0f}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", nargs="+", default=["numpy:lm"], metavar="BACKEND:MODEL")
    parser.add_argument("--aa-runs", type=int, default=50)
    parser.add_argument("--runs", type=int, default=10, help="A/B runs per slowdown")
    parser.add_argument("--slowdowns", type=float, nargs="*", default=[0.03])
    parser.add_argument(
        "--rounds", type=int, default=stats.DEFAULT_ROUNDS, help="rounds per process"
    )
    parser.add_argument(
        "--processes", type=int, default=stats.DEFAULT_PROCESSES, help="the most pairs"
    )
    parser.add_argument("--out", type=Path, default=Path("ab_power.jsonl"))
    parser.add_argument(
        "--summary-of",
        type=Path,
        metavar="JSONL",
        help="only print the table of an earlier (or interrupted) run's --out file (or its .gz)",
    )
    args = parser.parse_args()
    if args.summary_of is not None:
        text = (
            gzip.decompress(args.summary_of.read_bytes()).decode("utf-8")
            if args.summary_of.suffix == ".gz"
            else args.summary_of.read_text(encoding="utf-8")
        )
        summarise([json.loads(x) for x in text.splitlines() if x])
        return 0
    started = time.monotonic()
    rows: list[dict[str, Any]] = []
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
        functional = work / FUNCTIONAL
        clean_functional = functional.read_text()
        for config in args.config:
            backend, model = config.split(":")
            test = TESTS[model]
            # The forward as the A/B times it: one wave of lockstep pairs of the A/A commits.
            calibration = ab.measure(
                repo, base, same, test, backend, ABSettings(args.rounds, 2, sequential=False)
            )
            forward_ms = calibration.verdict.base_median
            calls = calibration.runs[0].record.calls_by_function[FUNCTIONAL_CALL]
            assert calls == 1, f"Functional.call {calls}x per forward"
            print(
                f"{config}: keras {calibration.file.keras.get('base')}, {test}: forward "
                f"{forward_ms:.3f} ms (median of 2 × {args.rounds} rounds in lockstep); at most "
                f"{args.processes} pairs × {args.rounds} rounds, sequential",
                flush=True,
            )

            # The planted runs spread among the A/A runs: a slow hour of the machine hits both.
            planted = [s for _ in range(args.runs) for s in args.slowdowns]
            total = args.aa_runs + len(planted)
            at = {int((i + 0.5) * total / len(planted)): s for i, s in enumerate(planted)}
            aa = iter([0.0] * args.aa_runs)
            plan = [at[i] if i in at else next(aa) for i in range(total)]
            with args.out.open("a", encoding="utf-8") as out:
                for index, slowdown in enumerate(plan):
                    # A plant sized from the latest base median: the machine's speed moves
                    # (this CNN's forward took 7.1 ms and 9.0 ms an hour apart), a sleep does not.
                    head, added = (same, 0.0)
                    if slowdown:
                        head, added = plant(
                            repo,
                            functional,
                            clean_functional,
                            f"Slow {slowdown:.0%} {config} run {index}",
                            slowdown,
                            forward_ms,
                        )
                    began = time.monotonic()
                    try:
                        result = ab.measure(
                            repo,
                            base,
                            head,
                            test,
                            backend,
                            ABSettings(args.rounds, args.processes),
                        )
                    except HistoryError as error:  # said, kept, and the next run goes on
                        failed = {"config": config, "planted": slowdown, "run": index}
                        out.write(json.dumps({**failed, "error": str(error)}) + "\n")
                        out.flush()
                        print(f"  {config} run {index + 1}: error: {error}", flush=True)
                        continue
                    verdict = result.verdict
                    row = {
                        "config": config,
                        "planted": slowdown,
                        "run": index,
                        "forward_ms": forward_ms,
                        "planted_ms": added,
                        # the planted delay against this run's base: the slowdown it really is
                        "planted_of_base": added / verdict.base_median,
                        "calls_delta": result.file.counts.calls_delta,
                        "processes": result.file.processes,
                        "seconds": result.file.seconds,
                        "wall_s": time.monotonic() - began,  # the whole A/B, exports included
                        "parallel": result.file.parallel,
                        "runs": [
                            {"side": run.side, "pair": run.pair, "times_ms": list(run.times_ms)}
                            for run in result.runs
                        ],
                        **to_data(verdict.result()),
                    }
                    forward_ms = verdict.base_median
                    rows.append(row)
                    out.write(json.dumps(row) + "\n")
                    out.flush()
                    print(
                        f"  {config} planted {slowdown:4.0%} run {index + 1:2}/{len(plan)}: "
                        f"{result.file.processes} pairs, {result.file.seconds:.0f} s: "
                        f"{verdict.describe()}",
                        flush=True,
                    )
    print(f"\n{time.monotonic() - started:.0f} s in all")
    summarise(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
