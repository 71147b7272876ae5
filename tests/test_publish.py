"""``kerasperf publish``: one self-contained HTML page, checked in a real headless browser.

The results files are real: the bundled suite's forwards run twice on numpy
and once on jax (one module-scoped fixture, processes of a few seconds).  The
sweeps are real: ``tests/test_history.py``'s numpy history (calls over five
commits) and ``tests/test_history_torch.py``'s torch history (a graph break
planted at ``#3``), whose module fixtures are reused here (shared with those
tests in one run).  The per-PR table is built by :func:`prs_document` until
the command that writes it exists.  The page is opened from a ``file://`` URL
in Debian's chromium through playwright (no browser is downloaded).
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import pytest

from kerasperf_lab.publish import publish as rows
from kerasperf_lab.publish.html_page import Page, render, script_json
from kerasperf_lab.publish.publish import RunPoint
from pytest_kerasperf import cli, results_file
from pytest_kerasperf.outcome import BaselineSummary
from tests import test_history, test_history_torch
from tests.realrun import BASELINES, backend_env, require_backend
from tests.test_reports import fake_result

# The two histories' module fixtures, reused (built once per run, shared with their tests).
history = test_history.history
sweeps = test_history.sweeps
torch_sweep = test_history_torch.torch_sweep

RUNS = (("numpy", "numpy-a.json"), ("numpy", "numpy-b.json"), ("jax", "jax.json"))
KERAS = "https://github.com/keras-team/keras/"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
HOSTILE = '</script><script>alert("x")</script><img src=x onerror=alert(1)>&amp;'


def prs_document(**changes: Any) -> dict[str, Any]:
    """A per-PR table (kerasperf-prs/3) of two PRs, numbers as the article's."""

    def row(backend: str, test: str, mode: str, before: int, after: int) -> dict[str, Any]:
        compiled = mode == "compiled"
        breaks: tuple[dict[str, int], dict[str, int]] = (
            ({"graph_breaks": 11}, {"graph_breaks": 0}) if compiled else ({}, {})
        )
        return {
            "backend": backend,
            "test": f"test_standard.py::{test}[{mode}]",
            "mode": mode,
            "calls_before": before,
            "calls_after": after,
            "values_before": {"calls": before, "latency": 2.5, **breaks[0]},
            "values_after": {"calls": after, "latency": 0.326, **breaks[1]},
            "recompiles_before": None,
            "recompiles_after": None,
            "latency_iqr_before_ms": 0.1,
            "latency_iqr_after_ms": 0.01,
            "explanation": {
                "total": after - before,
                "groups": [
                    {
                        "caller": "keras/src/layers/layer.py:Layer.__call__",
                        "items": [
                            {
                                "callee": "isinstance",
                                "before": 1000,
                                "after": 1000 + after - before,
                                "via": "keras/src/ops/core.py:cast",
                            }
                        ],
                    }
                ],
                "moves": [
                    {"callee": "dict.get", "calls": 3, "source": "a.py:f", "target": "b.py:g"}
                ],
            },
            "hot_before": {"type checks": 1000},
            "hot_after": {"type checks": 1000 + after - before},
        }

    def side(sha: str) -> dict[str, str]:
        return {"sha": sha, "date": "2026-08-30T10:00:00Z", "subject": "a subject"}

    document: dict[str, Any] = {
        "schema": "kerasperf-prs/3",
        "repo": "https://github.com/keras-team/keras",
        "target": "master",
        "backends": ["torch", "numpy"],
        "selection": {"tests": [], "keyword": "forward", "rounds": 3},
        "environments": {"torch": {"name": None}, "numpy": {"name": None}},
        "prs": [
            {
                "pr": 23327,
                "title": "Removed the torch.compile graph break in dot_product_attention",
                "how": "merged",
                "before": side("a2f8eac8" + "0" * 32),
                "after": side("cc9de2b31" + "1" * 31),
                "merged": "2026-08-30",
                "contains": [],
                "merged_branches": [],
                "rows": [
                    row("torch", "test_lm_forward", "eager", 16000, 16006),
                    row("numpy", "test_lm_forward", "eager", 17016, 17016),
                    row("torch", "test_lm_forward", "compiled", 0, 0),
                ],
                "failed": [],
            },
            {
                "pr": 23336,
                "title": "Memoized dtype promotion in result_type",
                "how": "head",
                "before": side("b" * 40),
                "after": side("c" * 40),
                "merged": None,
                "contains": [{"pr": 23183, "commits": 2}],
                "merged_branches": ["user/other"],
                "rows": [row("torch", "test_cnn_forward", "eager", 5000, 4287)],
                "failed": [{"backend": "numpy", "side": "after", "error": "ImportError"}],
            },
        ],
    }
    document["prs"][0].update(changes)
    return document


def write(path: Path, document: Any) -> Path:
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def publish(
    capsys: pytest.CaptureFixture[str], out: Path, *inputs: Path, title: str = "kerasperf"
) -> tuple[int, str]:
    code = cli.main(["publish", *map(str, inputs), "-o", str(out), "--title", title])
    return code, capsys.readouterr().err


def figures(page: str) -> dict[str, Any]:
    """The figures embedded in a page (JSON: the \\u003c escapes read back as they were)."""
    found = re.search(
        r'<script type="application/json" id="kerasperf-figures">(.*?)</script>', page, re.S
    )
    assert found is not None
    loaded: dict[str, Any] = json.loads(found.group(1))
    return loaded


# --- the fast tier: the per-PR table, escaping, bad input -------------------------------


def test_script_json_cannot_end_its_script() -> None:
    text = json.dumps({"title": HOSTILE + "\u2028<!--"})
    safe = script_json(text)
    assert not set("<>&") & set(safe)
    assert json.loads(safe) == json.loads(text)


def test_the_per_pr_table_links_escapes_and_explains(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prs = write(tmp_path / "prs.json", prs_document(title=HOSTILE))
    out = tmp_path / "page.html"
    code, err = publish(capsys, out, prs, title=HOSTILE)
    assert (code, err) == (0, "")
    page = out.read_text(encoding="utf-8")
    body = page.split("</head>", 1)[1]
    assert "alert" in body
    assert "<img" not in body
    assert body.count("<script") == 2
    assert "&lt;/script&gt;&lt;script&gt;alert" in body
    hrefs = re.findall(r'href="([^"]*)"', body)
    assert hrefs
    assert all(h.startswith(KERAS) for h in hrefs), hrefs
    assert f"{KERAS}pull/23327" in hrefs
    assert f"{KERAS}pull/23183" in hrefs
    assert f"{KERAS}commit/{'a2f8eac8' + '0' * 32}" in hrefs
    # Δ calls per forward per backend (LM and CNN eager forwards), graph breaks, the warning
    document = prs_document()
    first = document["prs"][0]["rows"][0]
    lm_torch = first["calls_after"] - first["calls_before"]
    assert f">+{lm_torch}</td>" in body
    assert "test_lm_forward 11 → 0" in body
    assert "the head also contains" in body
    assert "the Δ is not #23336's alone" in body
    assert body.count("<details>") == 2
    assert "(via <code>keras/src/ops/core.py:cast</code>)" in body
    assert "ImportError" in body
    assert figures(page) == {}  # no results, no sweep: no chart


def point(key: str, category: str, passed: bool, failures: tuple[str, ...] = ()) -> RunPoint:
    return RunPoint(
        run="run.json", backend="numpy", mode="eager", workload=key, key=key, calls=10,
        values={}, recompiles=None, median_ms=1.0, iqr_ms=0.1, rounds=3,
        status={"regression": "regressed"}.get(category, "pass"), category=category,
        passed=passed, failures=failures, calls_delta=None,
    )  # fmt: skip


def test_the_gate_lists_regressions_first_with_their_failure_lines() -> None:
    points = (
        point("test_fine", "unchanged", True),
        point("test_own_failure", "unchanged", False),
        point("test_slower", "regression", False, ("calls 12 > 10 <baseline>",)),
    )
    body = render(Page(title="t", inputs=(), points=points)).split("</head>", 1)[1]
    order = [body.index(f"<code>{name}</code>") for name in
             ("test_slower", "test_own_failure", "test_fine")]  # fmt: skip
    assert order == sorted(order)
    assert "<li>calls 12 &gt; 10 &lt;baseline&gt;</li>" in body
    assert '<tr class="regression">' in body


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"pr": "23327"}, "at prs/0/pr: Expected `int`, got `str`"),
        ({"pr": True}, "at prs/0/pr: Expected `int`, got `bool`"),
        ({"before": {"sha": "javascript:x", "date": "", "subject": ""}}, "at prs/0/before/sha"),
        ({"merged": "<b>soon</b>"}, "prs/0/merged"),
        ({"title": "a\x1b[31mred"}, "a control character"),
        ({"title": "a\x9b31mred"}, "a control character in 'a\\x9b31mred'"),  # C1: CSI
        ({"title": "fix \u202egnp.exe"}, "a control character in 'fix \\u202egnp.exe'"),
        ({"title": "x\u2066y"}, "a control character"),  # an isolate
        ({"rows": [{"mode": "eager"}]}, "at prs/0/rows/0: Object missing required field"),
        ({"contains": [{"pr": -1, "commits": 1}]}, "prs/0/contains/0/pr"),
    ],
)
def test_a_bad_per_pr_table_is_one_line_exit_2_and_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], message: str
) -> None:
    prs = write(tmp_path / "prs.json", prs_document(**change))
    out = tmp_path / "site" / "page.html"
    code, err = publish(capsys, out, prs)
    assert code == 2
    assert err.startswith(f"kerasperf publish: error: {prs}: "), err
    assert message in err, err
    assert err.count("\n") == 1
    assert not out.parent.exists()


def test_a_latency_that_is_not_a_number_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = prs_document()
    document["prs"][0]["rows"][0]["values_after"]["latency"] = "0.3"
    code, err = publish(capsys, tmp_path / "p.html", write(tmp_path / "prs.json", document))
    assert code == 2
    assert "rows/0/values_after/latency: Expected `int | float`, got `str`" in err


def test_what_is_not_an_input_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prs = write(tmp_path / "prs.json", prs_document())
    other = write(tmp_path / "other.json", {"schema": "kerasperf-sweep/0"})
    code, err = publish(capsys, tmp_path / "page.html", prs, other)
    assert code == 2
    assert f"{other}: not a results file" in err
    nan = tmp_path / "nan.json"
    nan.write_text('{"schema": "kerasperf-prs/3", "prs": NaN}')
    code, err = publish(capsys, tmp_path / "page.html", nan)
    assert code == 2
    assert "NaN is not a JSON number" in err
    code, err = publish(capsys, prs, prs)
    assert code == 2
    assert "the page would overwrite it" in err
    assert json.loads(prs.read_text()) == prs_document()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nan.json", "other.json", "prs.json"]


# --- real results files and sweeps ---------------------------------------------------------


@dataclass(frozen=True)
class Runs:
    files: tuple[Path, ...]
    documents: dict[str, dict[str, Any]]  # file name -> document


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """The bundled suite's forwards: twice on numpy, once on jax with its plain JAX twins
    (3 timed rounds each)."""
    where = tmp_path_factory.mktemp("publish")
    files = []
    for backend, name in RUNS:
        require_backend(backend)
        out = where / name
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--kerasperf",
             f"--kerasperf-baseline-dir={BASELINES}", f"--kerasperf-json={out}",
             "--kerasperf-rounds=3", "--kerasperf-warmup=1", "-k", "forward",
             "--pyargs", "pytest_kerasperf.suite", *(["--kerasperf-plain"] * (backend == "jax"))],
            cwd=where, env=backend_env(backend, where / "keras-home"), capture_output=True,
            text=True, timeout=900, check=False,
        )  # fmt: skip
        # 1: a count moved against the committed baseline; the results are still real.
        assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr
        assert out.is_file(), done.stdout[-3000:]
        files.append(out)
    return Runs(tuple(files), {p.name: json.loads(p.read_text()) for p in files})


def sweep_file(sweeps: test_history.Sweeps, torch_sweep: dict[str, Any]) -> tuple[Path, Path]:
    numpy = sweeps.cache.parent / "full" / "sweep.json"
    return numpy, Path(torch_sweep["out"])


def test_points_and_hover_are_the_inputs_numbers(
    runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "page.html"
    code, err = publish(capsys, out, *runs.files)
    assert (code, err) == (0, "")
    shown = figures(out.read_text(encoding="utf-8"))
    latency = [f for f in shown.values() if "ms per call" in f["layout"]["title"]["text"]]
    for name, document in runs.documents.items():
        for result in document["results"]:
            timed = result["record"]["latency_ms"]
            if timed is None:
                continue
            workload = result["key"].split("::")[-1].split("[")[0]
            (figure,) = (f for f in latency if f["layout"]["title"]["text"].startswith(workload))
            assert figure["layout"]["yaxis"]["rangemode"] == "tozero"
            (trace,) = (t for t in figure["data"] if t["name"] == name)
            at = trace["y"].index(timed["median"])
            hover = trace["hovertext"][at]
            assert f"median {timed['median']:.3f} ms" in hover
            assert f"IQR {timed['iqr']:.3f} ms" in hover
            assert f"rounds {timed['rounds']}" in hover
            assert hover.startswith(name)
            assert trace["error_y"]["array"][at] == pytest.approx(timed["iqr"] / 2)
            twin = result["record"]["reference"]
            if twin is None:
                continue
            (plain,) = (t for t in figure["data"] if t["name"] == "plain framework, same run")
            at = plain["y"].index(twin["latency_ms"]["median"])
            assert plain["x"][at] == trace["x"][trace["y"].index(timed["median"])]
            assert plain["hovertext"][at].startswith(f"{name}<br>{twin['name']} (beside ")
            assert plain["error_y"]["array"][at] == pytest.approx(twin["latency_ms"]["iqr"] / 2)
    # two numpy runs: their spread is drawn
    assert any(t["name"] == "range across runs" for f in latency for t in f["data"])
    # jax's plain twins, beside their configs
    assert any(t["name"] == "plain framework, same run" for f in latency for t in f["data"])
    # calls: one chart per workload, each run's exact count on its backend's trace
    calls = {
        f["layout"]["title"]["text"].split(":")[0]: f
        for f in shown.values()
        if "Python calls per call" in f["layout"]["title"]["text"]
    }
    for name, document in runs.documents.items():
        for result in document["results"]:
            workload = result["key"].split("::")[-1].split("[")[0]
            backend = result["record"]["backend"]
            (trace,) = (t for t in calls[workload]["data"] if t["name"] == backend)
            hover = next(
                h for h in trace["hovertext"] if h.startswith(f"{name}<br>{result['key']}")
            )
            assert f"{result['record']['calls']:,} calls" in hover
    assert all(f["layout"]["yaxis"]["rangemode"] == "tozero" for f in calls.values())


def test_a_bad_results_file_is_one_line_exit_2(
    runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = copy.deepcopy(runs.documents["jax.json"])
    record = document["results"][0]["record"]
    record["calls"] = str(record["calls"])
    bad = write(tmp_path / "bad.json", document)
    code, err = publish(capsys, tmp_path / "page.html", runs.files[0], bad)
    assert code == 2
    assert err.startswith(f"kerasperf publish: error: {bad}: ")
    assert err.count("\n") == 1
    assert not (tmp_path / "page.html").exists()


# --- the browser ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Seen:
    errors: list[str]  # console errors and page errors
    requests: list[str]
    traces: dict[str, int]  # chart title -> traces drawn
    hover: str
    hrefs: list[str]
    colours: int  # distinct colours of the screenshot
    inked: float  # the share of its pixels that are not white
    seconds: float


def open_in_chromium(page: Path, screenshot: Path) -> Seen:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium; .ci/run does)")
    from matplotlib import image
    from playwright.sync_api import sync_playwright

    start = time.monotonic()
    errors: list[str] = []
    requests: list[str] = []
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        tab = browser.new_page(viewport={"width": 1280, "height": 900})
        tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        tab.on("pageerror", lambda e: errors.append(str(e)))
        tab.on("request", lambda r: requests.append(r.url))
        tab.goto(page.as_uri())
        tab.wait_for_function(
            "[...document.querySelectorAll('.chart')].every("
            "d => d.classList.contains('js-plotly-plot') && d.querySelector('.main-svg'))",
            timeout=30_000,
        )
        traces = {
            f"{div.get_attribute('id')}: {div.get_attribute('data-title')}": len(
                div.query_selector_all(".scatterlayer .trace")
            )
            for div in tab.query_selector_all(".chart")
        }
        hover = ""
        point = tab.query_selector(".chart .scatterlayer .trace .points path")
        if point is not None:  # in the viewport first: the mouse cannot hover off-screen
            point.scroll_into_view_if_needed()
        box = point.bounding_box() if point is not None else None
        if box is not None:  # plotly's drag layer takes the pointer: move the mouse there
            tab.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            tab.wait_for_selector(".hoverlayer .hovertext", timeout=15_000)
            hover = tab.text_content(".hoverlayer") or ""
        hrefs = [a.get_attribute("href") or "" for a in tab.query_selector_all("a[href]")]
        tab.screenshot(path=str(screenshot), full_page=True)
        browser.close()
    pixels = image.imread(str(screenshot))[..., :3].reshape(-1, 3)
    colours = len({tuple(p) for p in pixels[:: max(1, len(pixels) // 200_000)].tolist()})
    inked = float((pixels.min(axis=1) < 0.95).mean())
    return Seen(errors, requests, traces, hover, hrefs, colours, inked,
                time.monotonic() - start)  # fmt: skip


def expected_traces(runs: Runs, names: list[str], sweep_docs: list[dict[str, Any]]) -> list[int]:
    """The traces each chart should draw, in page order, counted from the inputs."""
    results = [(n, r) for n in names for r in runs.documents[n]["results"]]
    counts = []
    for workload in dict.fromkeys(r["key"].split("::")[-1].split("[")[0] for _, r in results):
        timed = [(n, r) for n, r in results if r["key"].split("::")[-1].startswith(workload + "[")
                 and r["record"]["latency_ms"] is not None]  # fmt: skip
        per_config: dict[tuple[str, str], int] = {}
        for _, r in timed:
            config = (r["record"]["backend"], r["record"]["mode"])
            per_config[config] = per_config.get(config, 0) + 1
        spread = any(n > 1 for n in per_config.values())
        plain = any((r["record"]["reference"] or {}).get("latency_ms") for _, r in timed)
        counts.append(len({n for n, _ in timed}) + spread + plain)
    for workload in dict.fromkeys(r["key"].split("::")[-1].split("[")[0] for _, r in results):
        counts.append(  # calls: a chart per workload, a trace per backend
            len({r["record"]["backend"] for _, r in results if f"::{workload}[" in r["key"]})
        )
    for doc in sweep_docs:
        for metric in ("calls", "graph_breaks"):  # the registry's order
            series = {(r["backend"], r["test"]) for r in doc["rows"] if metric in r["values"]}
            counts += [len(series)] if series else []
    return counts


def test_the_page_in_a_headless_browser(
    runs: Runs,
    sweeps: test_history.Sweeps,
    torch_sweep: dict[str, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    numpy_sweep, graph_sweep = sweep_file(sweeps, torch_sweep)
    prs = write(tmp_path / "prs.json", prs_document())
    out = tmp_path / "page.html"
    code, err = publish(capsys, out, *runs.files, graph_sweep, numpy_sweep, prs)
    assert (code, err) == (0, "")
    seen = open_in_chromium(out, tmp_path / "page.png")
    print(f"browser: {seen.seconds:.1f} s, {seen.colours} colours, {seen.inked:.1%} inked")
    assert seen.errors == []
    assert [u for u in seen.requests if not u.startswith(("file:", "data:", "blob:"))] == []
    docs = [json.loads(p.read_text()) for p in (graph_sweep, numpy_sweep)]
    # torch: the graph break planted at #3 draws a step; numpy: calls only
    assert any(r["values"].get("graph_breaks") for r in docs[0]["rows"])
    assert list(seen.traces.values()) == expected_traces(runs, [p.name for p in runs.files], docs)
    assert any("graph breaks" in title for title in seen.traces)
    (steps,) = (f for f in figures(out.read_text()).values() if "graph breaks per" in str(f))
    (trace,) = steps["data"]  # the compiled CNN: its breaks at each commit, a step line
    compiled = {
        r["index"]: r["values"]["graph_breaks"]
        for r in docs[0]["rows"]
        if r["values"].get("graph_breaks") is not None
    }
    assert trace["line"]["shape"] == "hv"
    assert trace["y"] == [compiled.get(c) for c in range(len(docs[0]["commits"]))]
    assert steps["layout"]["yaxis"]["rangemode"] == "tozero"
    assert "median" in seen.hover, seen.hover
    assert "numpy-a.json" in seen.hover, seen.hover
    assert seen.hrefs
    assert all(h.startswith(KERAS) for h in seen.hrefs)
    assert seen.colours > 50
    assert seen.inked > 0.02


def test_one_row_in_a_headless_browser(
    runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = copy.deepcopy(runs.documents["numpy-a.json"])
    document["results"] = [r for r in document["results"] if r["record"]["latency_ms"]][:1]
    document["summary"] = None  # a run's account of two tests would not be this file's
    one = write(tmp_path / "one.json", document)
    out = tmp_path / "page.html"
    assert publish(capsys, out, one) == (0, "")
    seen = open_in_chromium(out, tmp_path / "page.png")
    print(f"browser: {seen.seconds:.1f} s, {seen.colours} colours, {seen.inked:.1%} inked")
    assert seen.errors == []
    assert list(seen.traces.values()) == [1, 1]  # its latency and its calls
    assert "one.json" in seen.hover
    assert seen.colours > 20
    assert seen.inked > 0.02


# --- what a page shows at most ----------------------------------------------------------


def results_of(path: Path, keys: list[str]) -> Path:
    """A results file of passing tests, each with the environment and baseline it claims."""
    outcomes = []
    for key in keys:
        fake = fake_result(key, "pass")
        record = msgspec.structs.replace(fake.record, environment=FAKE_ENVIRONMENT)
        outcomes.append(
            msgspec.structs.replace(fake, record=record, baseline=BaselineSummary.of(record))
        )
    path.write_text(results_file.encode(outcomes, None))
    return path


FAKE_ENVIRONMENT: dict[str, str | None] = {"backend": "numpy", "python": "3.11.7"}


def test_more_results_or_workloads_than_a_page_shows_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rows, "MAX_PAGE_RESULTS", 3)
    monkeypatch.setattr(rows, "MAX_PAGE_WORKLOADS", 2)
    keys = ["test_x.py::test_a[eager]", "test_x.py::test_b[eager]"]
    a, b = (results_of(tmp_path / f"{name}.json", keys) for name in "ab")
    out = tmp_path / "site" / "page.html"
    assert publish(capsys, out, a)[0] == 0
    code, err = publish(capsys, out, a, b)
    assert code == 2
    assert err == (
        f"kerasperf publish: error: {b}: 4 results with the inputs before it, more than the 3 a "
        "page shows: publish fewer results files\n"
    )
    c = results_of(tmp_path / "c.json", [*keys, "test_x.py::test_c[eager]"])
    code, err = publish(capsys, out, c)
    assert code == 2
    assert err == (
        f"kerasperf publish: error: {c}: 3 workloads to chart with the inputs before it, more "
        "than the 2 a page shows: publish fewer results files\n"
    )


def sweep_document(commits: int, tests: int, *, measured: Any = None) -> dict[str, Any]:
    """A sweep of ``commits`` commits and ``tests`` numpy tests, each measured everywhere or
    where ``measured(commit, test)`` says."""
    listed = [
        {"sha": f"{i:040x}", "date": "2026-07-27", "subject": f"change {i} (#{20_000 + i})",
         "pr": 20_000 + i, "title": f"change {i}"}
        for i in range(commits)
    ]  # fmt: skip
    return {
        "schema": rows.SWEEP_SCHEMA,
        "range": "v3.10.0..v3.11.0",
        "backends": ["numpy"],
        "selection": {},
        "environments": {"numpy": {}},
        "commits": listed,
        "rows": [
            {"index": i, "commit": listed[i], "test": f"test_x.py::test_{j}", "backend": "numpy",
             "status": "changed", "values": {"calls": 100 + i}, "error": None}
            for i in range(commits)
            for j in range(tests)
            if measured is None or measured(i, j)
        ],
    }  # fmt: skip


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"schema": "kerasperf-sweep/1"}, "a sweep of 'kerasperf-sweep/1', not kerasperf-sweep/2"),
        ({"range": "a\x1b[31m"}, "range: a control character in 'a\\x1b[31m'"),
        ({"range": "x" * 2001}, "range: 2,001 characters, more than 2,000"),
        ({"commits": [{"sha": "javascript:x"}]}, "at commits/0/sha: Expected `str` matching"),
        ({"rows": [{"index": 0, "status": "changed"}]}, "at rows/0: Object missing required"),
        (
            {"rows": [{**sweep_document(2, 1)["rows"][0], "values": {"<b>calls</b>": 1}}]},
            "at rows/0/values (a key): Invalid enum value '<b>calls</b>'",
        ),
    ],
)
def test_a_bad_sweep_is_one_line_naming_the_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], message: str
) -> None:
    sweep = write(tmp_path / "sweep.json", {**sweep_document(2, 1), **change})
    code, err = publish(capsys, tmp_path / "page.html", sweep)
    assert code == 2
    assert err.startswith(f"kerasperf publish: error: {sweep}: "), err
    assert message in err, err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("commits", "tests", "message"),
    [
        (rows.MAX_SWEEP_COMMITS + 1, 1, f"commits: 501, more than the {rows.MAX_SWEEP_COMMITS}"),
        (2, rows.MAX_SWEEP_SERIES + 1, f"rows/{rows.MAX_SWEEP_SERIES}: more than 100 series"),
    ],
)
def test_a_sweep_over_what_a_page_shows_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], commits: int, tests: int, message: str
) -> None:
    sweep = write(tmp_path / "sweep.json", sweep_document(commits, tests))
    code, err = publish(capsys, tmp_path / "page.html", sweep)
    assert code == 2
    assert err.startswith(f"kerasperf publish: error: {sweep}: {message}"), err
    assert err.count("\n") == 1


def test_two_sweeps_over_what_a_page_shows_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rows, "MAX_PAGE_SWEEP_POINTS", 10)
    first, second = (write(tmp_path / f"{n}.json", sweep_document(3, 2)) for n in "ab")
    code, err = publish(capsys, tmp_path / "page.html", first, second)
    assert code == 2
    assert err == (
        f"kerasperf publish: error: {second}: 12 commits × series in the sweeps up to it, more "
        "than the 10 a page shows\n"
    )


def test_a_sweep_labels_only_its_measured_points(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = sweep_document(4, 1, measured=lambda commit, test: commit != 2)
    out = tmp_path / "page.html"
    assert publish(capsys, out, write(tmp_path / "sweep.json", document))[0] == 0
    [trace] = [
        trace
        for figure in figures(out.read_text(encoding="utf-8")).values()
        for trace in figure["data"]
        if "test_0" in trace.get("name", "")
    ][:1]
    assert trace["y"] == [100, 101, None, 103]
    labels = trace["hovertext"]
    assert labels[2] == ""
    assert all("change" in label for i, label in enumerate(labels) if i != 2)
