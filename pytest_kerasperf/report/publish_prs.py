"""A per-PR table (``kerasperf-prs/1``) as typed rows, for ``kerasperf publish``.

Each PR measured on the commit just before it and just after it (``how``:
``merged``, its merge commit against the first parent; ``head``, the PR's head
against its merge base): calls, graph breaks, recompiles and latency per
backend and test, where the calls moved (``explanation``) and the hot
families on each side.  Untrusted like every input: checked field by field
with ``publish``'s checks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_kerasperf.report import article
from pytest_kerasperf.report.publish import (
    PublishError,
    as_array,
    as_backend,
    as_choice,
    as_count,
    as_object,
    as_opt_count,
    as_opt_ms,
    as_opt_text,
    as_pr_number,
    as_sha,
    as_text,
)

PRS_SCHEMA = "kerasperf-prs/1"


@dataclass(frozen=True)
class Side:
    sha: str
    date: str
    subject: str


@dataclass(frozen=True)
class Item:
    callee: str
    before: int
    after: int
    delta: int
    via: str | None = None  # the Python function that called a builtin caller


@dataclass(frozen=True)
class Group:
    caller: str
    via: str | None
    delta: int
    items: tuple[Item, ...]


@dataclass(frozen=True)
class Move:
    callee: str
    calls: int
    source: str
    target: str


@dataclass(frozen=True)
class Explanation:
    total: int
    groups: tuple[Group, ...]
    moves: tuple[Move, ...]

    @property
    def groups_sum(self) -> int:
        return sum(group.delta for group in self.groups)


@dataclass(frozen=True)
class PrRow:
    backend: str
    test: str
    mode: str
    workload: str
    calls_before: int | None
    calls_after: int | None
    calls_delta: int | None
    graph_breaks_before: int | None
    graph_breaks_after: int | None
    latency_before_ms: float | None
    latency_after_ms: float | None
    explanation: Explanation | None
    hot_before: Mapping[str, int]
    hot_after: Mapping[str, int]


@dataclass(frozen=True)
class Pr:
    number: int
    title: str
    how: str  # merged | head
    before: Side
    after: Side
    merged: str | None
    contains: tuple[tuple[int, int], ...]  # (PR, commits)
    merged_branches: tuple[str, ...]
    rows: tuple[PrRow, ...]
    failed: tuple[tuple[str, str, str], ...]  # (backend, side, error)

    @property
    def not_alone(self) -> bool:
        """The head holds other PRs' work: the delta is not this PR's alone."""
        return bool(self.contains or self.merged_branches)


@dataclass(frozen=True)
class PrTable:
    name: str
    target: str
    backends: tuple[str, ...]
    prs: tuple[Pr, ...]


_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _side(value: Any, at: str) -> Side:
    side = as_object(value, at)
    return Side(
        sha=as_sha(side.get("sha"), f"{at}/sha"),
        date=as_text(side.get("date"), f"{at}/date", limit=40),
        subject=as_text(side.get("subject"), f"{at}/subject"),
    )


def _hot(value: Any, at: str) -> dict[str, int]:
    return {as_text(k, at): as_count(v, f"{at}/{k}") for k, v in as_object(value, at).items()}


def _explanation(value: Any, at: str) -> Explanation | None:
    if value is None:
        return None
    data = as_object(value, at)
    groups = []
    for g, group_value in enumerate(as_array(data.get("groups"), f"{at}/groups")):
        gat = f"{at}/groups/{g}"
        group = as_object(group_value, gat)
        items = []
        for k, item_value in enumerate(as_array(group.get("items"), f"{gat}/items")):
            item = as_object(item_value, f"{gat}/items/{k}")
            iat = f"{gat}/items/{k}"
            items.append(
                Item(
                    callee=as_text(item.get("callee"), f"{iat}/callee"),
                    before=as_count(item.get("before"), f"{iat}/before"),
                    after=as_count(item.get("after"), f"{iat}/after"),
                    delta=as_count(item.get("delta"), f"{iat}/delta", signed=True),
                    via=as_opt_text(item.get("via"), f"{iat}/via"),
                )
            )
        groups.append(
            Group(
                caller=as_text(group.get("caller"), f"{gat}/caller"),
                via=as_opt_text(group.get("via"), f"{gat}/via"),
                delta=as_count(group.get("delta"), f"{gat}/delta", signed=True),
                items=tuple(items),
            )
        )
    moves = []
    for m, move_value in enumerate(as_array(data.get("moves", []), f"{at}/moves")):
        mat = f"{at}/moves/{m}"
        move = as_object(move_value, mat)
        moves.append(
            Move(
                callee=as_text(move.get("callee"), f"{mat}/callee"),
                calls=as_count(move.get("calls"), f"{mat}/calls"),
                source=as_text(move.get("source"), f"{mat}/source"),
                target=as_text(move.get("target"), f"{mat}/target"),
            )
        )
    return Explanation(
        total=as_count(data.get("total"), f"{at}/total", signed=True),
        groups=tuple(groups),
        moves=tuple(moves),
    )


def _pr_row(value: Any, at: str) -> PrRow:
    row = as_object(value, at)
    mode = as_choice(row.get("mode"), f"{at}/mode", ("eager", "compiled"))
    test = as_text(row.get("test"), f"{at}/test")

    def count(name: str, signed: bool = False) -> int | None:
        return as_opt_count(row.get(name), f"{at}/{name}", signed=signed)

    return PrRow(
        backend=as_backend(row.get("backend"), f"{at}/backend"),
        test=test,
        mode=mode,
        workload=article.workload_name(article.workload_of(test, mode)),
        calls_before=count("calls_before"),
        calls_after=count("calls_after"),
        calls_delta=count("calls_delta", signed=True),
        graph_breaks_before=count("graph_breaks_before"),
        graph_breaks_after=count("graph_breaks_after"),
        latency_before_ms=as_opt_ms(row.get("latency_before_ms"), f"{at}/latency_before_ms"),
        latency_after_ms=as_opt_ms(row.get("latency_after_ms"), f"{at}/latency_after_ms"),
        explanation=_explanation(row.get("explanation"), f"{at}/explanation"),
        hot_before=_hot(row.get("hot_before", {}), f"{at}/hot_before"),
        hot_after=_hot(row.get("hot_after", {}), f"{at}/hot_after"),
    )


def _pr_entry(value: Any, at: str) -> Pr:
    data = as_object(value, at)
    merged = data.get("merged")
    if merged is not None and not _DATE.fullmatch(as_text(merged, f"{at}/merged", limit=10)):
        raise PublishError(f"{at}/merged: not a YYYY-MM-DD date: {merged!a}")
    contains = []
    for c, contained in enumerate(as_array(data.get("contains", []), f"{at}/contains")):
        item = as_object(contained, f"{at}/contains/{c}")
        contains.append(
            (
                as_pr_number(item.get("pr"), f"{at}/contains/{c}/pr"),
                as_count(item.get("commits"), f"{at}/contains/{c}/commits"),
            )
        )
    failed = []
    for f, failure in enumerate(as_array(data.get("failed", []), f"{at}/failed")):
        item = as_object(failure, f"{at}/failed/{f}")
        failed.append(
            (
                as_backend(item.get("backend"), f"{at}/failed/{f}/backend"),
                as_choice(item.get("side"), f"{at}/failed/{f}/side", ("before", "after")),
                as_text(item.get("error"), f"{at}/failed/{f}/error"),
            )
        )
    return Pr(
        number=as_pr_number(data.get("pr"), f"{at}/pr"),
        title=as_text(data.get("title"), f"{at}/title"),
        how=as_choice(data.get("how"), f"{at}/how", ("merged", "head")),
        before=_side(data.get("before"), f"{at}/before"),
        after=_side(data.get("after"), f"{at}/after"),
        merged=None if merged is None else str(merged),
        contains=tuple(contains),
        merged_branches=tuple(
            as_text(b, f"{at}/merged_branches/{i}", limit=200)
            for i, b in enumerate(
                as_array(data.get("merged_branches", []), f"{at}/merged_branches")
            )
        ),
        rows=tuple(
            _pr_row(row, f"{at}/rows/{r}")
            for r, row in enumerate(as_array(data.get("rows"), f"{at}/rows"))
        ),
        failed=tuple(failed),
    )


def prs_from_json(name: str, data: Any, where: str | None = None) -> PrTable:
    where = where or name
    doc = as_object(data, where)
    if doc.get("schema") != PRS_SCHEMA:
        raise PublishError(f"{where}: not a per-PR table ({PRS_SCHEMA})")
    return PrTable(
        name=name,
        target=as_text(doc.get("target", "master"), f"{where}: target", limit=200),
        backends=tuple(
            as_backend(b, f"{where}: backends/{i}")
            for i, b in enumerate(as_array(doc.get("backends"), f"{where}: backends"))
        ),
        prs=tuple(
            _pr_entry(value, f"{where}: prs/{i}")
            for i, value in enumerate(as_array(doc.get("prs"), f"{where}: prs"))
        ),
    )
