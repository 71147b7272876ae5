"""What the results model's codec library costs: its import at plugin load, and reading a
4 MB results file.

The results file, the baseline file and the verdicts are msgspec Structs, their codec and
JSON schema generated from the types (docs/json-output.md).  This script gives the figures
that decided it:

- the import cost of each candidate (msgspec, pydantic, cattrs), measured as the time to
  import it in a process that has already imported pytest (what a pytest run adds), the
  best of ``--runs`` fresh processes, with the interpreter given (``--python``: one that
  has the three installed; the project's own venv has msgspec only);
- reading a results file of about ``--megabytes`` MB (a real one's results repeated under
  new keys): the new path (``results_file.decode``: strict JSON, the types, the
  invariants) against the old way of checking one (strict JSON, then jsonschema, here
  against the schema generated from the same types, so both check one document), median
  of ``--runs``.

    .venv/bin/python benchmarks/codec_choice.py --results kerasperf-results-numpy.json
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

LIBRARIES = ("msgspec", "pydantic", "cattrs")


def import_ms(python: str, module: str, runs: int) -> float | None:
    """The best marginal import time of ``module`` after pytest, in ms (None: not installed)."""
    code = (
        "import time, pytest\n"
        "t = time.perf_counter()\n"
        f"import {module}\n"
        "print((time.perf_counter() - t) * 1000)\n"
    )
    best = None
    for _ in range(runs):
        done = subprocess.run([python, "-c", code], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            return None
        value = float(done.stdout.strip())
        best = value if best is None else min(best, value)
    return best


def grown(document: dict[str, Any], megabytes: float) -> dict[str, Any]:
    """``document`` with its results repeated under new keys until it is about ``megabytes``."""
    results = document["results"]
    out = copy.deepcopy(document)
    out["results"] = []
    copy_index = 0
    while len(json.dumps(out)) < megabytes * 1e6:
        for result in results:
            clone = copy.deepcopy(result)
            clone["nodeid"] = f"{result['nodeid']}-{copy_index}"
            clone["key"] = f"{result['key']}-{copy_index}"
            out["results"].append(clone)
        copy_index += 1
    return out


def read_ms(path: Path, runs: int) -> tuple[float, float]:
    """(msgspec path, jsonschema path): median ms to read and check the file."""
    import jsonschema

    from pytest_kerasperf import untrusted
    from pytest_kerasperf.results_file import decode, schema

    validator = jsonschema.Draft202012Validator(schema())
    new, old = [], []
    for _ in range(runs):
        start = time.perf_counter()
        decode(untrusted.read(path), path)
        new.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        errors = list(validator.iter_errors(untrusted.read(path)))
        old.append((time.perf_counter() - start) * 1000)
        assert not errors, errors[0]
    return statistics.median(new), statistics.median(old)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="interpreter for the imports")
    parser.add_argument("--results", type=Path, help="a real results file (--kerasperf-json)")
    parser.add_argument("--megabytes", type=float, default=4.0)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args(argv)
    print(f"import after pytest, best of {args.runs} processes ({args.python}):")
    for library in LIBRARIES:
        cost = import_ms(args.python, library, args.runs)
        print(f"  {library:9} " + ("not installed" if cost is None else f"{cost:6.1f} ms"))
    if args.results is not None:
        document = grown(json.loads(args.results.read_text(encoding="utf-8")), args.megabytes)
        with tempfile.TemporaryDirectory() as name:
            path = Path(name) / "big.json"
            path.write_text(json.dumps(document), encoding="utf-8")
            size = path.stat().st_size / 1e6
            new, old = read_ms(path, args.runs)
        print(
            f"reading {size:.1f} MB, {len(document['results'])} results (median of "
            f"{args.runs}): msgspec types + invariants {new:.0f} ms; jsonschema {old:.0f} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
