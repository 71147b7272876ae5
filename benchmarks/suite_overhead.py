"""How long the gated standard suite takes per backend, against the bare work.

    python benchmarks/suite_overhead.py [torch jax tensorflow numpy]

For each backend, in fresh processes one after the other:
  suite  ``pytest --kerasperf --pyargs pytest_kerasperf.suite`` (default
         warm-up 10, rounds 50), gated against the committed baselines;
  bare   ``benchmarks/bare_work.py``: the same models, compiles, explains,
         count passes and timed calls in a plain script, no pytest.
Prints wall seconds and suite/bare per backend (targets: suite under 180 s,
ratio at most 1.3).  Run it on an otherwise idle machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(cmd: list[str], backend: str) -> tuple[float, int, str]:
    env = {**os.environ, "KERAS_BACKEND": backend, "PYTHONHASHSEED": "0"}
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, proc.returncode, proc.stdout[-2000:] + proc.stderr[-2000:]


def main(argv: list[str]) -> int:
    backends = argv or ["torch", "jax", "tensorflow", "numpy"]
    rows = []
    for backend in backends:
        suite_cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--kerasperf",
            "--kerasperf-require-baseline",
            "--pyargs",
            "pytest_kerasperf.suite",
        ]
        suite_s, suite_rc, suite_out = timed(suite_cmd, backend)
        bare_s, bare_rc, bare_out = timed([sys.executable, "benchmarks/bare_work.py"], backend)
        if suite_rc != 0 or bare_rc != 0:
            print(f"{backend}: suite rc={suite_rc} bare rc={bare_rc}\n{suite_out}\n{bare_out}")
        rows.append((backend, suite_s, bare_s, suite_s / bare_s))
        print(
            f"{backend:<11} suite {suite_s:7.1f} s   bare {bare_s:7.1f} s   "
            f"ratio {suite_s / bare_s:.2f}"
        )
    print()
    print("| backend | gated suite (s) | bare work (s) | suite / bare |")
    print("|---|---|---|---|")
    for backend, suite_s, bare_s, ratio in rows:
        print(f"| {backend} | {suite_s:.1f} | {bare_s:.1f} | {ratio:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
