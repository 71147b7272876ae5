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

Variants are declared in ``VARIANTS`` below.  Each one names the field it
changes and how to build its environment:

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
import dataclasses
import datetime
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BACKENDS: tuple[str, ...] = ("torch", "jax", "tensorflow", "numpy")
SUITE = "pytest_kerasperf.suite"
REFERENCE_RUNS: tuple[str, ...] = ("reference-1", "reference-2")
#: Distributions whose versions are recorded for every environment.
TRACKED_DISTS: tuple[str, ...] = (
    "torch",
    "keras",
    "jax",
    "jaxlib",
    "tensorflow-cpu",
    "tensorflow",
    "numpy",
    "opt_einsum",
    "ml_dtypes",
    "optree",
    "scipy",
    "sympy",
    "triton",
    "tensorboard",
    "flax",
    "pytest",
    "pytest-kerasperf",
)
#: Import names whose ``__file__`` is recorded (shows which copy an overlay imports).
TRACKED_MODULES: tuple[str, ...] = (
    "torch",
    "jax",
    "jaxlib",
    "tensorflow",
    "keras",
    "numpy",
    "opt_einsum",
    "ml_dtypes",
    "optree",
    "flax",
)
#: Variables removed from the caller's environment before every run.
SCRUBBED_PREFIXES: tuple[str, ...] = (
    "KERAS_",
    "XLA_",
    "JAX_",
    "TF_",
    "TORCH",
    "ATEN_",
    "PYTORCH_",
    "CUDA_",
    "OMP_",
    "MKL_",
    "PYTHON",
    "PYTEST_",
    "VIRTUAL_ENV",
)
TOP_FUNCTIONS = 20
#: Bumped whenever how an overlay venv is built changes, so cached ones are rebuilt.
OVERLAY_RECIPE = 3
REFERENCE_INTERPRETERS: dict[str, tuple[str, ...]] = {
    "3.11.2-debian": ("/usr/bin/python3.11",),
    "3.12": ("/root/.pyenv/versions/3.12.1/bin/python3", "python3.12"),
    "3.13": ("/root/.pyenv/versions/3.13.0/bin/python3", "python3.13"),
}


# ------------------------------------------------------------- declarations


@dataclass(frozen=True)
class VenvSpec:
    """How to build a venv.

    ``kind`` is ``"reference"`` (the pinned set on the reference interpreter),
    ``"full"`` (the pinned set on ``interpreter``, a label of ``--interpreter``)
    or ``"overlay"`` (the reference venv shadowed by ``installs``).
    ``installs`` are pip argument lists run in order after the base install;
    ``unpin`` names distributions dropped from the requirements and the
    constraints (``-c`` in ``installs`` and the base install) so that another
    version of them can be installed; ``requirements`` are extra requirement
    specifiers resolved with the base install of a full venv (e.g.
    ``torch==2.13.0`` where the pinned local build has no wheel);
    ``pip_env`` is applied to pip's environment; an empty value removes the
    variable (``PIP_CONFIG_FILE=/dev/null`` plus an empty ``PIP_FIND_LINKS``
    keeps pip off a local wheel directory configured by file or variable).
    ``expect`` maps distributions to the exact versions the venv must end with
    (reference and full venvs must also match every pin of the constraints);
    ``shadows`` names modules an overlay must import from itself, not the base.
    """

    name: str
    kind: str
    interpreter: str | None = None
    installs: tuple[tuple[str, ...], ...] = ()
    unpin: tuple[str, ...] = ()
    requirements: tuple[str, ...] = ()
    pip_env: tuple[tuple[str, str], ...] = ()
    expect: tuple[tuple[str, str], ...] = ()
    shadows: tuple[str, ...] = ()


@dataclass(frozen=True)
class Variant:
    name: str
    field: str
    description: str
    venv: VenvSpec
    backends: tuple[str, ...] = BACKENDS
    env: tuple[tuple[str, str], ...] = ()
    keras_json: tuple[tuple[str, Any], ...] | None = None
    plugin: str | None = None  # source of a pytest plugin module loaded with -p
    prefix: tuple[str, ...] = ()
    probe: str | None = None  # Python code that fills the dict ``out``
    skip_reason: str | None = None


REFERENCE_VENV = VenvSpec(name="ref311", kind="reference")


def overlay(
    name: str,
    *installs: tuple[str, ...],
    expect: Mapping[str, str],
    shadows: Sequence[str] = (),
    pip_env: Mapping[str, str] | None = None,
    unpin: Sequence[str] = (),
) -> VenvSpec:
    return VenvSpec(
        name=name,
        kind="overlay",
        installs=installs,
        unpin=tuple(unpin),
        pip_env=tuple(sorted((pip_env or {}).items())),
        expect=tuple(sorted(expect.items())),
        shadows=tuple(shadows),
    )


def full(
    name: str,
    interpreter: str,
    expect: Mapping[str, str] | None = None,
    *,
    unpin: Sequence[str] = (),
    requirements: Sequence[str] = (),
) -> VenvSpec:
    return VenvSpec(
        name=name,
        kind="full",
        interpreter=interpreter,
        unpin=tuple(unpin),
        requirements=tuple(requirements),
        expect=tuple(sorted((expect or {}).items())),
    )


#: Placeholder expanded in pip arguments to ``-c`` and the constraints file
#: (less the spec's ``unpin`` distributions).
PIN = "-c {constraints}"

_PREIMPORT_PLUGIN = '''\
"""Imports {modules} at configure time, before the suite imports Keras."""
import importlib


def pytest_configure(config):
    for name in {modules!r}:
        importlib.import_module(name)
'''


def preimport_plugin(*modules: str) -> str:
    return _PREIMPORT_PLUGIN.format(modules=modules)


DTYPE_POLICY_PLUGIN = '''\
"""Sets Keras's global dtype policy to mixed_float16 before the suite runs."""
import importlib.util


def pytest_configure(config):
    # As the plugin itself does: torch first when installed (tensorflow-before-torch
    # can segfault), so the order of imports matches the reference run.
    if importlib.util.find_spec("torch") is not None:
        import torch  # noqa: F401
    import keras

    keras.config.set_dtype_policy("mixed_float16")
'''

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

ISA_PROBE = """\
import torch
import torch._inductor.cpu_vec_isa as cpu_vec_isa
out["torch.backends.cpu.get_cpu_capability"] = torch.backends.cpu.get_cpu_capability()
out["inductor.pick_vec_isa"] = str(cpu_vec_isa.pick_vec_isa())
out["inductor.valid_vec_isa_list"] = [str(i) for i in cpu_vec_isa.valid_vec_isa_list()]
"""

CPU_PROBE = """\
import os
out["os.cpu_count"] = os.cpu_count()
out["sched_getaffinity"] = sorted(os.sched_getaffinity(0))
import torch
out["torch.get_num_threads"] = torch.get_num_threads()
out["torch.get_num_interop_threads"] = torch.get_num_interop_threads()
import jax
out["jax.devices"] = [str(d) for d in jax.devices()]
"""

JAX_DEVICES_PROBE = """\
import jax
out["jax.devices"] = [str(d) for d in jax.devices()]
"""

NNX_PROBE = """\
import os
os.environ["KERAS_BACKEND"] = "jax"
import keras
from keras.src.backend import config as backend_config
out["keras.is_nnx_enabled"] = bool(backend_config.is_nnx_enabled())
"""

TORCH_DEVICE_PROBE = """\
import os
os.environ["KERAS_BACKEND"] = "torch"
import torch
import keras
from keras.src.backend.torch.core import get_device
out["keras torch device"] = str(get_device())
"""

FLAX_VENV = overlay(
    "flax", ("flax", PIN), expect={"jax": "0.10.2", "numpy": "2.4.6"}, shadows=("flax",)
)

_TORCH_CUDA_INSTALL = (
    "--ignore-installed",
    PIN,
    "--index-url",
    "https://pypi.org/simple",
    "torch==2.13.0",
)


def _variants() -> tuple[Variant, ...]:
    v: list[Variant] = [
        Variant(
            name="overlay-control",
            field="(control: overlay venv with nothing shadowed)",
            description="An overlay venv over the reference with no extra package: validates "
            "the overlay method itself (must not move counts).",
            venv=overlay("overlay-control", expect={}),
        ),
        Variant(
            name="python-3.11.2",
            field="python (patch)",
            description="Debian's Python 3.11.2 with the pinned set, vs 3.11.7.",
            venv=full("deb3112", "3.11.2-debian", {"torch": "2.13.0+cpu"}),
        ),
        Variant(
            name="python-3.12",
            field="python (minor)",
            description="Python 3.12 with the pinned set; torch here is PyPI's CUDA build "
            "2.13.0 (no cp312 +cpu wheel), so torch results also carry that tag change.",
            venv=full(
                "py3121",
                "3.12",
                {"torch": "2.13.0"},
                unpin=("torch",),
                requirements=("torch==2.13.0",),
            ),
        ),
        Variant(
            name="python-3.13",
            field="python (minor)",
            description="Python 3.13 with the pinned set; torch is PyPI's CUDA build 2.13.0.",
            venv=full(
                "py3130",
                "3.13",
                {"torch": "2.13.0"},
                unpin=("torch",),
                requirements=("torch==2.13.0",),
            ),
        ),
        Variant(
            name="torch-cuda-build",
            field="torch local version tag (2.13.0 vs 2.13.0+cpu)",
            description="PyPI's CUDA build torch==2.13.0 (with its nvidia-* deps) shadowing "
            "2.13.0+cpu, same Python.",
            venv=overlay(
                "torch-cuda",
                _TORCH_CUDA_INSTALL,
                expect={"torch": "2.13.0"},
                shadows=("torch",),
                pip_env={"PIP_CONFIG_FILE": os.devnull, "PIP_FIND_LINKS": ""},
                unpin=("torch",),
            ),
            backends=("torch", "numpy", "jax", "tensorflow"),
        ),
        Variant(
            name="torch-2.14.1",
            field="torch version",
            description="torch 2.14.1 (PyPI's CUDA build, with its nvidia-*/triton deps; there "
            "is no +cpu wheel here) shadowing 2.13.0+cpu; the build tag alone does not move "
            "counts (torch-cuda-build).",
            venv=overlay(
                "torch-2.14.1",
                (PIN, "torch==2.14.1"),
                expect={"torch": "2.14.1"},
                shadows=("torch",),
                unpin=("torch",),
            ),
            backends=("torch", "numpy"),
        ),
        Variant(
            name="jax-0.10.1",
            field="jax/jaxlib version",
            description="jax and jaxlib 0.10.1 vs 0.10.2 (Keras's numpy backend runs some ops "
            "through jax).",
            venv=overlay(
                "jax-0.10.1",
                (PIN, "jax==0.10.1", "jaxlib==0.10.1"),
                expect={"jax": "0.10.1", "jaxlib": "0.10.1"},
                shadows=("jax", "jaxlib"),
                unpin=("jax", "jaxlib"),
            ),
            backends=("jax", "numpy"),
        ),
        Variant(
            name="tensorflow-cpu-2.20.0",
            field="tensorflow version",
            description="tensorflow-cpu 2.20.0 vs 2.21.0 (its own tensorboard 2.20 comes along).",
            venv=overlay(
                "tensorflow-cpu-2.20.0",
                (PIN, "tensorflow-cpu==2.20.0"),
                expect={"tensorflow-cpu": "2.20.0"},
                shadows=("tensorflow",),
                unpin=("tensorflow-cpu", "tensorflow"),
            ),
            backends=("tensorflow",),
        ),
        Variant(
            name="opt_einsum-3.3.0",
            field="opt_einsum",
            description="opt_einsum 3.3.0 vs 3.4.0.",
            venv=overlay(
                "opt_einsum-3.3.0",
                ("--no-deps", "opt_einsum==3.3.0"),
                expect={"opt_einsum": "3.3.0"},
                shadows=("opt_einsum",),
            ),
        ),
        Variant(
            name="ml_dtypes-0.5.4",
            field="ml_dtypes",
            description="ml_dtypes 0.5.4 vs 0.6.0 (jax 0.10.2 needs >=0.5.0, tf 2.21 >=0.5.1).",
            venv=overlay(
                "ml_dtypes-0.5.4",
                ("--no-deps", "ml_dtypes==0.5.4"),
                expect={"ml_dtypes": "0.5.4"},
                shadows=("ml_dtypes",),
            ),
        ),
        Variant(
            name="numpy-2.3.5",
            field="numpy",
            description="numpy 2.3.5 vs 2.4.6.",
            venv=overlay(
                "numpy-2.3.5",
                ("--no-deps", "numpy==2.3.5"),
                expect={"numpy": "2.3.5"},
                shadows=("numpy",),
            ),
        ),
        Variant(
            name="optree-0.19.1",
            field="optree",
            description="optree 0.19.1 vs 0.20.0.",
            venv=overlay(
                "optree-0.19.1",
                ("--no-deps", "optree==0.19.1"),
                expect={"optree": "0.19.1"},
                shadows=("optree",),
            ),
        ),
        Variant(
            name="optree-0.18.0",
            field="optree",
            description="optree 0.18.0 vs 0.20.0.",
            venv=overlay(
                "optree-0.18.0",
                ("--no-deps", "optree==0.18.0"),
                expect={"optree": "0.18.0"},
                shadows=("optree",),
            ),
        ),
        Variant(
            name="keras.json-channels_first",
            field="keras.json image_data_format",
            description='$KERAS_HOME/keras.json {"image_data_format": "channels_first"}.',
            venv=REFERENCE_VENV,
            keras_json=(("image_data_format", "channels_first"),),
        ),
        Variant(
            name="keras.json-floatx-float64",
            field="keras.json floatx",
            description='$KERAS_HOME/keras.json {"floatx": "float64"}.',
            venv=REFERENCE_VENV,
            keras_json=(("floatx", "float64"),),
        ),
        Variant(
            name="keras.json-floatx-float16",
            field="keras.json floatx",
            description='$KERAS_HOME/keras.json {"floatx": "float16"}.',
            venv=REFERENCE_VENV,
            keras_json=(("floatx", "float16"),),
        ),
        Variant(
            name="keras.json-epsilon-1e-5",
            field="keras.json epsilon",
            description='$KERAS_HOME/keras.json {"epsilon": 1e-5}.',
            venv=REFERENCE_VENV,
            keras_json=(("epsilon", 1e-5),),
        ),
        Variant(
            name="dtype-policy-mixed_float16",
            field="global dtype policy",
            description='keras.config.set_dtype_policy("mixed_float16") in a -p plugin\'s '
            "pytest_configure, before the suite builds its models.",
            venv=REFERENCE_VENV,
            plugin=DTYPE_POLICY_PLUGIN,
        ),
        Variant(
            name="XLA_FLAGS-device_count_4",
            field="env XLA_FLAGS",
            description="XLA_FLAGS=--xla_force_host_platform_device_count=4.",
            venv=REFERENCE_VENV,
            backends=("jax", "numpy", "tensorflow"),
            env=(("XLA_FLAGS", "--xla_force_host_platform_device_count=4"),),
            probe=JAX_DEVICES_PROBE,
        ),
        Variant(
            name="XLA_FLAGS-no_multi_thread_eigen",
            field="env XLA_FLAGS",
            description="XLA_FLAGS=--xla_cpu_multi_thread_eigen=false.",
            venv=REFERENCE_VENV,
            backends=("jax", "numpy", "tensorflow"),
            env=(("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false"),),
        ),
        Variant(
            name="KERAS_TORCH_DEVICE-cpu",
            field="env KERAS_TORCH_DEVICE",
            description="KERAS_TORCH_DEVICE=cpu.",
            venv=REFERENCE_VENV,
            backends=("torch",),
            env=(("KERAS_TORCH_DEVICE", "cpu"),),
            probe=TORCH_DEVICE_PROBE,
        ),
        Variant(
            name="KERAS_NNX_ENABLED-true",
            field="env KERAS_NNX_ENABLED (+flax installed)",
            description="KERAS_NNX_ENABLED=true with flax installed (pins held by the "
            "constraints).  Compare with flax-installed to separate flax's presence.",
            venv=FLAX_VENV,
            backends=("jax",),
            env=(("KERAS_NNX_ENABLED", "true"),),
            probe=NNX_PROBE,
        ),
        Variant(
            name="KERAS_MAX_EPOCHS-1",
            field="env KERAS_MAX_EPOCHS",
            description="KERAS_MAX_EPOCHS=1 (Keras CI sets it; only fit() reads it).",
            venv=REFERENCE_VENV,
            backends=("numpy", "jax"),
            env=(("KERAS_MAX_EPOCHS", "1"),),
        ),
        Variant(
            name="ATEN_CPU_CAPABILITY-avx2",
            field="CPU ISA (ATEN_CPU_CAPABILITY=avx2)",
            description="ATEN_CPU_CAPABILITY=avx2 on an AVX-512 CPU.",
            venv=REFERENCE_VENV,
            backends=("torch",),
            env=(("ATEN_CPU_CAPABILITY", "avx2"),),
            probe=ISA_PROBE,
        ),
        Variant(
            name="ATEN_CPU_CAPABILITY-default",
            field="CPU ISA (ATEN_CPU_CAPABILITY=default)",
            description="ATEN_CPU_CAPABILITY=default (no vector ISA).",
            venv=REFERENCE_VENV,
            backends=("torch",),
            env=(("ATEN_CPU_CAPABILITY", "default"),),
            probe=ISA_PROBE,
        ),
        Variant(
            name="one-cpu",
            field="number of CPUs (taskset -c 0)",
            description="The whole run pinned to one core with taskset -c 0.",
            venv=REFERENCE_VENV,
            backends=("torch", "jax", "tensorflow", "numpy"),
            prefix=("taskset", "-c", "0"),
            probe=CPU_PROBE,
        ),
        Variant(
            name="preimport-jax-torch",
            field="foreign frameworks imported first (torch, jax)",
            description="A -p plugin imports torch then jax at configure, as the issue's "
            "script has both in one process (the plugin already imports torch first on "
            "every backend when it is installed).",
            venv=REFERENCE_VENV,
            plugin=preimport_plugin("torch", "jax"),
        ),
        Variant(
            name="preimport-all",
            field="foreign frameworks imported first (torch, jax, tensorflow)",
            description="A -p plugin imports torch, jax and tensorflow (in that order) at "
            "configure.",
            venv=REFERENCE_VENV,
            plugin=preimport_plugin("torch", "jax", "tensorflow"),
        ),
        # Extras: second opinions on fields already covered above.
        Variant(
            name="flax-installed",
            field="flax installed (KERAS_NNX_ENABLED unset)",
            description="The flax overlay without KERAS_NNX_ENABLED: does flax's mere "
            "presence move counts?",
            venv=FLAX_VENV,
            backends=("jax",),
            probe=NNX_PROBE,
        ),
    ]
    v.insert(
        0,
        Variant(
            name="reference",
            field="(reference)",
            description="The reference set (second run compared with the first).",
            venv=REFERENCE_VENV,
            probe=ISA_PROBE + CPU_PROBE,
        ),
    )
    return tuple(v)


VARIANTS: tuple[Variant, ...] = _variants()


# ------------------------------------------------------------------ helpers

#: What makes up the installed plugin, relative to its source tree (hashed).
PLUGIN_SOURCE_GLOBS: tuple[str, ...] = (
    "pyproject.toml",
    "requirements/*.txt",
    "pytest_kerasperf/**/*.py",
    "pytest_kerasperf/**/*.json",
)


def plugin_source_hash(plugin_src: Path) -> str:
    """SHA-256 (16 hex digits) of the plugin's own files, independent of build outputs."""
    h = hashlib.sha256()
    files = sorted(
        {
            path
            for pattern in PLUGIN_SOURCE_GLOBS
            for path in plugin_src.glob(pattern)
            if path.is_file() and "__pycache__" not in path.parts
        }
    )
    if not files:
        raise SystemExit(f"no plugin source files under {plugin_src}")
    for path in files:
        h.update(path.relative_to(plugin_src).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def package_hash(package: Path) -> str:
    """SHA-256 (16 hex digits) of a ``pytest_kerasperf`` folder's ``.py`` and ``.json`` files."""
    h = hashlib.sha256()
    files = sorted(
        path
        for pattern in ("**/*.py", "**/*.json")
        for path in package.glob(pattern)
        if path.is_file() and "__pycache__" not in path.parts
    )
    for path in files:
        h.update(path.relative_to(package).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def plugin_version(plugin_src: Path) -> str | None:
    """``version = "..."`` of the ``[project]`` table of ``pyproject.toml``, if any."""
    in_project = False
    for line in (plugin_src / "pyproject.toml").read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            in_project = stripped == "[project]"
        elif in_project and stripped.startswith("version") and "=" in stripped:
            return stripped.split("=", 1)[1].strip().strip("\"'")
    return None


@dataclass
class Context:
    plugin_src: Path
    plugin_hash: str
    work_dir: Path
    log_dir: Path
    reference_python: Path
    interpreters: dict[str, Path]
    rerun: bool
    timeout: int

    @property
    def requirements(self) -> Path:
        return self.plugin_src / "requirements" / "ci.txt"

    @property
    def constraints(self) -> Path:
        return self.plugin_src / "requirements" / "ci-constraints.txt"

    @property
    def runs_dir(self) -> Path:
        """Suite runs of this plugin source (another snapshot gets another folder)."""
        return self.work_dir / "runs" / self.plugin_hash

    @property
    def run_log_dir(self) -> Path:
        return self.log_dir / self.plugin_hash


class BuildError(Exception):
    """A venv could not be built (the message says why)."""


def log(message: str) -> None:
    stamp = datetime.datetime.now().strftime("%H:%M:%S")
    print(f"[{stamp}] {message}", flush=True)


def digest(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def run_logged(
    argv: Sequence[str],
    log_path: Path,
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: int | None = None,
) -> int:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("a", encoding="utf-8") as handle:
        handle.write(f"\n$ {' '.join(argv)}\n")
        handle.flush()
        try:
            done = subprocess.run(
                list(argv),
                stdout=handle,
                stderr=subprocess.STDOUT,
                env=dict(env) if env is not None else None,
                cwd=cwd,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            handle.write(f"\n!! timed out after {timeout}s\n")
            return 124
    return done.returncode


def clean_environ() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED_PREFIXES)}


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def site_packages(python: Path) -> Path:
    out = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(out.stdout.strip())


def canonical(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


# ---------------------------------------------------------------- venvs

_VERSIONS_SCRIPT = """\
import importlib, importlib.metadata, importlib.util, json, platform, sys
dists, modules, pinned = json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
out = {"python": platform.python_version(), "executable": sys.executable, "dists": {},
       "files": {}, "pinned": {}}
def version(d):
    try:
        return importlib.metadata.version(d)
    except importlib.metadata.PackageNotFoundError:
        return None
for d in dists:
    out["dists"][d] = version(d)
for d in pinned:
    out["pinned"][d] = version(d)
for m in modules:
    spec = importlib.util.find_spec(m)
    out["files"][m] = spec.origin if spec else None
print(json.dumps(out))
"""


def installed_versions(python: Path, pinned: Iterable[str] = ()) -> dict[str, Any]:
    """Python version, tracked distributions' versions, tracked modules' files.

    ``pinned`` are further distributions (the constraints' names) whose
    versions go under ``"pinned"``.
    """
    done = subprocess.run(
        [
            str(python),
            "-c",
            _VERSIONS_SCRIPT,
            json.dumps(TRACKED_DISTS),
            json.dumps(TRACKED_MODULES),
            json.dumps(sorted(pinned)),
        ],
        capture_output=True,
        text=True,
        check=False,
        env=clean_environ(),
    )
    if done.returncode != 0:
        raise BuildError(f"cannot read versions with {python}: {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _interpreter(ctx: Context, spec: VenvSpec) -> Path:
    if spec.kind in ("reference", "overlay"):
        return ctx.reference_python
    assert spec.interpreter is not None
    found = ctx.interpreters.get(spec.interpreter)
    if found is None:
        raise BuildError(f"no interpreter for {spec.interpreter!r} (give --interpreter)")
    return found


def _requirement_name(line: str) -> str | None:
    """The distribution a requirements/constraints line names (None for comments)."""
    text = line.split("#", 1)[0].strip()
    if not text or text.startswith("-"):
        return None
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", text)
    return canonical(match.group(0)) if match else None


def _without(text: str, unpin: Iterable[str]) -> str:
    """Requirements/constraints text less the lines naming ``unpin``."""
    dropped = {canonical(n) for n in unpin}
    return "".join(
        line for line in text.splitlines(keepends=True) if _requirement_name(line) not in dropped
    )


def _derived_file(ctx: Context, source: Path, spec: VenvSpec) -> Path:
    """``source`` itself, or a copy less the spec's ``unpin`` lines (in the work dir)."""
    if not spec.unpin:
        return source
    text = _without(source.read_text(), spec.unpin)
    path = ctx.work_dir / "pins" / f"{source.stem}-{digest(text)}{source.suffix}"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return path


def spec_constraints(ctx: Context, spec: VenvSpec) -> Path:
    return _derived_file(ctx, ctx.constraints, spec)


def spec_requirements(ctx: Context, spec: VenvSpec) -> Path:
    return _derived_file(ctx, ctx.requirements, spec)


def _expand(args: Iterable[str], ctx: Context, spec: VenvSpec) -> list[str]:
    out: list[str] = []
    for arg in args:
        if arg == PIN:
            out += ["-c", str(spec_constraints(ctx, spec))]
        else:
            out.append(arg)
    return out


def _uses_pins(spec: VenvSpec) -> bool:
    return spec.kind in ("reference", "full") or any(PIN in install for install in spec.installs)


def _spec_key(ctx: Context, spec: VenvSpec) -> dict[str, Any]:
    """What the venv's dependencies depend on (not the plugin: it is reinstalled apart)."""
    key: dict[str, Any] = {
        "spec": dataclasses.asdict(spec),
        "interpreter": str(_interpreter(ctx, spec)),
    }
    if _uses_pins(spec):
        key["constraints"] = spec_constraints(ctx, spec).read_text()
    if spec.kind in ("reference", "full"):
        key["requirements"] = spec_requirements(ctx, spec).read_text()
    if spec.kind == "overlay":
        base_marker = ctx.work_dir / "venvs" / REFERENCE_VENV.name / ".fingerprint-spec.json"
        key["base"] = str(base_marker.parent)
        key["base_key"] = json.loads(base_marker.read_text()).get("key")
        key["recipe"] = OVERLAY_RECIPE
    return key


def pinned_versions(ctx: Context, spec: VenvSpec) -> dict[str, str]:
    """``name==version`` pins of the spec's constraints file, by canonical name."""
    pins: dict[str, str] = {}
    for line in spec_constraints(ctx, spec).read_text().splitlines():
        name, sep, version = line.split("#", 1)[0].strip().partition("==")
        if sep:
            pins[canonical(name.strip())] = version.strip()
    return pins


def _satisfies(have: str, pin: str) -> bool:
    """``have`` matches ``==pin`` as pip reads it (2.13.0+cpu satisfies ==2.13.0, not back)."""
    if "+" in pin:
        return have == pin
    return have.split("+", 1)[0] == pin


def version_problems(ctx: Context, spec: VenvSpec, versions: dict[str, Any]) -> dict[str, Any]:
    """Distributions whose installed version is not the one the spec asks for.

    Reference and full venvs must satisfy every pin of their constraints
    (``versions["pinned"]``, when recorded) and hold the plugin; every venv
    must have the exact versions of ``expect``.
    """
    got: dict[str, str | None] = {canonical(k): v for k, v in versions["dists"].items()}
    got.update({canonical(k): v for k, v in (versions.get("pinned") or {}).items()})
    wrong: dict[str, Any] = {}
    if spec.kind in ("reference", "full"):
        for dist, pin in pinned_versions(ctx, spec).items():
            have = got.get(dist)
            if dist not in got and not versions.get("pinned"):
                continue  # not recorded (an old marker): judged on what is recorded
            if have is None or not _satisfies(have, pin):
                wrong[dist] = (pin, have)
        if not got.get("pytest-kerasperf"):
            wrong["pytest-kerasperf"] = ("installed", None)
    for dist, want in spec.expect:
        if got.get(canonical(dist)) != want:
            wrong[dist] = (want, got.get(canonical(dist)))
    return wrong


def _overlay_drift(
    spec: VenvSpec, base: dict[str, Any], versions: dict[str, Any]
) -> dict[str, Any]:
    """Tracked distributions an overlay changed beyond the ones it is meant to change.

    Distributions the base lacks (a new dependency of the shadowing package)
    are allowed; they are recorded with the versions.
    """
    meant = {canonical(d) for d, _ in spec.expect} | {canonical(d) for d in spec.unpin}
    meant.add("pytest-kerasperf")
    drift: dict[str, Any] = {}
    for dist, was in base["dists"].items():
        if was is None or canonical(dist) in meant:
            continue
        now = versions["dists"].get(dist)
        if now != was:
            drift[dist] = (was, now)
    return drift


def _marker(venv: Path) -> dict[str, Any] | None:
    path = venv / ".fingerprint-spec.json"
    if not path.is_file():
        return None
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _write_marker(venv: Path, data: Mapping[str, Any]) -> None:
    (venv / ".fingerprint-spec.json").write_text(json.dumps(dict(data), indent=2))


def ensure_venv(ctx: Context, spec: VenvSpec) -> tuple[Path, dict[str, Any]]:
    """Build (or reuse) the venv; returns its path and its recorded versions.

    The plugin is (re)installed from the source tree whenever the venv's
    recorded plugin hash is not the source's.  A reference or full venv that
    exists without a matching marker (built by hand, or under an older
    specification) is adopted when its versions satisfy every pin.
    """
    if spec.kind == "overlay":
        ensure_venv(ctx, REFERENCE_VENV)
    venv = ctx.work_dir / "venvs" / spec.name
    key = digest(_spec_key(ctx, spec))
    marker = _marker(venv)
    log_path = ctx.log_dir / f"venv_{spec.name}.log"
    if marker is not None and marker.get("key") == key:
        if marker.get("plugin_hash") != ctx.plugin_hash:
            _install_plugin(ctx, venv, log_path, spec.name)
            versions = installed_versions(venv_python(venv))
            _write_marker(venv, {**marker, "versions": versions, "plugin_hash": ctx.plugin_hash})
            marker["versions"] = versions
        reused: dict[str, Any] = marker["versions"]
        return venv, reused
    if (
        spec.kind in ("reference", "full")
        and not spec.installs
        and venv_python(venv).exists()
        and _adopt(ctx, spec, venv, log_path)
    ):
        versions = installed_versions(venv_python(venv), pinned_versions(ctx, spec))
        _write_marker(
            venv,
            {"key": key, "versions": versions, "plugin_hash": ctx.plugin_hash, "adopted": True},
        )
        return venv, versions
    if venv.exists():
        shutil.rmtree(venv)
    log(f"building venv {spec.name} ({spec.kind}) -> {log_path}")
    interpreter = _interpreter(ctx, spec)
    pip_env = clean_environ()
    for name, value in spec.pip_env:
        if value:
            pip_env[name] = value
        else:
            pip_env.pop(name, None)
    if run_logged([str(interpreter), "-m", "venv", str(venv)], log_path) != 0:
        raise BuildError(f"python -m venv failed with {interpreter}: {tail(log_path, 5)}")
    python = venv_python(venv)
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check"]
    steps: list[list[str]] = []
    if spec.kind in ("reference", "full"):
        steps.append(
            [
                *pip,
                "-r",
                str(spec_requirements(ctx, spec)),
                "-c",
                str(spec_constraints(ctx, spec)),
                *spec.requirements,
            ]
        )
        steps.append([*pip, "--no-deps", str(ctx.plugin_src)])
    else:
        base_site = site_packages(venv_python(ctx.work_dir / "venvs" / REFERENCE_VENV.name))
        own_site = site_packages(python)
        # addsitedir (not a bare path line) so the base's own .pth files run too.
        (own_site / "_fingerprint_overlay.pth").write_text(
            f"import site; site.addsitedir({str(base_site)!r})\n"
        )
        # The plugin goes into the overlay too: pytest puts the suite's site-packages
        # first on sys.path (rootdir "prepend" import of the test module), and Keras
        # and the frameworks are imported after that.  With the suite in the base
        # venv, the base's copies would shadow the overlay's.
        steps.append([*pip, "--no-deps", str(ctx.plugin_src)])
    for install in spec.installs:
        steps.append([*pip, *_expand(install, ctx, spec)])
    for step in steps:
        if run_logged(step, log_path, env=pip_env) != 0:
            raise BuildError(f"pip failed: {' '.join(step)}\n{tail(log_path, 8)}")
    _check_plugin(ctx, venv)
    versions = installed_versions(python, pinned_versions(ctx, spec))
    wrong = version_problems(ctx, spec, versions)
    if wrong:
        raise BuildError(f"venv {spec.name}: wrong versions (want, got): {wrong}")
    if spec.kind == "overlay":
        _check_shadowing(venv, spec, versions)
        base_marker = _marker(ctx.work_dir / "venvs" / REFERENCE_VENV.name)
        assert base_marker is not None
        drift = _overlay_drift(spec, base_marker["versions"], versions)
        if drift:
            raise BuildError(f"overlay {spec.name} also changed (base, overlay): {drift}")
    _write_marker(venv, {"key": key, "versions": versions, "plugin_hash": ctx.plugin_hash})
    return venv, versions


def _install_plugin(ctx: Context, venv: Path, log_path: Path, name: str) -> None:
    log(f"installing the plugin ({ctx.plugin_hash}) into venv {name}")
    reinstall = [
        str(venv_python(venv)),
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--no-deps",
        "--force-reinstall",
        str(ctx.plugin_src),
    ]
    if run_logged(reinstall, log_path, env=clean_environ()) != 0:
        raise BuildError(f"could not install the plugin into {venv}: {tail(log_path, 8)}")
    _check_plugin(ctx, venv)


def _check_plugin(ctx: Context, venv: Path) -> None:
    """The venv's own installed plugin package must be the source tree's, file for file."""
    installed = site_packages(venv_python(venv)) / "pytest_kerasperf"
    want = package_hash(ctx.plugin_src / "pytest_kerasperf")
    if not installed.is_dir() or package_hash(installed) != want:
        raise BuildError(f"{installed} is not the plugin of {ctx.plugin_src}")


def _adopt(ctx: Context, spec: VenvSpec, venv: Path, log_path: Path) -> bool:
    """Keep an existing venv whose versions satisfy every pin; reinstall the plugin."""
    try:
        versions = installed_versions(venv_python(venv), pinned_versions(ctx, spec))
    except BuildError:
        return False
    problems = version_problems(ctx, spec, versions)
    if problems:
        log(f"not adopting {venv}: {problems}")
        return False
    log(f"adopting existing venv {venv} (every pin satisfied; reinstalling the plugin)")
    try:
        _install_plugin(ctx, venv, log_path, spec.name)
    except BuildError:
        return False
    return True


def _check_shadowing(venv: Path, spec: VenvSpec, versions: dict[str, Any]) -> None:
    """Each shadowing module must be imported from the overlay, not the base venv."""
    for module in spec.shadows:
        origin = versions["files"].get(module)
        if origin is None or not str(origin).startswith(str(venv) + os.sep):
            raise BuildError(f"{module} is imported from {origin}, not from the overlay {venv}")


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


# ------------------------------------------------------------- comparing


@dataclass(frozen=True)
class GraphBreaks:
    """A test's torch graph breaks: counts and (frame, reason) -> breaks it caused."""

    graphs: int | None
    breaks: int | None
    reasons: dict[tuple[str, str], int]

    def as_json(self) -> dict[str, Any]:
        return {
            "graphs": self.graphs,
            "breaks": self.breaks,
            "reasons": [
                {"frame": frame, "reason": reason, "count": count}
                for (frame, reason), count in sorted(self.reasons.items())
            ],
        }


@dataclass(frozen=True)
class TestCounts:
    """What one result of a ``--kerasperf-json`` file says, in either schema."""

    calls: int
    calls_by_function: dict[str, int]
    graph_breaks: GraphBreaks | None
    environment: dict[str, Any]


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def read_test(result: Mapping[str, Any]) -> TestCounts:
    """One result of schema 2 (``record``) or of the older flat format."""
    record = result.get("record")
    if isinstance(record, Mapping) and "calls_by_function" in record:
        functions: dict[str, int] = dict(record["calls_by_function"])
        calls = record.get("calls", result.get("calls"))
        raw = record.get("graph_breaks")
        graph: GraphBreaks | None = None
        if isinstance(raw, Mapping):
            reasons: dict[tuple[str, str], int] = {}
            for item in raw.get("reasons") or ():
                key = (str(item.get("frame", "")), str(item.get("reason", "")))
                reasons[key] = reasons.get(key, 0) + int(item.get("count", 1))
            graph = GraphBreaks(
                _int_or_none(raw.get("graphs")), _int_or_none(raw.get("breaks")), reasons
            )
        environment = record.get("environment") or result.get("environment") or {}
    else:
        functions = dict(result["calls_by_function"])
        calls = result.get("calls")
        breaks, graphs = result.get("graph_breaks"), result.get("graphs")
        listed = result.get("graph_break_reasons") or []
        graph = None
        if breaks is not None or graphs is not None or listed:
            reasons = {}
            for item in listed:
                key = (str(item.get("frame", "")), str(item.get("reason", "")))
                reasons[key] = reasons.get(key, 0) + int(item.get("count", 1))
            graph = GraphBreaks(_int_or_none(graphs), _int_or_none(breaks), reasons)
        environment = result.get("environment") or {}
    if not isinstance(calls, int):
        calls = sum(functions.values())
    return TestCounts(calls, functions, graph, dict(environment))


def load_results(path: Path) -> dict[str, TestCounts]:
    data = json.loads(path.read_text())
    return {str(r["key"]): read_test(r) for r in data["results"]}


def _reason_changes(a: GraphBreaks | None, b: GraphBreaks | None) -> list[dict[str, Any]]:
    ra = a.reasons if a is not None else {}
    rb = b.reasons if b is not None else {}
    return [
        {"frame": frame, "reason": reason, "reference": ra.get(k, 0), "variant": rb.get(k, 0)}
        for k in sorted(set(ra) | set(rb))
        if ra.get(k, 0) != rb.get(k, 0)
        for frame, reason in [k]
    ]


def _delta(a: int | None, b: int | None) -> int | None:
    return b - a if a is not None and b is not None else None


def compare(reference: Path, measured: Path) -> dict[str, Any]:
    """Per-test differences of ``measured`` from ``reference``."""
    ref, new = load_results(reference), load_results(measured)
    tests: dict[str, Any] = {}
    for key in sorted(set(ref) | set(new)):
        a, b = ref.get(key), new.get(key)
        if a is None or b is None:
            tests[key] = {"status": "missing in " + ("reference" if a is None else "variant")}
            continue
        fa, fb = a.calls_by_function, b.calls_by_function
        changed = sorted(
            (
                (name, fa.get(name, 0), fb.get(name, 0))
                for name in set(fa) | set(fb)
                if fa.get(name, 0) != fb.get(name, 0)
            ),
            key=lambda item: (-abs(item[2] - item[1]), item[0]),
        )
        ga, gb = a.graph_breaks, b.graph_breaks
        reason_changes = _reason_changes(ga, gb)
        graphs_equal = ga == gb
        tests[key] = {
            "calls_reference": a.calls,
            "calls": b.calls,
            "calls_delta": b.calls - a.calls,
            "calls_by_function_equal": fa == fb,
            "functions_changed": len(changed),
            "top_changed": [
                {"function": n, "reference": x, "variant": y, "delta": y - x}
                for n, x, y in changed[:TOP_FUNCTIONS]
            ],
            "graph_breaks_reference": ga.as_json() if ga is not None else None,
            "graph_breaks": gb.as_json() if gb is not None else None,
            "graph_breaks_delta": _delta(ga.breaks if ga else None, gb.breaks if gb else None),
            "graphs_delta": _delta(ga.graphs if ga else None, gb.graphs if gb else None),
            "graph_breaks_equal": graphs_equal,
            "graph_break_reason_changes": reason_changes,
            "status": "same" if fa == fb and graphs_equal else "differs",
        }
    env_a = next(iter(ref.values())).environment if ref else {}
    env_b = next(iter(new.values())).environment if new else {}
    env_diff = {
        k: [env_a.get(k), env_b.get(k)]
        for k in sorted(set(env_a) | set(env_b))
        if env_a.get(k) != env_b.get(k)
    }
    moved = any(t["status"] != "same" for t in tests.values())
    calls_moved = any(not t.get("calls_by_function_equal", False) for t in tests.values())
    breaks_moved = any(not t.get("graph_breaks_equal", False) for t in tests.values())
    return {
        "moves_counts": moved,
        "calls_moved": calls_moved,
        "graph_breaks_moved": breaks_moved,
        "environment_fields_differing": env_diff,
        "tests": tests,
    }


# ------------------------------------------------------------- reporting


def short_test(key: str) -> str:
    name = key.split("::", 1)[-1]
    return name.replace("test_", "", 1)


def _fmt_delta(value: int | None) -> str:
    if value is None:
        return "?"
    return f"{value:+,}" if value else "0"


def _clip(text: str, width: int = 90) -> str:
    text = text.replace("|", "\\|").replace("`", "'")
    return text if len(text) <= width else text[: width - 1] + "…"


def _fmt_count(value: int | None) -> str:
    return "-" if value is None else str(value)


def _graph_break_text(test: Mapping[str, Any]) -> str:
    """How a test's graph breaks changed, for the table."""
    ga, gb = test["graph_breaks_reference"], test["graph_breaks"]
    if ga is None or gb is None:
        return "graph breaks " + ("appeared" if ga is None else "vanished")
    parts = []
    if ga["breaks"] != gb["breaks"]:
        parts.append(f"breaks {_fmt_count(ga['breaks'])}→{_fmt_count(gb['breaks'])}")
    if ga["graphs"] != gb["graphs"]:
        parts.append(f"graphs {_fmt_count(ga['graphs'])}→{_fmt_count(gb['graphs'])}")
    for change in test["graph_break_reason_changes"]:
        parts.append(
            f"`{_clip(change['frame'], 60)}` {_clip(change['reason'])} "
            f"×{change['reference']}→×{change['variant']}"
        )
    return "; ".join(parts)


def _row(name: str, entry: Mapping[str, Any]) -> str:
    backends: Mapping[str, Any] = entry["backends"]
    backends_run = [b for b, r in backends.items() if r.get("comparison")]
    not_run = {b: r["error"] for b, r in backends.items() if r.get("error")}
    moved_backends = [
        b for b, r in backends.items() if r.get("comparison") and r["comparison"]["moves_counts"]
    ]
    if entry.get("skipped"):
        verdict = f"not run: {_clip(entry['skipped'].splitlines()[0], 200)}"
    elif not backends_run:
        verdict = "not run"
    elif moved_backends:
        verdict = "**YES** (" + ", ".join(moved_backends) + ")"
    else:
        verdict = "no"
    deltas: list[str] = []
    tops: list[str] = []
    breaks: list[str] = []
    for backend, r in backends.items():
        comparison = r.get("comparison")
        if not comparison:
            continue
        tests: Mapping[str, Any] = comparison["tests"]
        if any(t.get("graph_breaks_reference") or t.get("graph_breaks") for t in tests.values()):
            changed = [
                f"{short_test(k)}: {_graph_break_text(t)}"
                for k, t in tests.items()
                if "graph_breaks_equal" in t and not t["graph_breaks_equal"]
            ]
            breaks.append(f"{backend}: " + ("<br>".join(changed) if changed else "="))
        if not comparison["calls_moved"]:
            deltas.append(f"{backend}: =")
            continue
        parts = []
        for key, t in tests.items():
            if "calls_delta" not in t:
                parts.append(f"{short_test(key)} {t['status']}")
            elif t["calls_by_function_equal"]:
                parts.append(f"{short_test(key)} =")
            elif t["calls_delta"] == 0:
                parts.append(f"{short_test(key)} 0 ({t['functions_changed']} fns moved)")
            else:
                parts.append(f"{short_test(key)} {_fmt_delta(t['calls_delta'])}")
        deltas.append(f"{backend}: " + ", ".join(parts))
        worst = max(
            (t for t in tests.values() if t.get("top_changed")),
            key=lambda t: (t["functions_changed"], abs(t["calls_delta"])),
            default=None,
        )
        if worst:
            fns = ", ".join(f"`{f['function']}` {f['delta']:+,}" for f in worst["top_changed"][:3])
            tops.append(f"{backend}: {fns}")
    if not_run:
        deltas.append(
            "not run: "
            + "; ".join(f"{b} ({_clip(e.splitlines()[0], 120)})" for b, e in not_run.items())
        )
    return (
        f"| {name} | {entry['field']} | {', '.join(backends_run) or '-'} | {verdict} | "
        f"{'<br>'.join(deltas) or '-'} | {'<br>'.join(tops) or '-'} | "
        f"{'<br>'.join(breaks) or '-'} |"
    )


def _section(plugin_hash: str, section: Mapping[str, Any]) -> list[str]:
    plugin = section.get("plugin") or {}
    lines = [
        f"## Plugin {plugin.get('version') or '?'} (source hash `{plugin_hash}`)",
        "",
        f"Source: `{plugin.get('source', '?')}`",
        "",
        f"Reference: {section.get('reference_summary', '')}",
        "",
        (
            "Per test: calls delta (variant - reference); `=` means identical "
            "`calls_by_function`, `0 (n fns moved)` the same total with functions moved. "
            "Graph breaks (torch compiled tests) are compared by `breaks`, `graphs` and the "
            "(frame, reason) → count mapping; `=` means all three identical."
        ),
        "",
        (
            "| variant | field | backends run | moves counts? | per-backend per-test calls delta "
            "| top changed functions | graph-break changes |"
        ),
        "|---|---|---|---|---|---|---|",
    ]
    variants: Mapping[str, Any] = section.get("variants", {})
    lines += [_row(name, entry) for name, entry in variants.items()]
    reference = variants.get("reference", {}).get("backends", {})
    lines += ["", "### Reference graph breaks", ""]
    for backend, r in reference.items():
        for key, t in (r.get("comparison") or {}).get("tests", {}).items():
            gb = t.get("graph_breaks_reference")
            if not gb:
                continue
            lines.append(
                f"- {backend} {short_test(key)}: {_fmt_count(gb['breaks'])} breaks, "
                f"{_fmt_count(gb['graphs'])} graphs"
            )
            for reason in gb["reasons"]:
                lines.append(
                    f"  - ×{reason['count']} `{reason['frame']}`: {_clip(reason['reason'], 240)}"
                )
    lines += ["", "### Versions and probes per variant", ""]
    for name, entry in variants.items():
        versions = entry.get("versions") or {}
        dists = {k: v for k, v in (versions.get("dists") or {}).items() if v}
        lines.append(
            f"- **{name}**: python {versions.get('python', '?')}; "
            + ", ".join(f"{k} {v}" for k, v in dists.items())
        )
        if entry.get("env"):
            lines.append(f"  - env: {entry['env']}")
        if entry.get("keras_json"):
            lines.append(f"  - keras.json: {entry['keras_json']}")
        if entry.get("prefix"):
            lines.append(f"  - prefix: {' '.join(entry['prefix'])}")
        if entry.get("probe"):
            lines.append(f"  - probe: `{json.dumps(entry['probe'])}`")
        for backend, r in entry.get("backends", {}).items():
            imported = r.get("imported")
            if imported and entry.get("shadows"):
                files = {m: imported["files"].get(m) for m in entry["shadows"]}
                lines.append(f"  - {backend} suite imported: `{json.dumps(files)}`")
    return lines


def markdown(results: Mapping[str, Any]) -> str:
    lines = ["# pytest-kerasperf: which environment fields move call counts", ""]
    for plugin_hash, section in results.get("plugins", {}).items():
        if "plugin" not in section:  # comparisons of an older version of this script
            lines += [f"## {plugin_hash}", "", "Not rendered: see the JSON.", ""]
            continue
        lines += _section(plugin_hash, section)
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


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
