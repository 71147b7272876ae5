"""``kerasperf report --article``: the article's views of real per-backend results.

One module-scoped fixture runs the bundled suite once on numpy and once on
jax (the cheap backends; generate-32 left out, one timed round) and every
test reads those two real ``--kerasperf-json`` files, or an edited copy.  No
count is typed in: expectations are computed from the JSON.
"""

from __future__ import annotations

import copy
import fnmatch
import json
import struct
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import pytest

from kerasperf_lab.publish import article
from pytest_kerasperf import cli, formatting
from pytest_kerasperf.formatting import escape
from pytest_kerasperf.outcome import Outcome
from tests.realrun import BASELINES, backend_env, require_backend

BACKENDS = ("numpy", "jax")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
TRACEBACK = "keras/src/utils/traceback_utils.py:*"


@dataclass(frozen=True)
class Run:
    files: dict[str, Path]  # backend -> results file
    documents: dict[str, dict[str, Any]]

    def results(self) -> list[dict[str, Any]]:
        return [r for backend in BACKENDS for r in self.documents[backend]["results"]]

    def outcomes(self) -> list[Outcome]:
        return [msgspec.convert(r, Outcome) for r in self.results()]

    def result(self, backend: str, key: str) -> dict[str, Any]:
        found: list[dict[str, Any]] = [
            r for r in self.documents[backend]["results"] if r["key"] == key
        ]
        assert len(found) == 1, key
        return found[0]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The bundled suite's results on numpy and on jax, each run once."""
    for backend in BACKENDS:
        require_backend(backend)
    where = tmp_path_factory.mktemp("article")
    files = {}
    for backend in BACKENDS:
        out = where / f"{backend}.json"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "--kerasperf",
                f"--kerasperf-baseline-dir={BASELINES}",
                f"--kerasperf-json={out}",
                "--kerasperf-rounds=1",
                "--kerasperf-warmup=0",
                "-k",
                "not generate",
                "--pyargs",
                "pytest_kerasperf.suite",
            ],
            cwd=where,
            env=backend_env(backend, where / "keras-home"),
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        # 1: a count moved against the committed baseline; the results are still real.
        assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr
        assert out.is_file(), done.stdout[-3000:]
        files[backend] = out
    documents = {b: json.loads(p.read_text(encoding="utf-8")) for b, p in files.items()}
    return Run(files=files, documents=documents)


def report(
    capsys: pytest.CaptureFixture[str], *args: str | Path
) -> tuple[int, list[str], list[str]]:
    code = cli.main(["report", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.splitlines()


def cells(line: str) -> list[str]:
    """The cells of a terminal table row (separated by two spaces or more)."""
    return [c for c in (part.strip() for part in line.split("  ")) if c]


def section(lines: list[str], title: str) -> list[str]:
    """The lines of one view, from its title to the next view's."""
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    end = next(
        (i - 1 for i in range(start + 2, len(lines)) if lines[i].startswith("=")), len(lines)
    )
    return lines[start:end]


def first_match(mapping_file: Path) -> dict[str, str]:
    """function -> family of the bundled mapping's first matching pattern, read independently."""
    import tomllib

    families = tomllib.loads(mapping_file.read_text(encoding="utf-8"))["family"]

    def family_of(function: str) -> str:
        for family in families:
            if any(fnmatch.fnmatchcase(function, p) for p in family["patterns"]):
                return str(family["name"])
        return "other"

    class Lookup(dict[str, str]):
        def __missing__(self, function: str) -> str:
            return family_of(function)

    return Lookup()


def family_sums(calls_by_function: Mapping[str, int], lookup: Mapping[str, str]) -> dict[str, int]:
    sums: dict[str, int] = {}
    for function, count in calls_by_function.items():
        sums[lookup[function]] = sums.get(lookup[function], 0) + count
    return sums


def test_the_views_list_both_backends(run: Run, capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, err = report(capsys, run.files["numpy"], run.files["jax"], "--article")
    assert code == 0, err
    latency = section(lines, "Every config, every workload")
    configs = {cells(line)[0] for line in latency[4:] if line.startswith("Keras[")}
    assert configs == {"Keras[numpy] · eager", "Keras[jax] · eager", "Keras[jax] · jax.jit"}
    for result in run.results():
        record = result["record"]
        mode = "jax.jit" if record["mode"] == "compiled" else "eager"
        test = article.workload_name(article.workload_of(result["key"], record["mode"]))
        [row] = [
            cells(line)
            for line in latency
            if line.startswith(f"Keras[{record['backend']}] · {mode} ") and cells(line)[1] == test
        ]
        assert row[4] == formatting.ms(record["latency_ms"]["median"])  # current ms
        assert row[3] == formatting.ms(result["baseline"]["latency_median_ms"])  # baseline ms
        assert row[2] == "-"  # no plain-framework reference in these runs
        # change ×: never a ratio of two runs the rule refuses; a baseline timed in another run
        # on a CPU is such a run (and a baseline on another CPU model before it).
        other_cpu = result["baseline"]["environment"]["device"] != record["latency_ms"]["device"]
        assert row[5] == f"not comparable ({'device' if other_cpu else 'cpu'})"
        assert row[6] == "-"
    calls = section(lines, "Python calls per workload call")
    for result in run.results():
        record = result["record"]
        test = article.workload_name(article.workload_of(result["key"], record["mode"]))
        assert any(
            cells(line)[:4] == [test, record["mode"], record["backend"], f"{record['calls']:,}"]
            for line in calls[3:]
        ), calls
    hot = section(lines, "Hot functions by family")
    assert "test_cnn_forward [eager]:" in hot
    header = hot[hot.index("test_cnn_forward [eager]:") + 1]
    assert cells(header)[:3] == ["family", "jax", "numpy"]
    graphs = section(lines, "Graph breaks per compiled model")
    # jax.jit: no graph breaks, but its compiles per call are counted
    assert any(cells(line)[:3:2] == ["jax", "compiled"] for line in graphs)


def test_a_family_total_is_the_sum_of_its_functions(
    run: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    mapping = article.load_families()
    views = article.build(run.outcomes(), mapping)
    lookup = first_match(article.DEFAULT_FAMILIES)
    checked = 0
    for table in views.families:
        for backend in table.backends:
            found = [
                r
                for r in run.results()
                if r["record"]["backend"] == backend
                and r["record"]["mode"] == table.mode
                and article.workload_of(r["key"], table.mode) == table.workload
            ]
            if not found:
                assert all(row.calls[backend] is None for row in table.rows)
                continue
            by_function = found[0]["record"]["calls_by_function"]
            expected = family_sums(by_function, lookup)
            shown = {row.family: row.calls[backend] for row in table.rows}
            assert {k: v for k, v in shown.items() if v} == {k: v for k, v in expected.items() if v}
            checked += 1
    assert checked == len(run.results())

    # The traceback wrappers on numpy's LM forward, summed here from the JSON by file.
    record = run.result("numpy", "test_standard.py::test_lm_forward[eager]")["record"]
    wrappers = sum(
        n for f, n in record["calls_by_function"].items() if fnmatch.fnmatchcase(f, TRACEBACK)
    )
    assert wrappers > 0
    code, lines, _ = report(capsys, run.files["numpy"], run.files["jax"], "--article")
    assert code == 0
    hot = section(lines, "Hot functions by family")
    table_at = hot.index("test_lm_forward [eager]:")
    header = cells(hot[table_at + 1])
    row = next(cells(line) for line in hot[table_at:] if cells(line)[:1] == ["traceback wrappers"])
    assert row[header.index("numpy")] == f"{wrappers:,}"


def test_family_totals_add_up_to_the_records_calls(run: Run) -> None:
    views = article.build(run.outcomes(), article.load_families())
    for result in run.results():
        record = result["record"]
        workload = article.workload_of(result["key"], record["mode"])
        [table] = [t for t in views.families if t.workload == workload and t.mode == record["mode"]]
        total = sum(row.calls[record["backend"]] or 0 for row in table.rows)
        assert total == record["calls"] == table.totals[record["backend"]]
        assert article.UNATTRIBUTED not in {row.family for row in table.rows}


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_charts_are_written_as_png_files(
    run: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    charts = tmp_path / "charts"
    md = tmp_path / "report.md"
    code, lines, err = report(
        capsys,
        run.files["numpy"],
        run.files["jax"],
        "--article",
        "--charts",
        charts,
        "--markdown",
        md,
    )
    assert code == 0, err
    written = sorted(charts.iterdir())
    assert [p.name for p in written] == ["calls.png", "latency.png"]
    assert [f"chart: {p}" for p in sorted(written)] == sorted(
        line for line in lines if line.startswith("chart: ")
    )
    for path in written:
        width, height = png_size(path)
        assert width >= 600
        assert height >= 400
        assert path.stat().st_size > 20_000  # real bars and text, not an empty canvas
    text = md.read_text(encoding="utf-8")
    assert "![latency](charts/latency.png)" in text
    assert "![calls](charts/calls.png)" in text


def with_reference(run: Run, where: Path, rounds: int | None = None) -> tuple[Path, dict[str, Any]]:
    """A copy of jax's results whose eager CNN forward has a plain-JAX reference and breaks;
    ``rounds``: its latency (and the reference's) as if timed that many rounds."""
    document = copy.deepcopy(run.documents["jax"])
    [result] = [r for r in document["results"] if r["key"].endswith("test_cnn_forward[eager]")]
    latency = result["record"]["latency_ms"]
    if rounds is not None:
        latency["rounds"] = rounds
    result["record"]["reference"] = {
        "framework": "jax",
        "name": "plain jax CNN forward eager",
        "calls": max(1, result["record"]["calls"] // 7),
        "latency_ms": {**latency, "median": round(latency["median"] / 3, 3)},
    }
    [jitted] = [r for r in document["results"] if r["key"].endswith("test_cnn_forward[compiled]")]
    jitted["record"]["graph_breaks"] = {
        "breaks": 2,
        "graphs": 3,
        "reasons": [
            {"count": 2, "frame": "keras/src/ops/core.py:cond", "line": 7, "reason": "data dep"}
        ],
    }
    jitted["record"]["recompiles"] = 1
    path = where / f"jax-with-reference-{rounds}.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path, result


def test_a_reference_shows_as_plain_ms_and_ratios(
    run: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, result = with_reference(run, tmp_path, rounds=5)
    record, reference = result["record"], result["record"]["reference"]
    code, lines, err = report(capsys, run.files["numpy"], path, "--article")
    assert code == 0, err
    [row] = [
        cells(line)
        for line in section(lines, "Every config")
        if line.startswith("Keras[jax] · eager ") and cells(line)[1] == "test_cnn_forward"
    ]
    plain, current = reference["latency_ms"]["median"], record["latency_ms"]["median"]
    assert row[2] == formatting.ms(plain)
    assert row[-1] == formatting.times(current / plain)
    [calls_row] = [
        cells(line)
        for line in section(lines, "Python calls")
        if cells(line)[:3] == ["test_cnn_forward", "eager", "jax"]
    ]
    assert calls_row[-2] == f"{reference['calls']:,}"
    assert calls_row[-1] == formatting.times(record["calls"] / reference["calls"])
    assert "  2× keras/src/ops/core.py:cond: data dep" in section(lines, "Graph breaks")

    code, md, _ = report(capsys, run.files["numpy"], path, "--article", "--markdown", "-")
    assert code == 0
    assert md[0] == "## kerasperf: the article's views (jax, numpy)"
    assert any(
        line.startswith(
            f"| {escape('Keras[jax] · eager')} | {escape('test_cnn_forward')} | "
            f"{formatting.ms(plain)} |"
        )
        and line.endswith(f"| {formatting.times(current / plain)} |")
        for line in md
    )
    assert f"- {escape('2× keras/src/ops/core.py:cond: data dep')}" in md


def test_one_timed_round_gives_no_ratio(
    run: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As the fixture timed it (one round, IQR 0): Keras/plain is refused, and said why."""
    path, result = with_reference(run, tmp_path)
    assert result["record"]["latency_ms"]["rounds"] == 1
    code, lines, err = report(capsys, run.files["numpy"], path, "--article")
    assert code == 0, err
    view = section(lines, "Every config")
    [row] = [
        cells(line)
        for line in view
        if line.startswith("Keras[jax] · eager ") and cells(line)[1] == "test_cnn_forward"
    ]
    assert row[-1] == "not comparable (rounds)"
    note = "not comparable (rounds): a run timed fewer than 3"
    assert any(line.startswith(note) for line in view)


@pytest.mark.parametrize(
    "content",
    [
        '[[family]]\nname = "x"\ndescription = "no patterns"\n',
        "[[family]\nname = \n",
        '[[family]]\nname = "other"\ndescription = ""\npatterns = ["*"]\n',
    ],
    ids=["missing-patterns", "not-toml", "reserved-name"],
)
def test_a_broken_families_file_is_one_line_and_exit_2(
    run: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str
) -> None:
    broken = tmp_path / "families.toml"
    broken.write_text(content, encoding="utf-8")
    code, out, err = report(capsys, run.files["numpy"], "--article", "--families", broken)
    assert code == 2
    assert out == []
    assert len(err) == 1
    assert err[0].startswith(f"kerasperf report: error: {broken}: not ")


def test_a_user_mapping_replaces_the_bundled_one(
    run: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = tmp_path / "mine.toml"
    mine.write_text(
        f'[[family]]\nname = "wrappers"\ndescription = "traceback"\npatterns = ["{TRACEBACK}"]\n',
        encoding="utf-8",
    )
    code, lines, _ = report(capsys, run.files["numpy"], "--article", "--families", mine)
    assert code == 0
    hot = section(lines, "Hot functions by family")
    rows = [cells(line) for line in hot if line.startswith("  ") and line.strip("- ")]
    assert {row[0] for row in rows} == {"family", "wrappers", "other", "total"}


def test_charts_without_matplotlib_say_how_to_install_it(
    run: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    code, out, err = report(
        capsys, run.files["numpy"], "--article", "--charts", tmp_path / "charts"
    )
    assert code == 2
    assert out == []
    assert len(err) == 1
    assert "pip install matplotlib" in err[0]
    assert not (tmp_path / "charts").exists()


def test_the_same_test_twice_is_refused(run: Run, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = report(capsys, run.files["numpy"], run.files["numpy"], "--article")
    assert code == 2
    assert len(err) == 1
    assert "report one results file per backend" in err[0]


def test_families_and_charts_go_with_article(run: Run, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["report", str(run.files["numpy"]), "--families", "x.toml"])
    assert exited.value.code == 2
    assert "--families and --charts go with --article" in capsys.readouterr().err


def test_workload_of_drops_only_the_mode() -> None:
    assert article.workload_of("f.py::test_a[eager]", "eager") == "f.py::test_a"
    assert article.workload_of("f.py::test_a[compiled-b4]", "compiled") == "f.py::test_a[b4]"
    assert article.workload_of("f.py::test_a", "eager") == "f.py::test_a"
