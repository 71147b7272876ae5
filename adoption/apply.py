#!/usr/bin/env python3
"""Adopt pytest-kerasperf in a Keras checkout, then run Keras's own commands on it.

    python adoption/apply.py /path/to/keras          # a checkout (or `git archive` export)
    python adoption/apply.py --from-installed DIR    # a tree built from the installed keras

1. Adds the files of the Keras pull request: everything under adoption/keras/
   (the perf tests, the workflows and their scripts); requirements-kerasperf.txt
   generated from this project's requirements/perf.txt without its keras pin,
   plus ``pytest-kerasperf==<version>`` (and requirements-kerasperf-<backend>-cuda.txt
   from requirements/perf-gpu-<backend>.txt); two ini lines in pyproject.toml's
   ``[tool.pytest.ini_options]`` (a minimal text edit).
2. For each variant of Keras's CPU matrix (numpy, jax, jax with NNX, torch,
   tensorflow, openvino), with the checkout's KERAS_HOME config of that backend,
   PYTHONHASHSEED=0 and PYTHONPATH=<tree> (the tree's keras is imported; nothing
   is installed): one ``--kerasperf-update-baseline`` run, then the gate
   ``--kerasperf --kerasperf-strict --kerasperf-json``, each as the workflow runs
   it (``-n 2 --dist loadfile``). Both must be green; ``--gates N`` gates N times after
   the one recording, each green (which worker runs which file changes between runs).
3. ``kerasperf report`` of every variant's results, as the workflow's report job.
4. When the tree has Keras's tests: a Keras test module (default
   keras/src/layers/core) run with the plugin installed and again with it
   disabled (``-p no:kerasperf -p no:benchmark``, as if not installed), under
   Keras's own pytest configuration (filterwarnings = error): same exit status
   and the same passed/failed/skipped counts.

Prints a table and writes it as Markdown and JSON to --report DIR, with every
command's log and results file. Exit status 0 when every step is green, 1 when
one is not, 2 on a usage error (one line on stderr).

The plugin is the one installed next to the Python running this script (as long
as pytest-kerasperf is not on PyPI: this repository's, ``pip install -e .``).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import tomllib
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NoReturn

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: The files the pull request adds, laid out as in a Keras checkout.
TEMPLATES = HERE / "keras"
PERF_TEST = "keras/src/models/model_perf_test.py"
#: the bundled census (docs/census.md), run beside the module with --census
CENSUS = "pytest_kerasperf.census"
BASELINE_DIR = "benchmarks/kerasperf/baselines"
REQUIREMENTS = "requirements-kerasperf.txt"
GPU_BACKENDS = ("jax", "tensorflow", "torch")
#: The lines the pull request adds to [tool.pytest.ini_options]: where the entries live, the
#: pinned set a mismatch names, and the ratchet (a win not recorded fails: docs/baselines.md).
INI_SETTINGS = (
    ("kerasperf_baseline_dir", BASELINE_DIR),
    ("kerasperf_requirements", REQUIREMENTS),
    ("kerasperf_ratchet", "true"),
)
DEFAULT_MODULE = "keras/src/layers/core"
DEFAULT_MODULE_BACKENDS = ("numpy", "torch")
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"

#: Keras's CI configs (keras-team/keras .github/workflows/config/<backend>/keras.json).
KERAS_CI_CONFIG: dict[str, dict[str, Any]] = {
    "tensorflow": {
        "floatx": "float32",
        "epsilon": 1e-07,
        "backend": "tensorflow",
        "image_data_format": "channels_last",
    },
    "jax": {
        "floatx": "float32",
        "epsilon": 1e-07,
        "backend": "jax",
        "image_data_format": "channels_last",
        "nnx_enabled": False,
    },
    "torch": {
        "floatx": "float32",
        "epsilon": 1e-07,
        "backend": "torch",
        "image_data_format": "channels_first",
    },
    "numpy": {
        "floatx": "float32",
        "epsilon": 1e-07,
        "backend": "numpy",
        "image_data_format": "channels_last",
    },
    "openvino": {
        "floatx": "float32",
        "epsilon": 1e-07,
        "backend": "openvino",
        "image_data_format": "channels_last",
    },
}

#: Keras's pytest settings (keras-team/keras pyproject.toml), for --from-installed.
KERAS_PYTEST_INI = """\
[tool.pytest.ini_options]
filterwarnings = [
    "error",
    "ignore::DeprecationWarning",
    "ignore::ImportWarning",
    "ignore::RuntimeWarning",
    "ignore::PendingDeprecationWarning",
    "ignore::FutureWarning",
    "ignore::UserWarning",
    # Ignore a spurious warning on tf-nightly related to save model changes.
    "ignore:Custom mask layers require a config",
]
addopts = "-vv"

# Do not run tests in the `build` folders
norecursedirs = ["build"]
"""


class AdoptionError(Exception):
    """A usage error: printed as one line, exit status 2."""


@dataclass(frozen=True)
class Variant:
    """One job of Keras's CPU matrix: a backend, and on jax whether NNX is on."""

    name: str  # as `kerasperf report --expect` names it: "jax-nnx"
    backend: str
    nnx: bool = False


VARIANTS = (
    Variant("numpy", "numpy"),
    Variant("jax", "jax"),
    Variant("jax-nnx", "jax", nnx=True),
    Variant("torch", "torch"),
    Variant("tensorflow", "tensorflow"),
    Variant("openvino", "openvino"),
)
VARIANT_NAMES = tuple(v.name for v in VARIANTS)


@dataclass
class FileChange:
    path: str  # relative to the tree
    status: str  # added, updated, unchanged


@dataclass
class Step:
    """One command: its exit status (None: timed out), wall time and log."""

    command: list[str]
    exit_code: int | None
    seconds: float
    log: str
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


@dataclass
class VariantResult:
    variant: str
    backend: str
    nnx: bool
    baseline_variant: str | None = None  # py3.11-cpu, py3.11-cpu-nnx: from the results
    update: Step | None = None
    gate: Step | None = None
    measured: int = 0
    compared: int = 0
    calls: dict[str, int] = field(default_factory=dict)  # test key -> calls per workload call
    graph_breaks: dict[str, int] = field(default_factory=dict)  # torch compiled only
    baseline_files: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def green(self) -> bool:
        return not self.problems


@dataclass
class Outcome:
    """A pytest run of Keras tests: exit status and the summary line's counts."""

    exit_code: int | None
    counts: dict[str, int]
    summary: str
    seconds: float
    log: str


#: Summary-line counts that make an outcome (warnings are shown, not compared).
COMPARED_COUNTS = ("passed", "failed", "skipped", "errors", "xfailed", "xpassed")


@dataclass
class ModuleCheck:
    module: str
    backend: str
    installed: Outcome
    disabled: Outcome

    @property
    def same(self) -> bool:
        def key(outcome: Outcome) -> tuple[Any, ...]:
            counts = outcome.counts
            compared = sorted(
                (name, n)
                for name, n in counts.items()
                if name in COMPARED_COUNTS or name.startswith("subtests")
            )
            return (outcome.exit_code, tuple(compared))

        return self.installed.exit_code is not None and key(self.installed) == key(self.disabled)


@dataclass
class Report:
    tree: str
    keras_version: str | None
    keras_commit: str | None
    plugin_version: str
    python: str
    date: str
    select: str | None
    census: bool = True
    files: list[FileChange] = field(default_factory=list)
    variants: list[VariantResult] = field(default_factory=list)
    report_step: Step | None = None
    without_plugin: Outcome | None = None  # the perf module where the plugin is not installed
    modules: list[ModuleCheck] = field(default_factory=list)
    module_note: str | None = None

    @property
    def green(self) -> bool:
        return (
            all(v.green for v in self.variants)
            and (self.report_step is None or self.report_step.ok)
            and (self.without_plugin is None or skipped_whole(self.without_plugin))
            and all(m.same for m in self.modules)
        )


def skipped_whole(outcome: Outcome) -> bool:
    """The perf module without the plugin: skipped as one module, nothing else.

    Alone it exits 5 (no tests collected: the module skipped itself at import);
    in Keras's ``pytest keras`` it is one skipped module among the tests.
    """
    return outcome.exit_code in (0, 5) and {
        k: n for k, n in outcome.counts.items() if k != "warnings"
    } == {"skipped": 1}


# --- the files of the pull request ------------------------------------------------------------


def plugin_version() -> str:
    """``__version__`` of this repository's pytest_kerasperf, read without importing it."""
    text = (ROOT / "pytest_kerasperf" / "__init__.py").read_text()
    found = re.search(r'^__version__ = "([^"]+)"$', text, re.MULTILINE)
    if found is None:
        raise AdoptionError("pytest_kerasperf/__init__.py: no __version__ line")
    return found.group(1)


_KERAS_PIN = re.compile(r"^keras\s*(?:[=<>!~;\[@ ]|$)", re.IGNORECASE)


def requirements_text(source: Path, version: str, *, gpu_backend: str | None = None) -> str:
    """A pinned perf environment of this project, for Keras: no keras pin, the plugin pinned."""
    body: list[str] = []
    options: list[str] = []
    for line in source.read_text().splitlines():
        entry = line.split(" #", 1)[0].strip()
        if not entry or entry.startswith("#") or _KERAS_PIN.match(entry):
            continue
        (options if entry.startswith("-") else body).append(entry)
    cpu_wheels = gpu_backend is None and any("+cpu" in e for e in body)
    if cpu_wheels and not any(TORCH_CPU_INDEX in o for o in options):
        options.insert(0, f"--extra-index-url {TORCH_CPU_INDEX}")
    body.append(f"pytest-kerasperf=={version}")
    if gpu_backend is None:
        what = (
            "The pinned perf environment of keras/src/models/model_perf_test.py "
            "(.github/workflows/kerasperf.yml and kerasperf-rebaseline.yml)."
        )
        origin = "requirements/perf.txt"
    else:
        what = (
            f"The pinned perf environment of a GPU runner for the {gpu_backend} backend "
            f"(.github/workflows/kerasperf-gpu.yml), CUDA builds as "
            f"requirements-{gpu_backend}-cuda.txt installs them."
        )
        origin = f"requirements/perf-gpu-{gpu_backend}.txt"
    paragraph = (
        f"{what} pytest-kerasperf {version}'s {origin} without its keras pin: Keras is "
        "this checkout. Call counts are exact for one set of versions only: a baseline "
        "measured under others is not compared, and the run names this file. To move a "
        "pin, change it here, re-record every variant (the kerasperf rebaseline workflow) "
        "and commit the pins and the baselines together. Generated by pytest-kerasperf's "
        "adoption/apply.py."
    )
    head = textwrap.wrap(
        paragraph,
        width=78,
        initial_indent="# ",
        subsequent_indent="# ",
        break_on_hyphens=False,
        break_long_words=False,
    )
    return "\n".join([*head, *options, *body]) + "\n"


def generated_files(version: str) -> dict[str, str]:
    """The requirements files of the pull request, by path in the tree."""
    files = {REQUIREMENTS: requirements_text(ROOT / "requirements" / "perf.txt", version)}
    for backend in GPU_BACKENDS:
        source = ROOT / "requirements" / f"perf-gpu-{backend}.txt"
        if source.is_file():
            files[f"requirements-kerasperf-{backend}-cuda.txt"] = requirements_text(
                source, version, gpu_backend=backend
            )
    return files


_CACHES = frozenset({"__pycache__", ".ruff_cache", ".pytest_cache", ".mypy_cache"})


def template_files() -> list[Path]:
    """The files under adoption/keras/, relative to it."""
    return sorted(
        path.relative_to(TEMPLATES)
        for path in TEMPLATES.rglob("*")
        if path.is_file()
        and not _CACHES.intersection(path.relative_to(TEMPLATES).parts)
        and path.suffix != ".pyc"
    )


_INI_TABLE = re.compile(r"^\[\s*tool\s*\.\s*pytest\s*\.\s*ini_options\s*\]\s*(#.*)?$")
_TABLE = re.compile(r"^\[")


def _parse_toml(text: str, where: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise AdoptionError(f"{where}: not valid TOML ({error})") from None


def add_ini_lines(text: str, where: str = "pyproject.toml") -> str:
    """``text`` with the kerasperf ini lines at the end of [tool.pytest.ini_options].

    A minimal text edit: nothing else changes, and a file that has them already
    comes back unchanged.  A file without the table, or setting one of the keys
    to another value, is refused.
    """
    document = _parse_toml(text, where)
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if _INI_TABLE.match(line.strip())), None)
    if start is None:
        raise AdoptionError(
            f"{where}: no [tool.pytest.ini_options] table (Keras's pytest settings) "
            "to add the kerasperf lines to"
        )
    ini = document.get("tool", {}).get("pytest", {}).get("ini_options", {})
    missing = []
    for key, value in INI_SETTINGS:
        if key not in ini:
            missing.append(f'{key} = "{value}"\n')
        elif ini[key] != value:
            raise AdoptionError(
                f"{where}: [tool.pytest.ini_options] sets {key} = {ini[key]!r}, not {value!r}"
            )
    if not missing:
        return text
    end = next(
        (i for i in range(start + 1, len(lines)) if _TABLE.match(lines[i])),
        len(lines),
    )
    last = start
    for i in range(start + 1, end):
        stripped = lines[i].strip()
        if stripped and not stripped.startswith("#"):
            last = i
    if not lines[last].endswith("\n"):
        lines[last] += "\n"
    lines[last + 1 : last + 1] = missing
    edited = "".join(lines)
    after = _parse_toml(edited, where)["tool"]["pytest"]["ini_options"]
    if any(after.get(key) != value for key, value in INI_SETTINGS):
        raise AdoptionError(f"{where}: the kerasperf lines did not land in the table")
    return edited


def _write(path: Path, content: bytes) -> str:
    if path.is_file() and path.read_bytes() == content:
        return "unchanged"
    status = "updated" if path.exists() else "added"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return status


def add_files(tree: Path) -> list[FileChange]:
    """Add the pull request's files to ``tree`` and edit its pyproject.toml."""
    changes = []
    for relative in template_files():
        status = _write(tree / relative, (TEMPLATES / relative).read_bytes())
        changes.append(FileChange(relative.as_posix(), status))
    for name, text in generated_files(plugin_version()).items():
        changes.append(FileChange(name, _write(tree / name, text.encode())))
    pyproject = tree / "pyproject.toml"
    before = pyproject.read_text()
    after = add_ini_lines(before, str(pyproject))
    changes.append(FileChange("pyproject.toml", _write(pyproject, after.encode())))
    return changes


# --- the tree -----------------------------------------------------------------------------------


def check_tree(tree: Path, backends: Sequence[str]) -> None:
    """A Keras checkout: its package, its pyproject.toml and its CI configs."""
    if not tree.is_dir():
        raise AdoptionError(f"{tree}: no such directory")
    if not (tree / "keras" / "__init__.py").is_file() or not (tree / "keras" / "src").is_dir():
        raise AdoptionError(f"{tree}: not a Keras checkout (no keras/__init__.py and keras/src/)")
    if not (tree / "pyproject.toml").is_file():
        raise AdoptionError(f"{tree}: not a Keras checkout (no pyproject.toml)")
    for backend in backends:
        config = tree / ".github" / "workflows" / "config" / backend / "keras.json"
        if not config.is_file():
            raise AdoptionError(f"{tree}: no {config.relative_to(tree)} (Keras's CI config)")


def build_from_installed(directory: Path) -> Path:
    """A Keras tree from the installed keras package: no Keras tests in it."""
    spec = importlib.util.find_spec("keras")
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:
        raise AdoptionError("no installed keras package to build a tree from")
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise AdoptionError(f"{directory}: exists and is not an empty directory")
    source = Path(locations[0])
    shutil.copytree(
        source, directory / "keras", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    for backend, config in KERAS_CI_CONFIG.items():
        path = directory / ".github" / "workflows" / "config" / backend / "keras.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(config, indent=4) + "\n")
    version = _keras_version(directory)
    (directory / "pyproject.toml").write_text(
        f"# A Keras tree built by pytest-kerasperf's adoption/apply.py from the installed\n"
        f"# keras {version} ({source}): Keras's pytest settings.\n\n" + KERAS_PYTEST_INI
    )
    return directory


def _keras_version(tree: Path) -> str | None:
    version_file = tree / "keras" / "src" / "version.py"
    if not version_file.is_file():
        return None
    found = re.search(r'^__version__ = "([^"]+)"', version_file.read_text(), re.MULTILINE)
    return found.group(1) if found else None


def _keras_commit(tree: Path) -> str | None:
    if not (tree / ".git").exists():
        return None
    proc = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    )
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def has_keras_tests(tree: Path, module: str) -> bool:
    """Whether ``module`` holds Keras tests, with Keras's conftest.py to run them by.

    A tree built --from-installed has neither (the conftest.py is not part of
    the package, and without it numpy runs tests Keras skips there).
    """
    path = tree / module
    if not (tree / "conftest.py").is_file():
        return False
    return path.is_file() or (path.is_dir() and any(path.rglob("*_test.py")))


# --- running Keras's commands -------------------------------------------------------------------


def base_env() -> dict[str, str]:
    """This process's environment without what would steer the runs elsewhere."""
    dropped = ("PYTHONPATH", "GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY")
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "KERAS_")) and k not in dropped
    }


def keras_env(tree: Path, backend: str) -> dict[str, str]:
    """As Keras's test job runs: KERAS_HOME its backend's config; the tree's keras imported."""
    env = base_env()
    env["KERAS_HOME"] = f".github/workflows/config/{backend}"
    env["PYTHONPATH"] = str(tree)
    return env


def perf_env(tree: Path, variant: Variant) -> dict[str, str]:
    """As the kerasperf job runs: Keras's, plus KERAS_NNX_ENABLED and PYTHONHASHSEED=0."""
    env = keras_env(tree, variant.backend)
    env["KERAS_NNX_ENABLED"] = "true" if variant.nnx else "false"
    env["PYTHONHASHSEED"] = "0"
    return env


def run_command(
    command: list[str], *, cwd: Path, env: dict[str, str], log: Path, timeout: float
) -> Step:
    """Run ``command`` with its output in ``log``; on timeout, end its whole process group."""
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with log.open("w") as out:
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        process = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            code: int | None = process.wait(timeout=timeout)
            note = ""
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            code, note = None, f"timed out after {timeout:.0f} s"
    return Step(command, code, round(time.monotonic() - start, 1), str(log), note)


_CLOSING = re.compile(r"^kerasperf: (\d+) perf tests?: (\d+) measured, (\d+) compared", re.M)
_CHANGE = re.compile(r"^\s+(added|updated|unchanged|removed)\s+\S", re.M)
_SUMMARY = re.compile(r"^=+ (.+?) in [\d.]+s(?: \([\d:]+\))? =+$", re.M)
_COUNT = re.compile(r"^(\d+) (.+)$")


def closing_line(output: str) -> tuple[int, int] | None:
    """(measured, compared) from the plugin's closing line."""
    found = _CLOSING.findall(output)
    if not found:
        return None
    _, measured, compared = found[-1]
    return int(measured), int(compared)


def baseline_changes(output: str) -> dict[str, int]:
    return dict(Counter(_CHANGE.findall(output)))


def pytest_summary(output: str) -> tuple[str, dict[str, int]]:
    """pytest's last summary line and its counts (``error`` as ``errors``)."""
    found = _SUMMARY.findall(output)
    if not found:
        return "", {}
    line = found[-1]
    counts: dict[str, int] = {}
    for part in line.split(", "):
        match = _COUNT.match(part.strip())
        if match:
            name = {"error": "errors", "warning": "warnings"}.get(match.group(2), match.group(2))
            counts[name] = int(match.group(1))
    return line, counts


def _tail(path: str, lines: int = 15) -> str:
    text = Path(path).read_text(errors="replace").splitlines()
    return "\n".join(text[-lines:])


def run_variant(
    tree: Path, variant: Variant, args: argparse.Namespace, report_dir: Path
) -> VariantResult:
    result = VariantResult(variant.name, variant.backend, variant.nnx)
    env = perf_env(tree, variant)
    targets = [PERF_TEST, "--pyargs", CENSUS] if args.census else [PERF_TEST]
    common = [args.python, "-m", "pytest", *targets, "-n", str(args.workers), "--dist", "loadfile"]
    if args.select:
        common += ["-k", args.select]
    logs = report_dir / "logs"

    _progress(f"== {variant.name}: update")
    result.update = run_command(
        [*common, "--kerasperf-update-baseline"],
        cwd=tree,
        env=env,
        log=logs / f"{variant.name}-update.log",
        timeout=args.timeout,
    )
    output = Path(result.update.log).read_text(errors="replace")
    changes = baseline_changes(output)
    result.update.note = result.update.note or ", ".join(f"{n} {k}" for k, n in changes.items())
    if not result.update.ok:
        result.problems.append(
            f"update: exit status {result.update.exit_code} {result.update.note}".strip()
        )
    _progress(f"   {_step_text(result.update)} in {result.update.seconds:.0f} s")

    results_file = report_dir / f"kerasperf-results-{variant.name}.json"
    for attempt in range(1, args.gates + 1):  # each must be green: counts follow no order
        results_file.unlink(missing_ok=True)
        which = f" {attempt} of {args.gates}" if args.gates > 1 else ""
        _progress(f"== {variant.name}: gate{which}")
        result.gate = run_command(
            [*common, "--kerasperf", "--kerasperf-strict", f"--kerasperf-json={results_file}"],
            cwd=tree,
            env=env,
            log=logs / f"{variant.name}-gate{attempt if args.gates > 1 else ''}.log",
            timeout=args.timeout,
        )
        output = Path(result.gate.log).read_text(errors="replace")
        counted = closing_line(output)
        if counted is not None:
            result.measured, result.compared = counted
            result.gate.note = result.gate.note or f"{counted[1]}/{counted[0]} compared"
        if not result.gate.ok:
            result.problems.append(
                f"gate{which}: exit status {result.gate.exit_code} {result.gate.note}".strip()
            )
        _progress(f"   {_step_text(result.gate)} in {result.gate.seconds:.0f} s")

    if results_file.is_file():
        # Read as any results file is: checked, typed (the plugin's own model).
        from pytest_kerasperf.results_file import InputError, load_results

        try:
            loaded = load_results(results_file)
        except InputError as error:
            raise AdoptionError(str(error)) from None
        records = loaded.outcomes
        for outcome in records:
            result.calls[outcome.key] = outcome.record.calls
            if outcome.record.graph_breaks is not None:
                result.graph_breaks[outcome.key] = outcome.record.graph_breaks.breaks
        variants = sorted({o.variant for o in records if o.variant})
        result.baseline_variant = ", ".join(variants) or None
        if loaded.summary is not None:
            result.measured = loaded.summary.measured
            result.compared = loaded.summary.compared
        entries = 0
        for name in variants:
            directory = tree / BASELINE_DIR / variant.backend / name
            found = sorted(directory.rglob("*.json"))
            result.baseline_files += [p.relative_to(tree).as_posix() for p in found]
            entries += sum(baseline_entries(p) for p in found)
        if not records:
            result.problems.append("gate: no perf test measured")
        elif not result.baseline_files:
            result.problems.append(f"no baseline files under {BASELINE_DIR}/{variant.backend}/")
        elif entries < len(records):
            result.problems.append(
                f"{entries} baseline entries ({len(result.baseline_files)} files) for "
                f"{len(records)} tests"
            )
    else:
        result.problems.append("gate: no results file")
    if result.measured == 0 or result.compared != result.measured:
        result.problems.append(f"gate: {result.compared} of {result.measured} tests compared")
    return result


def baseline_entries(path: Path) -> int:
    """Tests a baseline file holds: a census table (``*.table.json``) one per entry, any other
    file one."""
    if not path.name.endswith(".table.json"):
        return 1
    try:
        entries = json.loads(path.read_text(encoding="utf-8")).get("entries", {})
    except (OSError, ValueError, AttributeError):
        return 0
    return len(entries) if isinstance(entries, dict) else 0


def run_report(
    tree: Path, results: list[VariantResult], args: argparse.Namespace, report_dir: Path
) -> Step:
    """``kerasperf report ... --expect ...``, as the workflow's report job runs it."""
    files = [
        str(report_dir / f"kerasperf-results-{r.variant}.json")
        for r in results
        if (report_dir / f"kerasperf-results-{r.variant}.json").is_file()
    ]
    command = [
        args.python,
        "-m",
        "pytest_kerasperf",
        "report",
        *files,
        "--expect",
        *[r.variant for r in results],
        "--markdown",
        str(report_dir / "kerasperf-report.md"),
    ]
    _progress("== kerasperf report")
    step = run_command(
        command, cwd=tree, env=base_env(), log=report_dir / "logs" / "report.log", timeout=600
    )
    _progress(f"   {_step_text(step)} in {step.seconds:.0f} s")
    return step


#: pytest as where pytest-kerasperf is not installed (Keras's regular CI): its
#: entry point and pytest-benchmark's are not loaded, and importing the package fails.
_WITHOUT_PLUGIN = (
    "import sys; sys.modules['pytest_kerasperf'] = None; import pytest; "
    "sys.exit(pytest.main(sys.argv[1:] + ['-p', 'no:kerasperf', '-p', 'no:benchmark', '-rs']))"
)


def run_without_plugin(tree: Path, args: argparse.Namespace, report_dir: Path) -> Outcome:
    """The perf module as Keras's regular CI collects it: one module skipped, with its reason."""
    _progress(f"== {PERF_TEST} without the plugin (Keras's regular CI)")
    step = run_command(
        [args.python, "-c", _WITHOUT_PLUGIN, PERF_TEST],
        cwd=tree,
        env=keras_env(tree, "numpy"),
        log=report_dir / "logs" / "perf-module-without-plugin.log",
        timeout=600,
    )
    output = Path(step.log).read_text(errors="replace")
    line, counts = pytest_summary(output)
    reason = re.search(r"^SKIPPED \[\d+\] (.+)$", output, re.M)
    summary = f"{line}: {reason.group(1)}" if line and reason else line or step.note
    _progress(f"   exit {step.exit_code}: {summary} in {step.seconds:.0f} s")
    return Outcome(step.exit_code, counts, summary, step.seconds, step.log)


def run_module_check(
    tree: Path, module: str, backend: str, args: argparse.Namespace, report_dir: Path
) -> ModuleCheck:
    """Keras's tests of ``module`` with the plugin installed, then disabled: alike?"""
    env = keras_env(tree, backend)
    command = [args.python, "-m", "pytest", module, "-n", str(args.workers), "--dist", "loadfile"]
    outcomes = []
    runs: tuple[tuple[str, list[str]], ...] = (
        ("installed", []),
        ("disabled", ["-p", "no:kerasperf", "-p", "no:benchmark"]),
    )
    for label, extra in runs:
        _progress(f"== {module} on {backend}: plugin {label}")
        slug = module.strip("/").replace("/", "-")
        step = run_command(
            [*command, *extra],
            cwd=tree,
            env=env,
            log=report_dir / "logs" / f"module-{slug}-{backend}-{label}.log",
            timeout=args.timeout,
        )
        line, counts = pytest_summary(Path(step.log).read_text(errors="replace"))
        outcomes.append(Outcome(step.exit_code, counts, line or step.note, step.seconds, step.log))
        _progress(f"   exit {step.exit_code}: {line or step.note} in {step.seconds:.0f} s")
    return ModuleCheck(module, backend, outcomes[0], outcomes[1])


# --- the report ---------------------------------------------------------------------------------


def _progress(text: str) -> None:
    print(text, flush=True)


def _step_text(step: Step | None) -> str:
    if step is None:
        return "-"
    if step.exit_code is None:
        return f"FAILED ({step.note})"
    verdict = "green" if step.ok else f"FAILED (exit {step.exit_code})"
    return f"{verdict}: {step.note}" if step.note and step.ok else verdict


def _outcome_text(outcome: Outcome) -> str:
    return f"exit {outcome.exit_code}: {outcome.summary}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows, strict=True)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(header, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    return lines


def _markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines


def variant_rows(report: Report) -> tuple[list[str], list[list[str]]]:
    header = [
        "variant",
        "baseline variant",
        "update",
        "gate",
        "measured",
        "compared",
        "update s",
        "gate s",
    ]
    rows = [
        [
            v.variant,
            v.baseline_variant or "-",
            _step_text(v.update),
            _step_text(v.gate),
            str(v.measured),
            str(v.compared),
            f"{v.update.seconds:.0f}" if v.update else "-",
            f"{v.gate.seconds:.0f}" if v.gate else "-",
        ]
        for v in report.variants
    ]
    return header, rows


def calls_rows(report: Report) -> tuple[list[str], list[list[str]]]:
    tests = sorted({key for v in report.variants for key in v.calls})
    header = ["test", *[v.variant for v in report.variants]]
    rows = []
    for key in tests:
        cells = []
        for v in report.variants:
            calls = v.calls.get(key)
            text = "-" if calls is None else f"{calls:,}"
            if key in v.graph_breaks:
                text += f" ({v.graph_breaks[key]} graph breaks)"
            cells.append(text)
        rows.append([key, *cells])
    return header, rows


def module_rows(report: Report) -> tuple[list[str], list[list[str]]]:
    header = ["module", "backend", "plugin installed", "plugin disabled", "same"]
    rows = [
        [
            m.module,
            m.backend,
            _outcome_text(m.installed),
            _outcome_text(m.disabled),
            "yes" if m.same else "NO",
        ]
        for m in report.modules
    ]
    return header, rows


def _heading(report: Report) -> list[str]:
    commit = f", commit {report.keras_commit}" if report.keras_commit else ""
    select = f"-k {report.select!r}" if report.select else "all"
    return [
        f"Keras tree: {report.tree} (keras {report.keras_version or '?'}{commit})",
        f"pytest-kerasperf {report.plugin_version}, Python {report.python}, {report.date}",
        f"perf tests: {PERF_TEST}{f' and {CENSUS}' if report.census else ''} ({select})",
    ]


def render_text(report: Report) -> str:
    lines = [*_heading(report), ""]
    lines += _table(*variant_rows(report))
    if any(v.calls for v in report.variants):
        lines += ["", "calls per workload call (gate):"]
        lines += _table(*calls_rows(report))
    if report.report_step is not None:
        lines += ["", f"kerasperf report --expect ...: {_step_text(report.report_step)}"]
    if report.without_plugin is not None:
        lines += [f"{PERF_TEST} without the plugin: {_outcome_text(report.without_plugin)}"]
    if report.modules:
        lines += ["", "Keras's tests with the plugin installed and disabled:"]
        lines += _table(*module_rows(report))
    if report.module_note:
        lines += ["", report.module_note]
    for v in report.variants:
        for problem in v.problems:
            lines.append(f"{v.variant}: {problem}")
    lines += ["", "GREEN" if report.green else "NOT GREEN"]
    return "\n".join(lines) + "\n"


def render_markdown(report: Report) -> str:
    lines = ["# pytest-kerasperf in a Keras checkout", ""]
    lines += [f"- {line}" for line in _heading(report)]
    lines += ["", *_markdown_table(*variant_rows(report))]
    if any(v.calls for v in report.variants):
        lines += ["", "Calls per workload call (gate):", ""]
        lines += _markdown_table(*calls_rows(report))
    if report.report_step is not None:
        lines += ["", f"`kerasperf report --expect ...`: {_step_text(report.report_step)}"]
    if report.without_plugin is not None:
        lines += [
            "",
            f"`{PERF_TEST}` without the plugin (Keras's regular CI): "
            f"{_outcome_text(report.without_plugin)}",
        ]
    if report.modules:
        lines += ["", "Keras's tests with the plugin installed and disabled:", ""]
        lines += _markdown_table(*module_rows(report))
    if report.module_note:
        lines += ["", report.module_note]
    problems = [f"- {v.variant}: {p}" for v in report.variants for p in v.problems]
    if problems:
        lines += ["", "Problems:", "", *problems]
    lines += ["", "**green**" if report.green else "**NOT green**"]
    return "\n".join(lines) + "\n"


def report_json(report: Report) -> dict[str, Any]:
    data = asdict(report)
    data["green"] = report.green
    if report.without_plugin is not None:
        data["without_plugin"]["green"] = skipped_whole(report.without_plugin)
    for variant, entry in zip(report.variants, data["variants"], strict=True):
        entry["green"] = variant.green
    for module, entry in zip(report.modules, data["modules"], strict=True):
        entry["same"] = module.same
    return data


# --- the command --------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="apply.py",
        description="Add pytest-kerasperf to a Keras checkout as the Keras pull request does, "
        "then run Keras's own commands on it: record and gate the perf tests on every variant "
        "of Keras's CPU matrix, and check that Keras's tests end alike with the plugin "
        "installed and disabled.",
    )
    parser.add_argument("keras", nargs="?", type=Path, help="a Keras checkout (or export)")
    parser.add_argument(
        "--from-installed",
        type=Path,
        metavar="DIR",
        help="instead of a checkout: build a Keras tree in DIR (new or empty) from the installed "
        "keras package, with Keras's CI configs and pytest settings (no Keras tests)",
    )
    parser.add_argument(
        "--variants",
        nargs="+",
        choices=VARIANT_NAMES,
        default=list(VARIANT_NAMES),
        metavar="VARIANT",
        help=f"variants to run ({' '.join(VARIANT_NAMES)}; default: all)",
    )
    parser.add_argument(
        "-k", dest="select", metavar="EXPR", help="pytest -k expression on the perf tests"
    )
    parser.add_argument(
        "--module",
        default=DEFAULT_MODULE,
        help=f"Keras test module or directory run with and without the plugin ({DEFAULT_MODULE})",
    )
    parser.add_argument(
        "--module-backends",
        nargs="*",
        choices=tuple(KERAS_CI_CONFIG),
        default=list(DEFAULT_MODULE_BACKENDS),
        metavar="BACKEND",
        help="backends of that check (default: numpy torch; none: no check)",
    )
    parser.add_argument(
        "--report",
        type=Path,
        metavar="DIR",
        help="where the report, the results files and the logs go (default: a new temporary "
        "directory)",
    )
    parser.add_argument(
        "--keras-commit",
        metavar="SHA",
        help="the commit the tree was exported from, for the report (default: the checkout's HEAD)",
    )
    parser.add_argument(
        "--census",
        action=argparse.BooleanOptionalAction,
        default=True,
        help=f"record and gate the census ({CENSUS}: every public layer, op, loss, metric, "
        "optimizer and callback, the Model API) in the same runs, as the workflows do "
        "(default; --no-census: the module only)",
    )
    parser.add_argument("--files-only", action="store_true", help="only add the files; run nothing")
    parser.add_argument(
        "--workers", type=int, default=2, metavar="N", help="pytest-xdist workers (-n; 2)"
    )
    parser.add_argument(
        "--gates",
        type=int,
        default=1,
        metavar="N",
        help="gate N times after recording once, each as the workflow runs it; every one must "
        "be green (1)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=3600,
        metavar="SECONDS",
        help="limit of each pytest command (3600)",
    )
    parser.add_argument(
        "--python",
        default=sys.executable,
        metavar="PATH",
        help="the Python with pytest-kerasperf and the frameworks (default: this one)",
    )
    return parser


def adopt(args: argparse.Namespace) -> int:
    if (args.keras is None) == (args.from_installed is None):
        raise AdoptionError("give a Keras checkout or --from-installed DIR (one of them)")
    if args.workers < 1:
        raise AdoptionError(f"--workers: expected a positive integer, got {args.workers}")
    if args.gates < 1:
        raise AdoptionError(f"--gates: expected a positive integer, got {args.gates}")
    variants = [v for v in VARIANTS if v.name in args.variants]
    backends = sorted({v.backend for v in variants} | set(args.module_backends))
    if args.from_installed is not None:
        tree = build_from_installed(args.from_installed.resolve())
    else:
        tree = args.keras.resolve()
    check_tree(tree, backends)

    report = Report(
        tree=str(tree),
        keras_version=_keras_version(tree),
        keras_commit=args.keras_commit or _keras_commit(tree),
        plugin_version=plugin_version(),
        python=platform.python_version(),
        date=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        select=args.select,
        census=args.census,
    )
    report.files = add_files(tree)
    for change in report.files:
        _progress(f"{change.status:9} {change.path}")
    if args.files_only:
        return 0

    report_dir = (args.report or Path(tempfile.mkdtemp(prefix="kerasperf-adoption-"))).resolve()
    report_dir.mkdir(parents=True, exist_ok=True)
    for variant in variants:
        report.variants.append(run_variant(tree, variant, args, report_dir))
    if report.variants:
        report.report_step = run_report(tree, report.variants, args, report_dir)
        report.without_plugin = run_without_plugin(tree, args, report_dir)
    if args.module_backends:
        if has_keras_tests(tree, args.module):
            for backend in args.module_backends:
                report.modules.append(
                    run_module_check(tree, args.module, backend, args, report_dir)
                )
        else:
            report.module_note = (
                f"{args.module}: no Keras tests with Keras's conftest.py in this tree "
                "(a tree built --from-installed has no conftest.py): the check with and "
                "without the plugin did not run"
            )

    (report_dir / "adoption-report.md").write_text(render_markdown(report))
    (report_dir / "adoption-report.json").write_text(
        json.dumps(report_json(report), indent=2) + "\n"
    )
    print()
    print(render_text(report), end="")
    print(f"report: {report_dir / 'adoption-report.md'} (and .json, logs/)")
    for v in report.variants:
        for step in (v.update, v.gate):
            if step is not None and not step.ok:
                print(f"--- {step.log} (last lines)\n{_tail(step.log)}")
    return 0 if report.green else 1


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return adopt(args)
    except AdoptionError as error:
        print(f"apply.py: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
