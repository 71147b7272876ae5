"""Where a measurement was taken, and which of it decides whether two counts compare.

Every measurement stores the environment it was taken in (``capture``).  Only
some of it changes call counts; ``count_fingerprint`` picks those fields, in
the form that matters (``python`` by its minor version, framework versions
without their local tags), and two records are compared only when their
fingerprints are equal.  Which fields belong there was decided by experiment,
not by guess: docs/fingerprint.md gives the evidence, and
``benchmarks/fingerprint_evidence.py`` reruns it.
"""

from __future__ import annotations

import functools
import os
import platform
import re
from collections.abc import Callable, Mapping
from typing import Any

from pytest_kerasperf import backends

Environment = Mapping[str, str | None]

#: Environment variables recorded with every measurement (for information
#: unless listed in COUNT_FIELDS).
RECORDED_VARIABLES = (
    "KERAS_NNX_ENABLED",
    "KERAS_TORCH_DEVICE",
    "KERAS_MAX_EPOCHS",
    "KERAS_MAX_STEPS_PER_EPOCH",
    "XLA_FLAGS",
    "ATEN_CPU_CAPABILITY",
)


def python_minor(version: str | None) -> str | None:
    """``3.11.7`` -> ``3.11``: the patch release does not move counts (docs/fingerprint.md)."""
    if version is None:
        return None
    return ".".join(version.split(".")[:2])


def public_version(version: str | None) -> str | None:
    """``2.13.0+cpu`` -> ``2.13.0``: a local build tag does not move counts."""
    if version is None:
        return None
    return version.split("+", 1)[0]


def same(value: str | None) -> str | None:
    return value


#: Fields whose values move call counts on every backend, each with the form in which it is
#: compared: only Python, by its minor version.  Per backend, ``backends.count_frameworks``
#: adds the versions of the distributions that move its counts (without a local build tag) and
#: ``backends.count_settings`` the settings.  Everything else is recorded for information
#: (docs/fingerprint.md gives the evidence; Keras is what is measured, never compared).
COUNT_FIELDS: dict[str, Callable[[str | None], str | None]] = {"python": python_minor}


def count_fingerprint(environment: Environment, backend: str) -> dict[str, str | None]:
    """The fields of ``environment`` that decide whether counts compare, normalized."""
    fields = dict(COUNT_FIELDS)
    for framework in backends.count_frameworks(backend):
        fields[framework] = public_version
    for setting in backends.count_settings(backend):
        fields[setting] = same
    if backend == "jax" and nnx_enabled(environment):
        fields["flax"] = public_version  # NNX variables are flax's: its code is in the counts
    return {name: normalize(environment.get(name)) for name, normalize in sorted(fields.items())}


def nnx_enabled(environment: Environment) -> bool:
    """Keras's NNX setting as the run had it (``keras.config.is_nnx_enabled()``).

    Records from before it was captured have only the environment variable.
    """
    if "keras.nnx_enabled" in environment:
        return environment["keras.nnx_enabled"] == "True"
    return (environment.get("env.KERAS_NNX_ENABLED") or "").lower() in ("true", "1")


def device_kind(environment: Environment) -> str:
    """``cpu``, ``gpu`` or ``tpu``: the kind of device the backend computed on."""
    device = environment.get("device") or ""
    kind = device.split(":", 1)[0].strip().lower() if ":" in device else "cpu"
    kind = {"cuda": "gpu", "rocm": "gpu"}.get(kind, kind)
    return re.sub(r"[^a-z0-9]", "", kind) or "cpu"


def variant_of(environment: Environment, backend: str) -> str:
    """The baseline variant a record belongs to: ``py3.11-cpu``, ``py3.11-cpu-nnx``, ``py3.11-gpu``.

    Each variant keeps entries of its own (``baseline.Baselines``), chosen by
    the run's environment, so a GPU run is never compared with CPU entries nor
    an NNX run with plain jax.  What goes in a variant is what Keras's CI
    matrix varies and moves counts (docs/fingerprint.md): the Python minor,
    the device kind (other Keras code runs on CUDA than on CPU) and, on jax,
    NNX.  Framework versions stay in the fingerprint: a new release is a
    mismatch to re-record, not a variant to keep.
    """
    python = python_minor(environment.get("python")) or "unknown"
    parts = [f"py{python}", device_kind(environment)]
    if backend == "jax" and nnx_enabled(environment):
        parts.append("nnx")
    return "-".join(parts)


def mismatched_fields(
    baseline: Environment, measured: Environment, backend: str
) -> tuple[str, ...]:
    """``python 3.11 -> 3.12`` for each count-relevant field that differs."""
    before = count_fingerprint(baseline, backend)
    after = count_fingerprint(measured, backend)
    return tuple(
        f"{name} {before[name]} -> {after[name]}" for name in before if before[name] != after[name]
    )


def mismatch_for(backend: str) -> Callable[[Environment, Environment], tuple[str, ...]]:
    """``mismatched_fields`` for one backend, as the verdict and the baseline update take it."""
    return functools.partial(mismatched_fields, backend=backend)


_KERAS_REPO_PACKAGE = re.compile(r"^keras/(src/)?__init__\.py$")


def keras_git_commit(keras_module: Any) -> str | None:
    """The commit of the Keras git checkout ``keras_module`` was imported from, if any.

    Only Keras's own checkout counts (``keras_checkout``).  A dirty work tree is marked
    ``<sha>+dirty`` so a baseline never claims a clean commit it was not measured on.
    """
    found = keras_checkout(keras_module)
    if found is None:
        return None
    repo, package_dir = found
    try:
        sha = str(repo.head.commit.hexsha)
        return f"{sha}+dirty" if repo.is_dirty(path=package_dir) else sha
    except Exception:
        return None


def keras_checkout(keras_module: Any) -> tuple[Any, str] | None:
    """(the GitPython repository, the package's directory) of the Keras git checkout
    ``keras_module`` was imported from, if any: the ``keras`` package must sit at the top of
    the repository's work tree and be tracked there.  An installed Keras in a virtualenv that
    happens to live inside some other git checkout has none."""
    try:
        import git
    except ImportError:  # GitPython is a dependency; tolerate a broken install
        return None
    package_dir = os.path.dirname(os.path.abspath(keras_module.__file__))
    try:
        repo = git.Repo(package_dir, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None
    try:
        root = os.path.realpath(str(repo.working_tree_dir))
        if os.path.realpath(os.path.dirname(package_dir)) != root:
            return None  # keras/ is not at the top of this work tree
        tracked = repo.git.ls_files("--", "keras/__init__.py", "keras/src/__init__.py")
        if not any(_KERAS_REPO_PACKAGE.match(line) for line in tracked.splitlines()):
            return None  # the repository does not track a keras package
    except (ValueError, git.GitError):
        return None
    return repo, package_dir


def _keras_config(keras: Any) -> dict[str, str | None]:
    config = keras.config
    policy = config.dtype_policy()
    return {
        "keras.image_data_format": str(config.image_data_format()),
        "keras.floatx": str(config.floatx()),
        "keras.epsilon": repr(config.epsilon()),
        "keras.dtype_policy": str(getattr(policy, "name", policy)),
        "keras.nnx_enabled": str(bool(config.is_nnx_enabled()))
        if hasattr(config, "is_nnx_enabled")
        else None,
    }


def capture(backend: str) -> dict[str, str | None]:
    """The environment fields stored with every measurement."""
    keras = backends.import_keras()
    device, accelerator = backends.device(backend)
    env: dict[str, str | None] = {
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "platform": f"{platform.system()}-{platform.machine()}",
        "cpus": str(
            len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        ),
        "backend": backend,
        "keras_commit": keras_git_commit(keras),
        "device": device,
        "accelerator": "yes" if accelerator else "no",
    }
    env.update(backends.framework_versions())
    env["keras"] = str(getattr(keras, "__version__", env.get("keras")))
    env.update(_keras_config(keras))
    env.update(backends.compiler_facts(backend))
    for name in RECORDED_VARIABLES:
        env[f"env.{name}"] = os.environ.get(name)
    return env
