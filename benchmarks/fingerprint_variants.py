"""The variants of ``fingerprint_evidence.py``: declared in ``fingerprint_variants.toml``.

The TOML file is the data (each variant's field, description, venv, env,
keras.json, plugin, prefix and probe); this module is its schema
(``VenvSpec``, ``Variant``) and reader (``load``).  See the file's header
for its tables.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BACKENDS: tuple[str, ...] = ("torch", "jax", "tensorflow", "numpy")
#: The declarations, next to this module.
DECLARATIONS = Path(__file__).resolve().with_name("fingerprint_variants.toml")
#: Placeholder expanded in pip arguments to ``-c`` and the constraints file
#: (less the spec's ``unpin`` distributions).
PIN = "-c {constraints}"
#: Placeholder in a venv's ``pip_env`` values for ``os.devnull``.
DEVNULL = "{devnull}"


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


_PREIMPORT_PLUGIN = '''\
"""Imports {modules} at configure time, before the suite imports Keras."""
import importlib


def pytest_configure(config):
    for name in {modules!r}:
        importlib.import_module(name)
'''


def preimport_plugin(*modules: str) -> str:
    return _PREIMPORT_PLUGIN.format(modules=modules)


@dataclass(frozen=True)
class Declarations:
    """Everything ``fingerprint_variants.toml`` declares, read."""

    interpreters: dict[str, tuple[str, ...]]  # label -> candidate paths or names on PATH
    reference_venv: VenvSpec
    variants: tuple[Variant, ...]


def _pairs(table: Mapping[str, Any] | None) -> tuple[tuple[str, Any], ...]:
    return tuple((table or {}).items())


def _venv(data: Mapping[str, Any]) -> VenvSpec:
    given: Mapping[str, str] = data.get("pip_env", {})
    pip_env = {k: os.devnull if v == DEVNULL else v for k, v in given.items()}
    return VenvSpec(
        name=str(data["name"]),
        kind=str(data["kind"]),
        interpreter=data.get("interpreter"),
        installs=tuple(tuple(str(a) for a in install) for install in data.get("installs", ())),
        unpin=tuple(data.get("unpin", ())),
        requirements=tuple(data.get("requirements", ())),
        pip_env=tuple(sorted(pip_env.items())),
        expect=tuple(sorted(data.get("expect", {}).items())),
        shadows=tuple(data.get("shadows", ())),
    )


def _variant(
    data: Mapping[str, Any],
    venvs: Mapping[str, VenvSpec],
    probes: Mapping[str, str],
    plugins: Mapping[str, str],
) -> Variant:
    venv = data["venv"]
    plugin: str | None = None
    if "plugin" in data:
        plugin = plugins[data["plugin"]]
    elif "preimport" in data:
        plugin = preimport_plugin(*data["preimport"])
    keras_json = data.get("keras_json")
    return Variant(
        name=str(data["name"]),
        field=str(data["field"]),
        description=str(data["description"]),
        venv=venvs[venv] if isinstance(venv, str) else _venv(venv),
        backends=tuple(data.get("backends", BACKENDS)),
        env=_pairs(data.get("env")),
        keras_json=None if keras_json is None else _pairs(keras_json),
        plugin=plugin,
        prefix=tuple(data.get("prefix", ())),
        probe="".join(probes[name] for name in data["probe"]) if "probe" in data else None,
        skip_reason=data.get("skip_reason"),
    )


def load(path: Path = DECLARATIONS) -> Declarations:
    """Read the declarations; a name that is not declared is a ``KeyError``."""
    with path.open("rb") as file:
        data = tomllib.load(file)
    venvs = {name: _venv(spec) for name, spec in data.get("venvs", {}).items()}
    probes, plugins = data.get("probes", {}), data.get("plugins", {})
    return Declarations(
        interpreters={k: tuple(v) for k, v in data.get("interpreters", {}).items()},
        reference_venv=venvs["reference"],
        variants=tuple(_variant(v, venvs, probes, plugins) for v in data["variants"]),
    )
