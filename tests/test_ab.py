"""kerasperf ab: the A/B statistics (synthetic and real timings) and one real interleaved run.

The statistics are tested on seeded synthetic samples (what the rule decides
is a property of the numbers, not of a machine) and on real timings of two
workloads of known relative cost.  The command is run once, for real, on a
git history of the installed Keras (the unpatched copy, then an extra call
planted in ``Layer.__call__``): two pytest processes, the counts diff exact.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import git
import numpy as np
import pytest

from pytest_kerasperf import cli
from pytest_kerasperf.history import ab, changepoints, stats
from tests.realrun import require_backend
from tests.test_keras_regression import commit_all, copy_keras, new_repo, patch, plant_layer_check

CHECK = "keras/src/layers/layer.py:_kerasperf_planted_check"


def _lognormal(seed: int, n: int, median: float, spread: float = 0.05) -> list[float]:
    rng = np.random.default_rng(seed)
    return list(median * np.exp(rng.normal(0.0, spread, n)))


def _processes(
    seed: int, processes: int, rounds: int, median: float, spread: float = 0.05
) -> list[list[float]]:
    """``processes`` samples of ``rounds`` timings around ``median``, no offset between them."""
    return [_lognormal(seed * 100 + i, rounds, median, spread) for i in range(processes)]


def test_a_sample_against_itself_is_no_change() -> None:
    sample = _processes(1, 3, 20, 50.0)
    verdict = stats.decide(sample, sample)
    assert verdict.decision == "no change"
    assert verdict.ratio == 1.0
    assert verdict.p_value > 0.9
    assert verdict.ci_low <= 1.0 <= verdict.ci_high
    assert (verdict.base_processes, verdict.base_n) == (3, 60)


def test_a_clear_slowdown_and_speedup_are_decided() -> None:
    base = _processes(2, 3, 20, 50.0)
    slower = stats.decide(base, _processes(3, 3, 20, 60.0))
    assert slower.decision == "slower"
    assert slower.p_value < 1e-6
    assert slower.ci_low < slower.ratio < slower.ci_high
    assert 1.1 < slower.ratio < 1.3
    assert slower.ci_low > 1.05
    faster = stats.decide(base, _processes(4, 3, 20, 40.0))
    assert faster.decision == "faster"
    assert faster.effect < -0.1


def test_process_offsets_are_not_taken_for_a_change() -> None:
    """What pooling rounds got wrong: each process runs at its own speed (here up to ±10 %)
    with tight rounds inside.  The pooled rounds differ "significantly" and by more than
    5 %, but the interleaved pairs do not agree (the second head process is the faster of its
    pair): no change."""
    offsets = {"base": [1.00, 0.94, 1.03], "head": [1.10, 0.93, 1.06]}
    base = [_lognormal(20 + i, 20, 50.0 * f, 0.01) for i, f in enumerate(offsets["base"])]
    head = [_lognormal(30 + i, 20, 50.0 * f, 0.01) for i, f in enumerate(offsets["head"])]
    verdict = stats.decide(base, head)
    assert verdict.p_value < 0.01  # the rounds alone would call it
    assert verdict.head_median / verdict.base_median >= 1.05  # and by more than 5 %
    assert verdict.ci_low <= 1.0 <= verdict.ci_high  # but the processes disagree
    assert verdict.decision == "no change"
    # The same offsets with a 15 % slowdown on top: every head process is slower.
    slow = [[t * 1.15 for t in run] for run in head]
    assert stats.decide(base, slow).decision == "slower"


def test_significant_but_small_is_no_change() -> None:
    """asv's rule: p < alpha alone is not enough, the effect must reach min_effect."""
    base = _processes(5, 4, 100, 50.0, spread=0.005)
    head = _processes(6, 4, 100, 51.0, spread=0.005)  # +2 %, very tight samples
    verdict = stats.decide(base, head)
    assert verdict.p_value < 1e-10
    assert verdict.interval_excludes_one
    assert verdict.decision == "no change"
    assert stats.decide(base, head, min_effect=0.01).decision == "slower"


def test_large_but_not_significant_is_no_change() -> None:
    """Two timings each: a 20 % difference of medians cannot reach p < 0.01."""
    verdict = stats.decide([[50.0, 51.0]], [[60.0, 61.0]])
    assert verdict.effect == pytest.approx(60.5 / 50.5 - 1)
    assert verdict.p_value >= 0.01
    assert verdict.decision == "no change"


def test_the_interval_narrows_with_more_processes() -> None:
    base, head = _processes(7, 2, 10, 50.0, 0.1), _processes(8, 2, 10, 55.0, 0.1)
    _, *wide = stats.process_ratio_ci(base, head)
    ratio, *narrow = stats.process_ratio_ci(
        _processes(7, 10, 50, 50.0, 0.1), _processes(8, 10, 50, 55.0, 0.1)
    )
    assert narrow[1] - narrow[0] < (wide[1] - wide[0]) / 2
    assert narrow[0] < 1.1 < narrow[1]
    assert narrow[0] < ratio < narrow[1]
    # One process a side: the spread between processes is unknown, so nothing is excluded.
    assert stats.process_ratio_ci(base[:1], head[:1])[1:] == (0.0, float("inf"))
    # Unequal process counts are not pairs: Welch's interval.
    assert stats.process_ratio_ci(base, _processes(9, 3, 10, 55.0, 0.1))[1] > 0


@pytest.mark.parametrize(
    ("base", "head", "alpha", "min_effect"),
    [
        ([[1.0]], [[1.0, 2.0]], 0.01, 0.05),
        ([], [[1.0, 2.0]], 0.01, 0.05),
        ([[1.0, 0.0]], [[1.0, 2.0]], 0.01, 0.05),
        ([[1.0, 2.0]], [[1.0, 2.0]], 0.0, 0.05),
        ([[1.0, 2.0]], [[1.0, 2.0]], 0.01, -0.1),
    ],
)
def test_bad_samples_are_refused(
    base: list[list[float]], head: list[list[float]], alpha: float, min_effect: float
) -> None:
    with pytest.raises(ValueError, match=r"at least 2|positive|alpha"):
        stats.decide(base, head, alpha=alpha, min_effect=min_effect)


def test_real_timings_tell_double_work_from_the_same_work() -> None:
    """Real perf_counter timings on this machine, interleaved as the command does."""
    data = np.random.default_rng(0).random(200_000)

    def timed(repeats: int) -> float:
        start = time.perf_counter()
        for _ in range(repeats):
            np.sort(data)
        return (time.perf_counter() - start) * 1000.0

    # Ten "processes": with three, one disturbed by the other xdist worker's load could
    # widen the interval over the ratio of process medians past 1 (seen in a full run).
    processes = 10
    a: list[list[float]] = [[] for _ in range(processes)]
    b: list[list[float]] = [[] for _ in range(processes)]
    double: list[list[float]] = [[] for _ in range(processes)]
    for process in range(processes):
        for _ in range(10):
            a[process].append(timed(1))
            b[process].append(timed(1))
            double[process].append(timed(2))
    assert stats.decide(a, double).decision == "slower"
    same = stats.decide(a, b)
    assert same.decision != "slower" or same.effect < 0.5  # a shared machine: never 2x


def _history(root: Path) -> tuple[Path, str, str]:
    work = copy_keras(root / "keras-repo")
    repo = new_repo(work)
    base = commit_all(repo, "Initial (#1)")
    plant_layer_check(work)
    commit_all(repo, "Add a check (#2)")
    mirror = root / "mirror.git"
    git.Repo.clone_from(str(work), str(mirror), multi_options=["--mirror"])
    return mirror, base, str(repo.head.commit.hexsha)


def test_ab_command_interleaves_and_diffs_counts_exactly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_backend("numpy")
    mirror, base, head = _history(tmp_path)
    out = tmp_path / "ab.json"
    argv = [
        "ab",
        "--repo",
        str(mirror),
        base,
        head,
        "--test",
        "test_standard.py::test_cnn_forward[eager]",
        "--backend",
        "numpy",
        "--processes",
        "1",
        "--rounds-per-process",
        "4",
        "--json",
        str(out),
    ]
    status = cli.main(argv)
    printed = capsys.readouterr().out
    document = json.loads(out.read_text())
    assert status == (1 if document["verdict"]["decision"] == "slower" else 0)
    assert document["schema"] == ab.AB_SCHEMA
    assert [run["side"] for run in document["runs"]] == ["base", "head"]
    assert all(len(run["times_ms"]) == 4 for run in document["runs"])
    assert document["verdict"]["base_n"] == document["verdict"]["head_n"] == 4
    counts = document["counts"]
    assert counts["calls_delta"] > 0
    assert any(point["callee"] == CHECK for point in counts["entry_points"])
    assert "calls per call: " in printed
    assert "_kerasperf_planted_check" in printed
    assert "Mann-Whitney p = " in printed


def test_ab_command_unknown_ref_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = git.Repo.init(tmp_path / "empty")
    with repo.config_writer() as config:
        config.set_value("user", "name", "kerasperf test")
        config.set_value("user", "email", "kerasperf@example.com")
    (tmp_path / "empty" / "f").write_text("x")
    commit_all(repo, "one")
    argv = ["ab", "--repo", str(tmp_path / "empty"), "nope", "HEAD", "--test", "t.py::t"]
    assert cli.main(argv) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("kerasperf ab: error: unknown ref 'nope'")


# --------------------------------------------------------------------------- change points


def _noisy(seed: int, levels: list[tuple[int, float]], spread: float = 0.02) -> list[float]:
    rng = np.random.default_rng(seed)
    series: list[float] = []
    for length, level in levels:
        series += list(level * (1 + rng.normal(0.0, spread, length)))
    return series


def test_e_divisive_finds_the_steps_of_a_noisy_series() -> None:
    series = _noisy(10, [(15, 50.0), (12, 60.0), (15, 45.0)])
    points = changepoints.e_divisive(series)
    assert [p.index for p in points] == [15, 27]
    assert points[0].relative == pytest.approx(0.2, abs=0.03)
    assert points[1].relative == pytest.approx(-0.25, abs=0.03)
    assert all(p.p_value <= 0.05 for p in points)


def test_e_divisive_is_quiet_on_noise_and_on_small_steps() -> None:
    assert changepoints.e_divisive(_noisy(11, [(40, 50.0)], spread=0.05)) == []
    small = _noisy(12, [(20, 50.0), (20, 51.0)], spread=0.002)  # +2 %, clear but small
    assert changepoints.e_divisive(small) == []
    assert [p.index for p in changepoints.e_divisive(small, min_magnitude=0.01)] == [20]


def test_e_divisive_ignores_one_outlier_and_respects_min_size() -> None:
    series = _noisy(13, [(30, 50.0)])
    series[10] = 200.0  # one noisy process: not a change of level
    assert changepoints.e_divisive(series) == []
    short = _noisy(14, [(20, 50.0), (2, 80.0)])  # a step 2 points from the end
    found = changepoints.e_divisive(short, min_size=3)
    assert all(3 <= p.index <= len(short) - 3 for p in found)
    assert changepoints.e_divisive(short, min_size=5) == []


def test_e_divisive_is_reproducible() -> None:
    series = _noisy(15, [(10, 50.0), (10, 56.0)], spread=0.05)
    assert changepoints.e_divisive(series) == changepoints.e_divisive(series)


# --------------------------------------------------------------------------- latency bisect

DENSE_CALL_ANCHOR = "    def call(self, inputs, training=None):\n"


def _latency_history(root: Path) -> tuple[Path, list[str]]:
    """Initial, a comment (the same program), a sleep of 30 ms in Dense.call (the CNN's
    forward is ~15 ms here: about 3x slower), another comment."""
    work = copy_keras(root / "keras-repo")
    repo = new_repo(work)
    dense = work / "keras" / "src" / "layers" / "core" / "dense.py"
    shas = []
    for message, line in [
        ("Initial (#1)", None),
        ("A comment (#2)", "        # the same program\n"),
        ("Sleep in Dense.call (#3)", "        __import__('time').sleep(0.03)\n"),
        ("Another comment (#4)", "        # still slow\n"),
    ]:
        if line is not None:
            patch(dense, DENSE_CALL_ANCHOR, line)
        shas.append(commit_all(repo, message))
    return work, shas


def test_latency_bisect_names_the_slow_commit_with_its_confidence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each step a real A/B against GOOD (3 pairs of processes in lockstep, 8 rounds each); a
    50 % minimum effect keeps a loaded CI machine from deciding the comment commits."""
    require_backend("numpy")
    work, shas = _latency_history(tmp_path)
    out = tmp_path / "bisect.json"
    argv = [
        "bisect", "--repo", str(work), shas[0], shas[-1],
        "--test", "test_standard.py::test_cnn_forward[eager]", "--backend", "numpy",
        "--metric", "latency", "--processes", "3", "--rounds-per-process", "8",
        "--min-effect", "0.5", "--json", str(out),
    ]  # fmt: skip
    assert cli.main(argv) == 0
    printed = capsys.readouterr().out
    document = json.loads(out.read_text())
    assert document["first_bad"]["sha"] == shas[2]
    assert document["candidates"] == [document["first_bad"]]
    outcomes = {p["commit"]: p["outcome"] for p in document["probes"]}
    assert outcomes == {shas[3]: "bad", shas[1]: "good", shas[2]: "bad"}
    slow = next(p for p in document["probes"] if p["commit"] == shas[2])
    assert slow["verdict"]["decision"] == "slower"
    assert slow["verdict"]["ci"][0] > 1.0
    assert slow["verdict"]["ratio"] > 1.5
    assert f"first slower commit: {shas[2][:10]}" in printed
    assert "#3 Sleep in Dense.call" in printed
    # How sure: every good step's interval below +50 % (a loaded machine may widen one).
    sure = all(p["sure"] for p in document["probes"])
    assert document["confident"] is sure
    expected = "confidence: every step decided" if sure else "confidence: NOT sure"
    assert expected in printed
    # GOOD against a commit that is not slower: nothing to bisect, exit 1.
    # (Two pairs suffice for an A/A: fewer processes only widen the interval.)
    argv[3:5] = [shas[0], shas[1]]
    argv[argv.index("--processes") + 1] = "2"
    assert cli.main(argv) == 1
    assert "no slowdown: BAD is not slower than GOOD" in capsys.readouterr().out
