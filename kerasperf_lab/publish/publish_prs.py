"""A per-PR table (``kerasperf-prs/3``) read back for ``kerasperf publish``.

The table's one model is ``history.prs_table.PrTable``: ``kerasperf prs`` writes
it, its views render it, and this module reads a file of it as untrusted input:
strict JSON (the caller's ``untrusted.read``), no control character in any of
its text, then the types and their limits (PR numbers, counts, backends,
modes, lengths), each refusal one line naming the file and the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kerasperf_lab.history.prs_table import PRS_SCHEMA, PRS_SCHEMAS, PrRow, PrTable
from kerasperf_lab.publish import article
from kerasperf_lab.publish.publish import PublishError, typed

__all__ = ["PRS_SCHEMA", "PRS_SCHEMAS", "PublishedPrs", "prs_from_json", "workload"]


@dataclass(frozen=True)
class PublishedPrs:
    """A per-PR table and the name of the file it came from."""

    name: str
    table: PrTable


def workload(row: PrRow) -> str:
    """``lm_forward``: the row's test without its file and mode, as the page names it."""
    return article.workload_name(article.workload_of(row.test, row.mode))


def prs_from_json(name: str, data: Any, where: str | None = None) -> PublishedPrs:
    """The table a file holds, checked as untrusted input; PublishError (one line) if not."""
    where = where or name
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema != PRS_SCHEMA:
        raise PublishError(
            f"{where}: a per-PR table of {str(schema)[:40]!a}, not {PRS_SCHEMA}: run kerasperf "
            "prs with this version to write it again"
        )
    return PublishedPrs(name, typed(data, PrTable, where))
