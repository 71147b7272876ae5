"""The compile-health table of the census: which Keras layers and ops break torch.compile, and
why.

Reads results files of ``test_census_compiled`` and ``test_census_compiled_ops``
(``--kerasperf-json``) and prints one Markdown row per compiled workload of the kind asked
(``layers``: ``test_layer_compiled``; ``ops``: ``test_op_compiled``; ``second-shape``:
``test_op_compiled_second_shape``) that has graph breaks, recompiles (retraces) after warm-up,
or a frame the compiler gave up on, with the break reasons and the Keras function of each;
then how many were clean.

    .venv/bin/python benchmarks/census_compile_table.py kerasperf-results-torch.json
    .venv/bin/python benchmarks/census_compile_table.py --kind ops kerasperf-results-torch.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

#: --kind -> the test whose results it reads, and what a row names
KINDS = {
    "layers": ("test_layer_compiled[", "layer"),
    "ops": ("test_op_compiled[", "op"),
    "second-shape": ("test_op_compiled_second_shape[", "op (a call at each of two shapes)"),
}


def rows(path: Path, kind: str = "layers") -> tuple[list[str], int, int]:
    data = json.loads(path.read_text())
    found, clean, total = [], 0, 0
    test = KINDS[kind][0]
    for result in sorted(data.get("results", []), key=lambda r: r["key"]):
        if f"::{test}" not in result["key"]:
            continue
        record = result.get("record") or {}
        total += 1
        name = result["key"].split("[", 1)[1].rstrip("]")
        graph = record.get("graph_breaks") or {}
        breaks = max(int(graph.get("breaks", 0)), 0)  # explain says -1 where it saw no graph
        recompiles = record.get("recompiles") or 0
        gave_up = record.get("gave_up") or []
        if not breaks and not recompiles and not gave_up:
            clean += 1
            continue
        reasons = "; ".join(
            f"{r['count']}× {r['reason'].split(':')[0]} (`{r['frame'].removeprefix('keras/src/')}`)"
            for r in graph.get("reasons", [])
        )
        causes = "; ".join(record.get("recompile_causes") or [])
        gave_up = [g.split("; guard failed: ")[-1] for g in gave_up]
        found.append(
            f"| `{name}` | {record.get('backend')} | {breaks} | {recompiles} | "
            f"{reasons or '-'} | {causes or ('; '.join(gave_up) or '-')} |"
        )
    return found, clean, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path)
    parser.add_argument("--kind", choices=sorted(KINDS), default="layers")
    args = parser.parse_args()
    columns = (
        KINDS[args.kind][1],
        "backend",
        "graph breaks",
        "recompiles per call",
        "break reasons",
        "causes",
    )
    print("| " + " | ".join(columns) + " |")
    print("|---|---|---|---|---|---|")
    for path in args.results:
        found, clean, total = rows(path, args.kind)
        print("\n".join(found))
        print(
            f"\n{path.name}: {total} compiled {args.kind} workloads, {clean} with no break "
            "and no recompile\n"
        )


if __name__ == "__main__":
    main()
