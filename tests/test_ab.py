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
from pytest_kerasperf.history import ab, changepoints
from tests.realrun import require_backend
from tests.test_keras_regression import copy_keras, patch

CHECK = "keras/src/layers/layer.py:_kerasperf_planted_check"


def _lognormal(seed: int, n: int, median: float, spread: float = 0.05) -> list[float]:
    rng = np.random.default_rng(seed)
    return list(median * np.exp(rng.normal(0.0, spread, n)))


def test_a_sample_against_itself_is_no_change() -> None:
    sample = _lognormal(1, 60, 50.0)
    verdict = ab.compare(sample, sample)
    assert verdict.decision == "no change"
    assert verdict.ratio == 1.0
    assert verdict.p_value > 0.9
    assert verdict.ci_low <= 1.0 <= verdict.ci_high


def test_a_clear_slowdown_and_speedup_are_decided() -> None:
    base = _lognormal(2, 50, 50.0)
    slower = ab.compare(base, _lognormal(3, 50, 60.0))
    assert slower.decision == "slower"
    assert slower.p_value < 1e-6
    assert slower.ci_low < slower.ratio < slower.ci_high
    assert 1.1 < slower.ratio < 1.3
    assert slower.ci_low > 1.05
    faster = ab.compare(base, _lognormal(4, 50, 40.0))
    assert faster.decision == "faster"
    assert faster.effect < -0.1


def test_significant_but_small_is_no_change() -> None:
    """asv's rule: p < alpha alone is not enough, the effect must reach min_effect."""
    base = _lognormal(5, 400, 50.0, spread=0.005)
    head = _lognormal(6, 400, 51.0, spread=0.005)  # +2 %, very tight samples
    verdict = ab.compare(base, head)
    assert verdict.p_value < 1e-10
    assert verdict.decision == "no change"
    assert ab.compare(base, head, min_effect=0.01).decision == "slower"


def test_large_but_not_significant_is_no_change() -> None:
    """Two timings each: a 20 % difference of medians cannot reach p < 0.01."""
    verdict = ab.compare([50.0, 51.0], [60.0, 61.0])
    assert verdict.effect == pytest.approx(60.5 / 50.5 - 1)
    assert verdict.p_value >= 0.01
    assert verdict.decision == "no change"


def test_the_interval_is_reproducible_and_narrows_with_more_data() -> None:
    base, head = _lognormal(7, 20, 50.0, 0.1), _lognormal(8, 20, 55.0, 0.1)
    assert ab.bootstrap_ratio_ci(base, head) == ab.bootstrap_ratio_ci(base, head)
    wide = ab.bootstrap_ratio_ci(base, head)
    narrow = ab.bootstrap_ratio_ci(_lognormal(7, 500, 50.0, 0.1), _lognormal(8, 500, 55.0, 0.1))
    assert narrow[1] - narrow[0] < (wide[1] - wide[0]) / 2
    assert narrow[0] < 1.1 < narrow[1]


@pytest.mark.parametrize(
    ("base", "head", "alpha", "min_effect"),
    [
        ([1.0], [1.0, 2.0], 0.01, 0.05),
        ([1.0, 0.0], [1.0, 2.0], 0.01, 0.05),
        ([1.0, 2.0], [1.0, 2.0], 0.0, 0.05),
        ([1.0, 2.0], [1.0, 2.0], 0.01, -0.1),
    ],
)
def test_bad_samples_are_refused(
    base: list[float], head: list[float], alpha: float, min_effect: float
) -> None:
    with pytest.raises(ValueError, match=r"at least 2|positive|alpha"):
        ab.compare(base, head, alpha=alpha, min_effect=min_effect)


def test_real_timings_tell_double_work_from_the_same_work() -> None:
    """Real perf_counter timings on this machine, interleaved as the command does."""
    data = np.random.default_rng(0).random(200_000)

    def timed(repeats: int) -> float:
        start = time.perf_counter()
        for _ in range(repeats):
            np.sort(data)
        return (time.perf_counter() - start) * 1000.0

    a, b, double = [], [], []
    for _ in range(30):
        a.append(timed(1))
        b.append(timed(1))
        double.append(timed(2))
    assert ab.compare(a, double).decision == "slower"
    same = ab.compare(a, b)
    assert same.decision != "slower" or same.effect < 0.5  # a shared machine: never 2x


def _history(root: Path) -> tuple[Path, str, str]:
    work = copy_keras(root / "keras-repo")
    repo = git.Repo.init(work)
    with repo.config_writer() as config:
        config.set_value("user", "name", "kerasperf test")
        config.set_value("user", "email", "kerasperf@example.com")
    repo.git.add("-A")
    repo.git.commit("-q", "-m", "Initial (#1)")
    base = str(repo.head.commit.hexsha)
    layer_py = work / "keras" / "src" / "layers" / "layer.py"
    patch(
        layer_py,
        "    def __call__(self, *args, **kwargs):\n        self._check_super_called()\n",
        "        _kerasperf_planted_check(self)\n",
    )
    layer_py.write_text(
        layer_py.read_text() + "\n\ndef _kerasperf_planted_check(layer):\n    return layer\n"
    )
    repo.git.add("-A")
    repo.git.commit("-q", "-m", "Add a check (#2)")
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
    repo.git.add("-A")
    repo.git.commit("-q", "-m", "one")
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
