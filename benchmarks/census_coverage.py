"""How much of ``keras/src`` the perf tests of some results files execute.

Reads results files (``--kerasperf-json``, one per backend: every record holds
its whole call profile) and counts the non-test files and functions of the
installed Keras's ``keras/src`` that at least one workload executed.  A
per-backend directory (``keras/src/backend/<name>/``) is counted only for a
backend that has a results file: jax's backend files are not "unwatched" by a
numpy run.  A function is a ``def`` (``ast``, by its qualified name, as the
profile names it: ``keras/src/layers/core/dense.py:Dense.call``).

    .venv/bin/python benchmarks/census_coverage.py kerasperf-results-*.json
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
from collections import defaultdict
from pathlib import Path

BACKENDS = ("jax", "numpy", "openvino", "tensorflow", "torch")


def qualnames(tree: ast.AST) -> set[str]:
    found: set[str] = set()

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                found.add(prefix + child.name)
                visit(child, f"{prefix}{child.name}.<locals>.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def keras_functions(measured_backends: set[str]) -> dict[str, set[str]]:
    """``keras/src/...py`` -> its functions, test files and other backends' files left out."""
    spec = importlib.util.find_spec("keras")
    assert spec is not None
    assert spec.submodule_search_locations
    root = Path(next(iter(spec.submodule_search_locations))).parent
    files: dict[str, set[str]] = {}
    for path in sorted((root / "keras" / "src").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if path.name.endswith("_test.py") or "/tests/" in rel or "/testing/" in rel:
            continue
        parts = rel.split("/")
        other_backend = len(parts) > 4 and parts[2] == "backend" and parts[3] in BACKENDS
        if other_backend and parts[3] not in measured_backends:
            continue
        files[rel] = qualnames(ast.parse(path.read_text(encoding="utf-8")))
    return files


def executed(results: list[Path]) -> tuple[set[str], dict[str, set[str]]]:
    backends: set[str] = set()
    seen: dict[str, set[str]] = defaultdict(set)
    for path in results:
        data = json.loads(path.read_text())
        for result in data.get("results", []):
            record = result.get("record") or {}
            backends.add(str(record.get("backend")))
            for name in record.get("calls_by_function", {}):
                file, _, function = name.partition(":")
                if file.startswith("keras/src/"):
                    seen[file].add(function)
    return backends, seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path)
    args = parser.parse_args()
    backends, seen = executed(args.results)
    files = keras_functions(backends)
    total_functions = sum(len(f) for f in files.values())
    hit_files = [f for f in files if seen.get(f)]
    hit_functions = sum(len(files[f] & seen.get(f, set())) for f in files)
    print(f"backends: {', '.join(sorted(backends))}")
    print(
        f"files of keras/src executed: {len(hit_files)} of {len(files)} "
        f"({100 * len(hit_files) / len(files):.1f} %)"
    )
    print(
        f"functions of keras/src executed: {hit_functions} of {total_functions} "
        f"({100 * hit_functions / total_functions:.1f} %)"
    )
    by_area: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for f in files:
        area = "/".join(f.split("/")[2:4]) if f.count("/") > 3 else f.split("/")[2]
        by_area[area][1] += 1
        by_area[area][0] += bool(seen.get(f))
    for area, (hit, total) in sorted(by_area.items()):
        print(f"  {area:40s} {hit:4d} / {total}")


if __name__ == "__main__":
    main()
