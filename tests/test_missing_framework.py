"""A backend whose framework cannot be imported skips its perf tests with the reason."""

from __future__ import annotations

import pytest


def test_broken_framework_skips_with_reason(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    shadow = pytester.mkdir("shadow")
    (shadow / "jax").mkdir()
    (shadow / "jax" / "__init__.py").write_text("raise ImportError('jax is broken here')\n")
    monkeypatch.setenv("PYTHONPATH", str(shadow))
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    pytester.makepyfile(
        test_perf="""
        def test_forward(kerasperf, kerasperf_cnn, kerasperf_cnn_input):
            kerasperf(kerasperf_cnn, kerasperf_cnn_input)

        def test_plain():
            assert True
        """
    )
    result = pytester.runpytest_subprocess(
        "--kerasperf", f"--kerasperf-baseline-dir={pytester.path / 'b'}", "-rs"
    )
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines(
        ["SKIPPED [[]2[]] *kerasperf: backend 'jax' cannot be imported: jax is broken here"]
    )
    result.stdout.fnmatch_lines(
        [
            "kerasperf: 2 perf tests: 0 measured, 0 compared, 2 not measured (kerasperf: "
            "backend 'jax' cannot be imported: jax is broken here: 2); 0 stale baseline entries *",
        ]
    )
    assert not (pytester.path / "b").exists()

    # Under --kerasperf-strict a perf test skipped for a missing framework fails the run.
    strict = pytester.runpytest_subprocess(
        "--kerasperf", "--kerasperf-strict", f"--kerasperf-baseline-dir={pytester.path / 'b'}"
    )
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    strict.assert_outcomes(passed=1, skipped=2)
    strict.stdout.fnmatch_lines(
        [
            "kerasperf --kerasperf-strict: run FAILED: no perf test was measured, "
            "2 skipped for a missing framework"
        ]
    )


def test_unknown_backend_skips_with_reason(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KERAS_BACKEND", "mlx")
    pytester.makepyfile(
        test_perf="""
        def test_forward(kerasperf):
            kerasperf(lambda: None)
        """
    )
    result = pytester.runpytest_subprocess("--kerasperf", "-rs")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["SKIPPED *KERAS_BACKEND='mlx' is not one of *"])


def test_random_hash_seed_is_refused(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONHASHSEED", "random")
    pytester.makepyfile(test_perf="def test_forward(kerasperf):\n    kerasperf(lambda: None)\n")
    result = pytester.runpytest_subprocess("--kerasperf")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --kerasperf needs PYTHONHASHSEED=0: *"])
    # Without --kerasperf nothing is measured, so nothing is required.
    assert pytester.runpytest_subprocess().ret == pytest.ExitCode.OK
