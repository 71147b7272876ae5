"""The environments of ``fingerprint_evidence.py``: venvs built, cached and checked.

A reference venv (the pinned set of ``requirements/ci.txt`` on the reference
Python), full venvs on other interpreters, and overlay venvs (a ``.pth``
file adds the reference venv's site-packages, a few packages installed into
the overlay shadow the reference's).  Venvs are cached by their dependency
specification and get the plugin (re)installed when its source hash
changes; the installed versions and the imported modules' files are
checked and recorded.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fingerprint_variants import PIN, VenvSpec, load

#: The venv every overlay is built over (``[venvs.reference]``).
REFERENCE_VENV = load().reference_venv
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
#: Bumped whenever how an overlay venv is built changes, so cached ones are rebuilt.
OVERLAY_RECIPE = 3


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
