"""What ``--kerasperf-changed`` costs a pull request, measured: the CPU seconds of the gate of one
backend (the suite and the census) in full, in full while writing the index, and selected by a
change, on the installed Keras committed to a scratch repository::

    .venv/bin/python benchmarks/selection_cost.py --backend numpy \\
        --plant keras/src/backend/numpy/numpy.py:absolute

Each run is a fresh ``pytest`` process, its CPU time from ``getrusage`` of the children; the
planted change adds one Python call to the named function (as a pull request's regression
would), the "docs only" change adds a Markdown file.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_kerasperf import reach_index, selection
from pytest_kerasperf.ab.commits import commit_installed_keras

SUITES = ("pytest_kerasperf.suite", "pytest_kerasperf.census")
RECORD = ("--kerasperf-update-baseline",)


def run(repo: Path, backend: str, *options: str) -> tuple[float, float, str]:
    """(CPU seconds, wall seconds, the last lines) of one gate process."""
    env = dict(os.environ, PYTHONHASHSEED="0", KERAS_BACKEND=backend, PYTHONPATH=str(repo))
    env["KERAS_HOME"] = str(repo.parent / "home")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--kerasperf",
         f"--kerasperf-baseline-dir={repo.parent / 'baselines'}", "--pyargs", *SUITES,
         *options],
        cwd=repo, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [line for line in done.stdout.splitlines() if "kerasperf" in line or "passed" in line]
    return cpu, wall, "\n    ".join(lines[-3:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="numpy")
    parser.add_argument("--plant", default="keras/src/backend/numpy/numpy.py:absolute")
    parser.add_argument(
        "--no-full",
        action="store_true",
        help="record and index in one run, no full gate (a slow backend: its full gate's cost "
        "is make gate's)",
    )
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="kerasperf-selection-cost-"))
    repo = commit_installed_keras(scratch / "keras-repo")
    (scratch / "home").mkdir()
    index = scratch / "index.json"
    figures: dict[str, float] = {}

    def show(name: str, result: tuple[float, float, str]) -> None:
        figures[name] = result[0]
        print(f"{name}: {result[0]:.1f} CPU-s, {result[1]:.1f} s\n    {result[2]}", flush=True)

    if args.no_full:
        show("record + index", run(repo, args.backend, *RECORD, f"--kerasperf-index-out={index}"))
    else:
        show("record", run(repo, args.backend, *RECORD))
        show("full gate", run(repo, args.backend))
        show("full gate + index", run(repo, args.backend, f"--kerasperf-index-out={index}"))
    show("no change", run(repo, args.backend, f"--kerasperf-changed={index}"))
    path, function = args.plant.split(":")
    source = repo / path
    text = source.read_text()
    head = f"def {function}(x):\n"
    assert head in text, f"{head!r} not in {path}"
    source.write_text(text.replace(head, head + "    x = convert_to_tensor(x)\n", 1))
    show("one function changed", run(repo, args.backend, f"--kerasperf-changed={index}"))
    started = time.perf_counter()
    loaded = reach_index.load(index)
    assert loaded.commit is not None
    chosen = selection.select(
        loaded.tests, loaded, selection.changes(selection.read_diff(repo, loaded.commit))
    )
    figures["selection"] = time.perf_counter() - started
    print(f"selection alone: {figures['selection']:.2f} s, {len(chosen.run)} tests selected")
    source.write_text(text)
    (repo / "NOTES.md").write_text("notes\n")
    show("docs only", run(repo, args.backend, f"--kerasperf-changed={index}"))
    print(json.dumps(figures))
    shutil.rmtree(scratch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
