"""The census covers every public symbol of the installed Keras (not a perf test)."""

from __future__ import annotations

import pytest

from pytest_kerasperf.census import (
    api_table,
    compiled_ops_table,
    coverage,
    distillation,
    distribution,
    inputs,
    layers_table,
    model_table,
    serialized,
    variants_table,
    wrappers,
)
from pytest_kerasperf.census.api_table import BROKEN as API_BROKEN
from pytest_kerasperf.census.layers_table import BROKEN as LAYERS_BROKEN
from pytest_kerasperf.census.ops_table import BROKEN as OPS_BROKEN

KINDS = {"call", "object", "metric", "optimizer"}
PART_NAMES = {*layers_table.PARTS, *api_table.PARTS, *model_table.PARTS}


@pytest.mark.parametrize("family", sorted(coverage.TABLES))
def test_every_public_symbol_has_a_workload(family: str) -> None:
    pytest.importorskip("keras")
    missing = coverage.uncovered(family)
    assert not missing, (
        f"keras.{family}: {len(missing)} public names have no census workload and no "
        f"exclusion: {', '.join(missing)} (add each to its table in pytest_kerasperf/census/)"
    )


@pytest.mark.parametrize("family", sorted(coverage.TABLES))
def test_every_entry_and_exclusion_is_well_formed(family: str) -> None:
    entries, excluded = coverage.TABLES[family]
    assert all(reason.strip() for reason in excluded.values())
    assert not set(entries) & set(excluded)
    for name in entries:
        assert name.startswith(f"{family}."), name
    if family == "utils":  # its entries say in words what is measured (utils_table)
        assert all(str(what).strip() for what in entries.values())
        return
    if family == "distillation":  # its entries: (the public class, what the workload runs)
        for name, (public, what) in distillation.DISTILLATION.items():
            assert name.split("[")[0] == public, name
            assert what.split(":")[0] in {"train", "loss"}, what
        return
    if family == "distribution":  # its entries: (the public name, what the workload runs)
        for name, (public, what) in distribution.DISTRIBUTION.items():
            assert name.split("[")[0] == public, name
            assert what in distribution.ACTIONS, what
        return
    if family == "wrappers":  # its entries: (the public wrapper, the method measured)
        for name, (public, method) in wrappers.WRAPPERS.items():
            assert name.split("[")[0] == public, name
            assert method in wrappers.METHODS, method
        return
    if family == "applications":  # its entries are input sides (applications_table)
        assert all(isinstance(side, int) and side >= 32 for side in entries.values())
        return
    for spec in entries.values():
        texts: tuple[object, ...] = (spec,) if isinstance(spec, str) else tuple(spec)  # type: ignore[arg-type]
        if texts and texts[0] in KINDS:
            texts = texts[1:]
        for text in texts:
            if text is not None:
                inputs.parse(str(text), PART_NAMES)  # SpecError names a bad entry


def test_broken_entries_name_workloads_and_backends() -> None:
    for table, entries in (
        (OPS_BROKEN, coverage.TABLES["ops"][0]),
        (LAYERS_BROKEN, coverage.TABLES["layers"][0]),
    ):
        for backend, name in table:
            assert backend in {"jax", "torch", "tensorflow", "numpy", "openvino"}
            assert name in entries
    for _backend, name in API_BROKEN:
        assert any(name in entries for entries, _ in coverage.TABLES.values())


def test_the_newer_tables_name_census_workloads() -> None:
    """The bounding-box, adapt and serialization tables build their objects from the family
    tables: every name they hold has an entry there, every BROKEN entry names a workload."""
    assert set(variants_table.BOXES) <= set(layers_table.LAYERS)
    assert set(variants_table.ADAPT) <= set(layers_table.LAYERS)
    names = set(serialized.names())
    assert {name for _backend, name in serialized.BROKEN} <= names
    assert set(serialized.UNSAFE) <= names
    assert set(model_table.UNSET) <= set(model_table.MODEL)
    assert {name for _backend, name in model_table.NOT_EXACT} <= set(model_table.MODEL)
    assert {name for _backend, name in model_table.BROKEN if "export" in name} <= set(
        model_table.MODEL
    )
    labels = {f"{name} (boxes)" for name in variants_table.BOXES}
    assert {name for _b, name in variants_table.BROKEN if name.endswith("(boxes)")} <= labels


def test_the_compiled_ops_tables_name_ops_and_backends() -> None:
    """Every name the compiled-ops tables hold is an op of the census, every backend one that
    compiles; a one-shape entry is an op whose inputs all have a second shape."""
    from pytest_kerasperf.census import ops_table, test_census_compiled_ops

    ops = set(ops_table.OPS)
    assert set(compiled_ops_table.NOT_COMPILED) <= ops
    assert set(compiled_ops_table.ONE_SHAPE) <= set(test_census_compiled_ops.RESHAPED)
    for table in (compiled_ops_table.COMPILE_BROKEN, compiled_ops_table.COMPILE_KNOWN):
        for backend, name in table:
            assert backend in {"jax", "jax-nnx", "torch", "tensorflow"}, backend
            assert name in set(test_census_compiled_ops.COMPILED), name
    assert set(compiled_ops_table.SECOND.values()) <= set(inputs.DESCRIPTIONS)
