"""How long the gated standard suite takes per backend, against the bare work.

    python benchmarks/suite_overhead.py [torch jax tensorflow numpy]

For each backend, in fresh processes one after the other:
  suite  ``pytest --kerasperf --kerasperf-strict --pyargs pytest_kerasperf.suite``
         with the default timing, gated against the committed baselines;
  bare   ``benchmarks/bare_work.py``: the same models, compiles, explains,
         count passes and timed calls in a plain script, no pytest.
Prints wall seconds and suite/bare per backend (targets: suite at most 90 s,
torch at most 150 s; ratio at most 1.3).  Run it on an otherwise idle machine.
Both use the same timing policy (handle.timing: 1 warm-up and 5 timed rounds
where latency is reported, not gated, as on a CPU).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Seconds per backend for the gated standard suite on a 2-core CPU machine:
#: torch's two compiles and two explains alone take about 80 s.
TARGETS = {"torch": 150}
DEFAULT_TARGET = 90
MAX_RATIO = 1.3


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
            "--kerasperf-strict",
            "--pyargs",
            "pytest_kerasperf.suite",
        ]
        suite_s, suite_rc, suite_out = timed(suite_cmd, backend)
        bare_s, bare_rc, bare_out = timed([sys.executable, "benchmarks/bare_work.py"], backend)
        if suite_rc != 0 or bare_rc != 0:
            print(f"{backend}: suite rc={suite_rc} bare rc={bare_rc}\n{suite_out}\n{bare_out}")
        target = TARGETS.get(backend, DEFAULT_TARGET)
        rows.append((backend, suite_s, bare_s, suite_s / bare_s, target))
        print(
            f"{backend:<11} suite {suite_s:7.1f} s (target {target} s)   bare {bare_s:7.1f} s   "
            f"ratio {suite_s / bare_s:.2f} (target {MAX_RATIO})"
        )
    print()
    print("| backend | gated suite (s) | target (s) | bare work (s) | suite / bare |")
    print("|---|---|---|---|---|")
    for backend, suite_s, bare_s, ratio, target in rows:
        print(f"| {backend} | {suite_s:.1f} | {target} | {bare_s:.1f} | {ratio:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
