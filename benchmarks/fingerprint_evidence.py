#!/usr/bin/env python3
"""Which environment fields change pytest-kerasperf's call counts?  Decide it by experiment.

A baseline recorded in one environment may only be compared in another if
nothing that changes counts differs.  This script measures that: it builds a
reference environment (the pinned framework set of ``requirements/ci.txt`` on
the reference Python), runs the plugin's own suite in it twice per backend
(the two runs must be identical), then runs the same suite in variant
environments that differ in exactly one field (Python patch or minor version,
one package's version, a torch local version tag, Keras config, a global dtype
policy, environment variables, CPU ISA, number of CPUs, frameworks imported
first) and compares every test's ``calls_by_function`` and graph breaks with
the reference's.

Variants are declared in ``fingerprint_variants.toml`` next to this script
(read by ``fingerprint_variants.py``).  Each one names the field it changes
and how to build its environment:

- ``venv``: the reference venv, a full venv on another interpreter, or an
  *overlay* venv (same interpreter, a ``.pth`` file that adds the reference
  venv's site-packages, and a few packages installed into the overlay so that
  they shadow the reference's; the installed versions and the imported
  modules' files are checked and recorded);
- ``env``: environment variables; ``keras_json``: ``$KERAS_HOME/keras.json``
  (``backend`` is filled in per backend); ``plugin``: a pytest plugin module
  (source text) loaded with ``-p``; ``prefix``: a command prefix such as
  ``taskset -c 0``; ``probe``: Python code run in the environment whose
  ``out`` dict is recorded (e.g. the ISA torch inductor picks).

Every suite run gets a fresh working directory, ``KERAS_HOME`` and torch
inductor cache, and an environment stripped of framework variables, so runs
are independent of each other and of the caller's shell.

This script runs the suites and the command line; ``fingerprint_venvs.py``
builds the environments and ``fingerprint_compare.py`` compares the runs and
writes the table.

Runs are cached in the work dir under the plugin source's hash (the files
that make up the installed plugin: the package, ``pyproject.toml`` and
``requirements/``), so a new snapshot of the plugin re-runs the reference and
every variant instead of comparing with counts another version measured.
Venvs are cached by their dependency specification and get the plugin
(re)installed when its hash changes; a reference or full venv whose marker no
longer matches is kept when every pin of the constraints is still satisfied.
``--rerun`` forces new runs.  The results JSON holds one section per plugin
hash (``plugins``); a run merges into its own section only, so a subset of
variants/backends can be rerun without losing the others, and counts of two
plugin versions are never compared or mixed.

Both ``--kerasperf-json`` formats are read: schema 2 (``record`` with
``calls_by_function`` and ``graph_breaks`` = ``{"graphs", "breaks",
"reasons": [{"reason", "frame", "count", "line"}]}``) and the older flat one
(``calls_by_function``, ``graph_breaks``/``graphs`` integers,
``graph_break_reasons`` = ``[{"frame", "reason"}]``).  A test is the same as
the reference's when its ``calls_by_function`` is identical and its graph
breaks have the same ``breaks``, ``graphs`` and (frame, reason) -> count
mapping (``line`` is ignored: it is only where the break was seen).

Usage (from the repository root)::

    python benchmarks/fingerprint_evidence.py --list
    python benchmarks/fingerprint_evidence.py --work-dir /tmp/kerasperf-fingerprint \\
        --results fingerprint.json --markdown fingerprint.md
    python benchmarks/fingerprint_evidence.py --variants numpy-2.3.5 optree-0.19.1 \\
        --backends jax numpy

Run one suite at a time (counts are exact, but a torch suite takes minutes).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fingerprint_compare import compare, markdown, short_test
from fingerprint_variants import BACKENDS, Variant, VenvSpec, load
from fingerprint_venvs import (
    REFERENCE_VENV,
    TRACKED_DISTS,
    TRACKED_MODULES,
    BuildError,
    Context,
    clean_environ,
    digest,
    ensure_venv,
    log,
    plugin_source_hash,
    plugin_version,
    run_logged,
    tail,
    venv_python,
)

SUITE = "pytest_kerasperf.suite"
REFERENCE_RUNS: tuple[str, ...] = ("reference-1", "reference-2")
_DECLARED = load()
REFERENCE_INTERPRETERS: dict[str, tuple[str, ...]] = _DECLARED.interpreters
VARIANTS: tuple[Variant, ...] = _DECLARED.variants

MODULES_REPORT_PLUGIN = '''\
"""Records, after the session, which copy of each tracked module the suite imported."""
import importlib.metadata
import json
import os
import sys

MODULES = __MODULES__
DISTS = __DISTS__


def pytest_sessionfinish(session):
    files = {}
    for name in MODULES:
        module = sys.modules.get(name)
        files[name] = getattr(module, "__file__", None) if module is not None else None
    versions = {}
    for dist in DISTS:
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = None
    with open(os.environ["FINGERPRINT_MODULES_JSON"], "w", encoding="utf-8") as handle:
        json.dump({"files": files, "dists": versions, "sys.path": sys.path}, handle, indent=2)
'''.replace("__MODULES__", repr(TRACKED_MODULES)).replace("__DISTS__", repr(TRACKED_DISTS))


# ------------------------------------------------------------------ runs


@dataclass
class RunOutcome:
    ok: bool
    json_path: Path
    log_path: Path
    seconds: float
    returncode: int | None
    error: str | None = None
    cached: bool = False
    imported: dict[str, Any] | None = None


def _run_env(ctx: Context, variant: Variant, backend: str, run_dir: Path) -> dict[str, str]:
    env = clean_environ()
    env["PYTHONHASHSEED"] = "0"
    env["KERAS_BACKEND"] = backend
    env["KERAS_HOME"] = str(run_dir / "keras_home")
    env["TORCHINDUCTOR_CACHE_DIR"] = str(run_dir / "inductor_cache")
    env["TRITON_CACHE_DIR"] = str(run_dir / "triton_cache")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if variant.plugin is not None or variant.venv.kind == "overlay":
        env["PYTHONPATH"] = str(run_dir / "plugin")
    if variant.venv.kind == "overlay":
        env["FINGERPRINT_MODULES_JSON"] = str(run_dir / "imported_modules.json")
    env.update(dict(variant.env))
    return env


def _prepare_run_dir(variant: Variant, backend: str, run_dir: Path) -> None:
    if run_dir.exists():
        shutil.rmtree(run_dir)
    for sub in ("cwd", "keras_home", "baselines", "inductor_cache"):
        (run_dir / sub).mkdir(parents=True)
    if variant.keras_json is not None:
        config: dict[str, Any] = {
            "floatx": "float32",
            "epsilon": 1e-07,
            "backend": backend,
            "image_data_format": "channels_last",
        }
        config.update(dict(variant.keras_json))
        (run_dir / "keras_home" / "keras.json").write_text(json.dumps(config, indent=4))
    if variant.plugin is not None or variant.venv.kind == "overlay":
        (run_dir / "plugin").mkdir()
    if variant.plugin is not None:
        (run_dir / "plugin" / "fingerprint_variant_plugin.py").write_text(variant.plugin)
    if variant.venv.kind == "overlay":
        (run_dir / "plugin" / "fingerprint_modules_report.py").write_text(MODULES_REPORT_PLUGIN)


def run_suite(
    ctx: Context, variant: Variant, run_name: str, backend: str, venv: Path
) -> RunOutcome:
    run_dir = ctx.runs_dir / run_name / backend
    json_path = ctx.runs_dir / run_name / f"{backend}.json"
    log_path = ctx.run_log_dir / f"{run_name}__{backend}.log"
    marker = ctx.runs_dir / run_name / f"{backend}.spec.json"
    argv = [
        *variant.prefix,
        str(venv_python(venv)),
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
    ]
    if variant.plugin is not None:
        argv += ["-p", "fingerprint_variant_plugin"]
    if variant.venv.kind == "overlay":
        argv += ["-p", "fingerprint_modules_report"]
    argv += [
        "--kerasperf",
        "--kerasperf-rounds=0",
        "--kerasperf-baseline-dir",
        str(run_dir / "baselines"),
        "--kerasperf-json",
        str(json_path),
        "--pyargs",
        SUITE,
    ]
    env = _run_env(ctx, variant, backend, run_dir)
    spec = {
        "plugin_hash": ctx.plugin_hash,
        "argv": argv,
        "env": {k: env[k] for k in sorted(env) if k not in os.environ or env[k] != os.environ[k]},
        "keras_json": variant.keras_json,
        "plugin": variant.plugin,
        "venv": (venv / ".fingerprint-spec.json").read_text()
        if (venv / ".fingerprint-spec.json").exists()
        else None,
    }
    key = digest(spec)
    if (
        not ctx.rerun
        and json_path.is_file()
        and marker.is_file()
        and json.loads(marker.read_text()).get("key") == key
    ):
        saved = json.loads(marker.read_text())
        return RunOutcome(
            True,
            json_path,
            log_path,
            saved["seconds"],
            0,
            cached=True,
            imported=saved.get("imported"),
        )
    _prepare_run_dir(variant, backend, run_dir)
    json_path.unlink(missing_ok=True)
    marker.unlink(missing_ok=True)
    log_path.unlink(missing_ok=True)
    log(f"run {run_name} / {backend} -> {log_path}")
    start = time.monotonic()
    rc = run_logged(argv, log_path, env=env, cwd=run_dir / "cwd", timeout=ctx.timeout)
    seconds = round(time.monotonic() - start, 1)
    log(f"  rc={rc} in {seconds}s")
    if rc != 0 or not json_path.is_file():
        return RunOutcome(
            False, json_path, log_path, seconds, rc, error=f"pytest rc={rc}\n{tail(log_path, 25)}"
        )
    imported = None
    if variant.venv.kind == "overlay":
        report = run_dir / "imported_modules.json"
        imported = json.loads(report.read_text()) if report.is_file() else None
        problem = _shadowing_problem(variant.venv, venv, imported, backend)
        if problem:
            return RunOutcome(False, json_path, log_path, seconds, rc, error=problem)
    marker.write_text(
        json.dumps({"key": key, "seconds": seconds, "spec": spec, "imported": imported}, indent=2)
    )
    return RunOutcome(True, json_path, log_path, seconds, rc, imported=imported)


def _shadowing_problem(
    spec: VenvSpec, venv: Path, imported: dict[str, Any] | None, backend: str
) -> str | None:
    """Why the suite process did not run on the overlay's copies (None if it did).

    Every shadowing module the suite imported must come from the overlay, the
    module of the run's own backend must have been imported at all, and the
    distributions' versions seen inside the suite must be the expected ones.
    """
    if imported is None:
        return "the modules report was not written: cannot tell which copies were imported"
    for module in spec.shadows:
        origin = imported["files"].get(module)
        # A module the backend never imports cannot move its counts (recorded as None).
        if origin is None and module == backend:
            return f"the {backend} suite never imported {module}: the variant was not exercised"
        if origin is not None and not str(origin).startswith(str(venv) + os.sep):
            return f"the suite imported {module} from {origin}, not from the overlay {venv}"
    for dist, want in spec.expect:
        seen = (imported.get("dists") or {}).get(dist)
        if seen != want:
            return f"inside the suite {dist} is {seen}, not {want}"
    return None


def run_probe(ctx: Context, variant: Variant, venv: Path) -> dict[str, Any] | None:
    if variant.probe is None:
        return None
    probe_dir = ctx.work_dir / "probes" / variant.name
    if probe_dir.exists():
        shutil.rmtree(probe_dir)
    (probe_dir / "keras_home").mkdir(parents=True)
    env = _run_env(ctx, variant, "jax", probe_dir)
    env.pop("KERAS_BACKEND")
    code = "import json\nout = {}\n" + variant.probe + "\nprint('PROBE' + json.dumps(out))\n"
    done = subprocess.run(
        [*variant.prefix, str(venv_python(venv)), "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=probe_dir,
        check=False,
        timeout=600,
    )
    for line in done.stdout.splitlines():
        if line.startswith("PROBE"):
            result: dict[str, Any] = json.loads(line[len("PROBE") :])
            return result
    return {"error": f"rc={done.returncode}: {done.stderr[-1500:]}"}


# ------------------------------------------------------------------ main


def default_plugin_src() -> Path:
    """The repository root: this script lives in its ``benchmarks/`` folder."""
    return Path(__file__).resolve().parents[1]


def find_interpreters(overrides: Sequence[str]) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for label, candidates in REFERENCE_INTERPRETERS.items():
        for candidate in candidates:
            path = shutil.which(candidate) if os.sep not in candidate else candidate
            if path and Path(path).exists():
                found[label] = Path(path)
                break
    for item in overrides:
        label, _, path = item.partition("=")
        if not path:
            raise SystemExit(f"--interpreter expects LABEL=PATH, got {item!r}")
        found[label] = Path(path)
    return found


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "plugin_src",
        nargs="?",
        type=Path,
        default=default_plugin_src(),
        help="plugin source tree to install (default: the repository root above this script)",
    )
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/kerasperf-fingerprint"))
    parser.add_argument("--log-dir", type=Path, help="default: WORK_DIR/logs")
    parser.add_argument(
        "--results", type=Path, help="JSON results (default: WORK_DIR/results.json)"
    )
    parser.add_argument("--markdown", type=Path, help="table (default: WORK_DIR/results.md)")
    parser.add_argument(
        "--variants", nargs="+", metavar="NAME", help="variants to run (default: all)"
    )
    parser.add_argument(
        "--backends", nargs="+", choices=BACKENDS, help="backends to run (default: each variant's)"
    )
    parser.add_argument(
        "--reference-python",
        type=Path,
        default=Path(sys.executable),
        help="interpreter of the reference and overlay venvs (default: this one)",
    )
    parser.add_argument(
        "--interpreter",
        action="append",
        default=[],
        metavar="LABEL=PATH",
        help=f"interpreter for a label ({', '.join(REFERENCE_INTERPRETERS)})",
    )
    parser.add_argument("--rerun", action="store_true", help="ignore cached suite runs")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per suite run")
    parser.add_argument(
        "--allow-unstable-reference",
        action="store_true",
        help="go on even when the two reference runs differ",
    )
    parser.add_argument("--list", action="store_true", help="list the variants and exit")
    return parser.parse_args(argv)


#: Section name for results written before runs were keyed by the plugin's hash.
LEGACY_SECTION = "unhashed (written before results were keyed by plugin source)"


def load_results_file(path: Path) -> dict[str, Any]:
    """The results JSON, one section per plugin source hash (older files are wrapped)."""
    if not path.is_file():
        return {"results_format": 2, "plugins": {}}
    data: dict[str, Any] = json.loads(path.read_text())
    if "plugins" not in data:
        legacy = {k: data[k] for k in ("reference_summary", "variants") if k in data}
        data = {"results_format": 2, "plugins": {LEGACY_SECTION: legacy}}
    return data


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        for variant in VARIANTS:
            print(f"{variant.name:34} {variant.field:45} {','.join(variant.backends)}")
        return 0
    known = {v.name for v in VARIANTS}
    unknown = set(args.variants or ()) - known
    if unknown:
        raise SystemExit(f"unknown variants: {', '.join(sorted(unknown))} (see --list)")
    work_dir: Path = args.work_dir.resolve()
    plugin_src: Path = args.plugin_src.resolve()
    if not (plugin_src / "requirements" / "ci.txt").is_file():
        raise SystemExit(f"{plugin_src}/requirements/ci.txt not found: not the plugin source?")
    ctx = Context(
        plugin_src=plugin_src,
        plugin_hash=plugin_source_hash(plugin_src),
        work_dir=work_dir,
        log_dir=(args.log_dir or work_dir / "logs").resolve(),
        reference_python=args.reference_python,
        interpreters=find_interpreters(args.interpreter),
        rerun=args.rerun,
        timeout=args.timeout,
    )
    results_path: Path = (args.results or work_dir / "results.json").resolve()
    markdown_path: Path = (args.markdown or work_dir / "results.md").resolve()
    for path in (ctx.work_dir, ctx.log_dir):
        path.mkdir(parents=True, exist_ok=True)
    log(f"plugin source {ctx.plugin_src} (hash {ctx.plugin_hash})")

    results = load_results_file(results_path)
    section: dict[str, Any] = results["plugins"].setdefault(ctx.plugin_hash, {})
    section["plugin"] = {
        "source": str(ctx.plugin_src),
        "hash": ctx.plugin_hash,
        "version": plugin_version(ctx.plugin_src),
    }
    section.setdefault("variants", {})
    selected = [v for v in VARIANTS if not args.variants or v.name in args.variants]
    wanted_backends = tuple(args.backends or BACKENDS)

    # The reference, twice per backend: the runs must agree before anything is compared.
    ref_backends = sorted(
        {b for v in selected for b in v.backends if b in wanted_backends}, key=BACKENDS.index
    )
    reference = next(v for v in VARIANTS if v.name == "reference")
    ref_venv, ref_versions = ensure_venv(ctx, REFERENCE_VENV)
    ref_entry = section["variants"].setdefault("reference", {})
    ref_entry.update(
        field=reference.field,
        description=reference.description,
        versions=ref_versions,
        probe=run_probe(ctx, reference, ref_venv),
    )
    ref_entry.setdefault("backends", {})
    unstable: list[str] = []
    for backend in ref_backends:
        outcomes = [run_suite(ctx, reference, name, backend, ref_venv) for name in REFERENCE_RUNS]
        failed = [o for o in outcomes if not o.ok]
        if failed:
            raise SystemExit(f"reference run failed on {backend}: {failed[0].error}")
        comparison = compare(outcomes[0].json_path, outcomes[1].json_path)
        ref_entry["backends"][backend] = {
            "comparison": comparison,
            "seconds": [o.seconds for o in outcomes],
            "calls": {short_test(k): t["calls_reference"] for k, t in comparison["tests"].items()},
            "graph_breaks": {
                short_test(k): t["graph_breaks_reference"] for k, t in comparison["tests"].items()
            },
        }
        if comparison["moves_counts"]:
            unstable.append(backend)
        write_outputs(results, results_path, markdown_path)
    section["reference_summary"] = f"Python {ref_versions['python']}, " + ", ".join(
        f"{k} {v}" for k, v in ref_versions["dists"].items() if v
    )
    write_outputs(results, results_path, markdown_path)
    if unstable and not args.allow_unstable_reference:
        log(f"STOP: the two reference runs differ on {', '.join(unstable)}")
        return 2

    for variant in selected:
        if variant.name == "reference":
            continue
        entry: dict[str, Any] = section["variants"].setdefault(variant.name, {})
        entry.update(
            field=variant.field,
            description=variant.description,
            env=dict(variant.env),
            keras_json=dict(variant.keras_json) if variant.keras_json is not None else None,
            prefix=list(variant.prefix),
            plugin=variant.plugin,
            shadows=list(variant.venv.shadows),
        )
        entry.setdefault("backends", {})
        if variant.skip_reason:
            entry["skipped"] = variant.skip_reason
            continue
        try:
            venv, versions = ensure_venv(ctx, variant.venv)
        except BuildError as error:
            entry["skipped"] = f"environment could not be built: {error}"
            log(f"skip {variant.name}: {error}")
            write_outputs(results, results_path, markdown_path)
            continue
        entry.pop("skipped", None)
        entry["versions"] = versions
        entry["probe"] = run_probe(ctx, variant, venv)
        for backend in variant.backends:
            if backend not in wanted_backends:
                continue
            outcome = run_suite(ctx, variant, variant.name, backend, venv)
            if not outcome.ok:
                entry["backends"][backend] = {"error": outcome.error, "seconds": outcome.seconds}
            else:
                reference_json = ctx.runs_dir / REFERENCE_RUNS[0] / f"{backend}.json"
                entry["backends"][backend] = {
                    "comparison": compare(reference_json, outcome.json_path),
                    "seconds": outcome.seconds,
                    "imported": outcome.imported,
                }
            write_outputs(results, results_path, markdown_path)
    write_outputs(results, results_path, markdown_path)
    log(f"wrote {results_path} and {markdown_path}")
    return 0


def write_outputs(results: dict[str, Any], json_path: Path, md_path: Path) -> None:
    order = [v.name for v in VARIANTS]
    for section in results["plugins"].values():
        section["variants"] = dict(
            sorted(
                section.get("variants", {}).items(),
                key=lambda item: order.index(item[0]) if item[0] in order else len(order),
            )
        )
        for entry in section["variants"].values():
            entry["backends"] = dict(
                sorted(
                    entry.get("backends", {}).items(),
                    key=lambda item: BACKENDS.index(item[0]),
                )
            )
    results["generated"] = datetime.datetime.now().isoformat(timespec="seconds")
    json_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = json_path.with_suffix(json_path.suffix + ".tmp")
    tmp.write_text(json.dumps(results, indent=2, sort_keys=False) + "\n")
    tmp.replace(json_path)
    md_path.write_text(markdown(results))


if __name__ == "__main__":
    sys.exit(main())
