"""Which public symbols of the installed Keras the census has no workload for.

A symbol is covered by an entry of its family's table or by an exclusion with
its reason.  ``uncovered()`` is what ``test_census_coverage`` fails on, so a new
Keras layer, op, loss or metric cannot go unwatched.
"""

from __future__ import annotations

from collections.abc import Mapping

from pytest_kerasperf.census import (
    api_table,
    applications_table,
    distillation,
    distribution,
    layers_table,
    model_table,
    ops_table,
    symbols,
    utils_table,
    wrappers,
)

#: family -> (its workloads, its exclusions with reasons)
TABLES: dict[str, tuple[Mapping[str, object], Mapping[str, str]]] = {
    "ops": (ops_table.OPS, {}),
    "layers": (layers_table.LAYERS, layers_table.EXCLUDED),
    "callbacks": (model_table.CALLBACKS, model_table.EXCLUDED),
    "utils": (utils_table.UTILS, utils_table.EXCLUDED),
    "applications": (applications_table.MODELS, applications_table.EXCLUDED),
    "distillation": (distillation.DISTILLATION, distillation.EXCLUDED),
    "distribution": (distribution.DISTRIBUTION, distribution.EXCLUDED),
    "wrappers": (wrappers.WRAPPERS, wrappers.EXCLUDED),
    **{
        family: (
            {k: v for k, v in api_table.ENTRIES.items() if k.startswith(f"{family}.")},
            {k: v for k, v in api_table.EXCLUDED.items() if k.startswith(f"{family}.")},
        )
        for family in api_table.FAMILIES
    },
}


def uncovered(family: str) -> list[str]:
    """Public names of ``family`` in this Keras with neither a workload nor an exclusion."""
    entries, excluded = TABLES[family]
    return sorted(set(symbols.public(family)) - set(entries) - set(excluded))


def workloads() -> int:
    return sum(len(entries) for entries, _ in TABLES.values())
