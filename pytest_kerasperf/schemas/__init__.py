"""The JSON schemas of the files pytest-kerasperf writes, generated from their types.

``results.schema.json`` (``results_file.ResultsDocument``) and
``baseline.schema.json`` (``baseline.BaselineFile``) and ``table.schema.json``
(``baseline_table.TableFile``) are what msgspec makes of
the types that read and write those files: nothing is written by hand, and
``tests/test_schemas.py`` fails when a committed file differs from what the
types make.  Regenerate them with ``python -m pytest_kerasperf.schemas``.
"""

from __future__ import annotations

import json
from pathlib import Path

DIRECTORY = Path(__file__).parent


def generated() -> dict[str, dict[str, object]]:
    """File name -> the schema its type makes."""
    import msgspec

    from pytest_kerasperf import baseline, baseline_table, results_file

    baseline_schema: dict[str, object] = msgspec.json.schema(baseline.BaselineFile)
    table_schema: dict[str, object] = msgspec.json.schema(baseline_table.TableFile)
    return {
        "results.schema.json": results_file.schema(),
        "baseline.schema.json": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "https://github.com/pytest-kerasperf/schemas/baseline.schema.json",
            "title": f"pytest-kerasperf baseline file, schema version {baseline.SCHEMA_VERSION}",
            "description": "Generated from pytest_kerasperf.baseline.BaselineFile "
            "(`python -m pytest_kerasperf.schemas`); invariants the types cannot state are "
            "checked when a file is read (baseline.decode).",
            **baseline_schema,
        },
        "table.schema.json": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "https://github.com/pytest-kerasperf/schemas/table.schema.json",
            "title": "pytest-kerasperf census table file, schema version "
            f"{baseline_table.TABLE_SCHEMA_VERSION}",
            "description": "Generated from pytest_kerasperf.baseline_table.TableFile "
            "(`python -m pytest_kerasperf.schemas`); invariants the types cannot state are "
            "checked when a file is read (baseline_table.load).",
            **table_schema,
        },
    }


def text(schema: dict[str, object]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write() -> list[Path]:
    written = []
    for name, schema in generated().items():
        path = DIRECTORY / name
        path.write_text(text(schema), encoding="utf-8")
        written.append(path)
    return written
