"""Comparing ``--kerasperf-json`` results of ``fingerprint_evidence.py``, and its Markdown table.

Both ``--kerasperf-json`` formats are read: schema 2 (``record``) and the
older flat one.  A test is the same as the reference's when its
``calls_by_function`` is identical and its graph breaks have the same
``breaks``, ``graphs`` and (frame, reason) -> count mapping.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TOP_FUNCTIONS = 20


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
