"""Which environment fields decide whether counts compare (docs/fingerprint.md has the evidence)."""

from __future__ import annotations

import json

import msgspec
import pytest

from pytest_kerasperf import baseline
from pytest_kerasperf.environment import count_fingerprint, mismatched_fields
from pytest_kerasperf.record import Record
from tests import readresult
from tests.inner import KEY, VARIANT, Inner, workload_source

ENV: dict[str, str | None] = {
    "python": "3.11.7",
    "platform": "Linux-x86_64",
    "numpy": "2.4.6",
    "optree": "0.20.0",
    "torch": "2.13.0+cpu",
    "jax": "0.10.2",
    "jaxlib": "0.10.2",
    "tensorflow": "2.21.0",
    "keras": "3.15.1",
    "keras_commit": None,
    "device": "cpu: AMD EPYC",
    "keras.image_data_format": "channels_last",
    "keras.nnx_enabled": "False",
    "env.KERAS_NNX_ENABLED": None,
}


def test_the_fingerprint_holds_only_count_relevant_fields_in_their_compared_form() -> None:
    torch = count_fingerprint(ENV, "torch")
    assert torch["python"] == "3.11"
    assert torch["torch"] == "2.13.0"  # the local build tag does not move counts
    assert "jax" not in torch
    assert "keras" not in torch  # Keras is what is measured, never a reason not to compare
    assert "device" not in torch
    assert "numpy" not in torch  # measured not to move torch's counts: recorded, not compared
    assert "optree" not in torch
    jax = count_fingerprint(ENV, "jax")
    assert (jax["jax"], jax["jaxlib"], jax["numpy"]) == ("0.10.2", "0.10.2", "2.4.6")
    assert {"opt_einsum", "ml_dtypes", "keras.nnx_enabled"} <= set(jax)
    assert jax["keras.nnx_enabled"] == "False"  # Keras's effective setting, not the variable
    assert "env.KERAS_NNX_ENABLED" not in jax
    assert "torch" not in jax
    assert "keras.nnx_enabled" not in torch
    tensorflow = count_fingerprint(ENV, "tensorflow")
    assert {"tensorflow", "numpy", "ml_dtypes"} <= set(tensorflow)
    assert "opt_einsum" not in tensorflow


@pytest.mark.parametrize(
    ("field", "value", "relevant"),
    [
        ("python", "3.12.1", True),
        ("torch", "2.14.0+cpu", True),
        ("numpy", "2.3.5", False),  # on torch; it moves jax, tensorflow and numpy counts
        ("optree", "0.19.1", False),
        ("keras.image_data_format", "channels_first", False),
        ("env.XLA_FLAGS", "--xla_force_host_platform_device_count=4", False),
        ("env.KERAS_NNX_ENABLED", "true", False),  # not on torch
        ("keras.nnx_enabled", "True", False),  # not on torch
        ("python", "3.11.2", False),
        ("torch", "2.13.0", False),
        ("keras", "3.16.0", False),
        ("keras_commit", "abc", False),
        ("device", "cuda: H200", False),
        ("platform", "Linux-aarch64", False),
        ("jax", "0.9.0", False),  # not torch's
    ],
)
def test_mismatched_fields(field: str, value: str, relevant: bool) -> None:
    found = mismatched_fields(ENV, {**ENV, field: value}, "torch")
    assert bool(found) is relevant, found


def test_nnx_and_the_numpy_stack_move_jax_counts() -> None:
    assert mismatched_fields(ENV, {**ENV, "keras.nnx_enabled": "True"}, "jax") == (
        "keras.nnx_enabled False -> True",
    )
    # The variable alone is not the setting (keras.json may say otherwise): only Keras's
    # effective setting is compared.
    assert mismatched_fields(ENV, {**ENV, "env.KERAS_NNX_ENABLED": "true"}, "jax") == ()
    assert mismatched_fields(ENV, {**ENV, "numpy": "2.3.5"}, "jax") == ("numpy 2.4.6 -> 2.3.5",)
    assert mismatched_fields(ENV, {**ENV, "numpy": "2.3.5"}, "numpy") == ("numpy 2.4.6 -> 2.3.5",)
    assert mismatched_fields(ENV, {**ENV, "keras.nnx_enabled": "True"}, "numpy") == ()


def edit_environment(inner: Inner, **fields: str) -> dict[str, str | None]:
    """Edit the entry's recorded environment in its file; the fields as they were."""
    path = inner.entry_file(KEY)
    data = json.loads(path.read_text(encoding="utf-8"))
    environment = data["entry"]["environment"]
    before = {name: environment.get(name) for name in fields}
    environment.update(fields)
    path.write_text(baseline.dumps("numpy", VARIANT, KEY, msgspec.convert(data["entry"], Record)))
    return before


@pytest.mark.parametrize(
    ("field", "value"),
    [("python", "3.12.1"), ("numpy", "2.3.5")],
    ids=["python", "numpy"],
)
def test_another_count_relevant_environment_fails_strict_with_one_line_naming_it(
    inner: Inner, field: str, value: str
) -> None:
    inner.write(workload_source())
    assert inner.run("--kerasperf-update-baseline").ret == pytest.ExitCode.OK
    # An entry recorded under another Python 3.12 / numpy, in this variant's directory.
    was = edit_environment(inner, **{field: value})[field]
    assert was is not None
    moved = (
        "python 3.12 -> " + ".".join(was.split(".")[:2])
        if field == "python"
        else f"numpy {value} -> {was}"
    )
    rerecord = (
        "PYTHONHASHSEED=0 KERAS_BACKEND=numpy pytest --kerasperf-update-baseline "
        f"--kerasperf-baseline-dir={inner.baseline_dir}"
    )
    result = inner.run("--kerasperf", "--kerasperf-strict")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    failure = (
        f"kerasperf baseline measured under another count-relevant environment ({moved}): "
        "counts not compared (--kerasperf-strict); run with the pinned set, or, if the pins "
        f"moved on purpose, re-record: `{rerecord}`"
    )
    result.stdout.fnmatch_lines([failure])
    assert sum(line == failure for line in result.stdout.lines) == 1
    result.stdout.fnmatch_lines(
        [
            "kerasperf: 1 perf test: 1 measured, 0 compared, 1 not compared (environment "
            f"differs: {moved}: 1); 0 stale baseline entries *",
            "kerasperf --kerasperf-strict: run FAILED: 1 not compared",
        ]
    )
    lenient = inner.run("--kerasperf")
    assert lenient.ret == pytest.ExitCode.OK

    # With the pinned file named (option or ini key), the line says what to install, and
    # the command re-records the run's selection (here: its test file).
    inner.pytester.makeini("[pytest]\nkerasperf_requirements = requirements/perf.txt\n")
    named = inner.run("--kerasperf", "--kerasperf-strict", "test_x.py")
    assert named.ret == pytest.ExitCode.TESTS_FAILED
    named.stdout.fnmatch_lines(
        [
            f"kerasperf baseline measured under another count-relevant environment ({moved}): "
            "counts not compared (--kerasperf-strict); install the pinned set (`pip install -r "
            "requirements/perf.txt`), or, if the pins moved on purpose, re-record: "
            f"`{rerecord} test_x.py`"
        ]
    )
    option = inner.run("--kerasperf", "-rP", "--kerasperf-requirements=ci/pins.txt")
    assert option.ret == pytest.ExitCode.OK
    [note] = [line for line in option.stdout.lines if line.startswith("note: baseline measured")]
    assert "(`pip install -r ci/pins.txt`)" in note


def test_another_irrelevant_environment_compares_and_passes(inner: Inner) -> None:
    inner.write(workload_source())
    assert inner.run("--kerasperf-update-baseline").ret == pytest.ExitCode.OK
    # Another machine: fields measured not to move counts (docs/fingerprint.md).
    edit_environment(
        inner,
        python="3.11.2",
        optree="0.19.1",
        ml_dtypes="0.5.4",  # moves jax and tensorflow counts, not numpy's
        cpus="1",
        device="cpu: another CPU",
        keras_commit="0123abc",
        **{
            "keras.image_data_format": "channels_first",
            "keras.nnx_enabled": "True",  # moves jax counts only (and makes a jax variant)
            "env.KERAS_NNX_ENABLED": "true",
        },
    )
    result = inner.run("--kerasperf", "--kerasperf-strict", "--kerasperf-json", "out.json")
    assert result.ret == pytest.ExitCode.OK
    [found] = inner.results()
    assert found["verdict"]["compared"] is True
    assert readresult.calls_delta(found) == 0
