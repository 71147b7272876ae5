"""The plain twins build the issue script's models, seeded, and run them.

Real torch and jax, no mocks.  Every torch.compile path is left out but one
(the CNN, the smallest); jax.jit is cheap and is checked for every workload.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from pytest_kerasperf import twins, workloads
from pytest_kerasperf.twins import (
    FRAMEWORKS,
    MODES,
    WORKLOADS,
    PlainWorkload,
    framework_for,
    plain_workload,
)


def run(framework: str, workload: str, mode: str) -> Any:
    """Run a cached plain workload once, wait for its device, return the output."""
    plain = plain_workload(framework, workload, mode)
    out = plain.call()
    plain.sync(out)
    return out


def imported_after(statement: str) -> list[str]:
    """Which of torch, jax, flax, keras a fresh interpreter holds after ``statement``."""
    code = (
        f"import sys\n{statement}\n"
        "print(' '.join(m for m in ('torch', 'jax', 'flax', 'keras') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return done.stdout.split()


# ---------------------------------------------------------------- common API


def test_api_constants() -> None:
    assert WORKLOADS == ("cnn_forward", "lm_forward", "lm_generate_32")
    assert FRAMEWORKS == ("torch", "jax")
    assert MODES == ("eager", "compiled")
    assert f"lm_generate_{workloads.GEN}" in WORKLOADS


@pytest.mark.parametrize(
    ("backend", "framework"),
    [("torch", "torch"), ("jax", "jax"), ("tensorflow", None), ("numpy", None), ("", None)],
)
def test_framework_for(backend: str, framework: str | None) -> None:
    assert framework_for(backend) == framework


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("tensorflow", "cnn_forward", "eager"), "unknown plain framework 'tensorflow'"),
        (("torch", "rnn_forward", "eager"), "unknown workload 'rnn_forward'"),
        (("jax", "lm_forward", "xla"), "unknown mode 'xla'"),
    ],
)
def test_unknown_names_raise_one_line_value_error(args: tuple[str, str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message) as raised:
        plain_workload(*args)
    assert "\n" not in str(raised.value)


def test_importing_the_package_imports_no_framework() -> None:
    assert imported_after("import pytest_kerasperf.twins") == []


def test_each_framework_module_imports_only_its_framework() -> None:
    pytest.importorskip("torch", reason="torch is not installed")
    pytest.importorskip("jax", reason="jax is not installed")
    assert imported_after("import pytest_kerasperf.twins.plain_torch") == ["torch"]
    assert imported_after("import pytest_kerasperf.twins.plain_jax") == ["jax"]


# ---------------------------------------------------------------- torch


@pytest.fixture(scope="module")
def plain_torch() -> Any:
    pytest.importorskip("torch", reason="torch is not installed")
    from pytest_kerasperf.twins import plain_torch

    return plain_torch


def test_torch_parameter_counts(plain_torch: Any) -> None:
    assert plain_torch.count_params(plain_torch.build_cnn()) == workloads.CNN_PARAMS == 113_866
    assert plain_torch.count_params(plain_torch.build_lm()) == workloads.LM_PARAMS == 2_105_344
    for workload, params in [
        ("cnn_forward", workloads.CNN_PARAMS),
        ("lm_forward", workloads.LM_PARAMS),
        ("lm_generate_32", workloads.LM_PARAMS),
    ]:
        assert plain_workload("torch", workload, "eager").params == params


def test_torch_models_are_eval_and_on_the_chosen_device(plain_torch: Any) -> None:
    import torch

    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert plain_torch.device() == expected
    for model in (plain_torch.build_cnn(), plain_torch.build_lm()):
        assert not model.training
        assert {p.device.type for p in model.parameters()} == {expected}


def test_torch_inputs_are_the_workloads_inputs(plain_torch: Any) -> None:
    import torch

    images = plain_torch.cnn_input()
    assert tuple(images.shape) == (workloads.BATCH, 3, 32, 32)
    assert images.dtype == torch.float32
    np.testing.assert_array_equal(images.cpu().numpy(), workloads.cnn_input().transpose(0, 3, 1, 2))
    prompt = plain_torch.lm_prompt()
    assert prompt.dtype == torch.long
    np.testing.assert_array_equal(prompt.cpu().numpy(), workloads.lm_prompt())


def test_torch_output_shapes(plain_torch: Any) -> None:
    import torch

    cnn = run("torch", "cnn_forward", "eager")
    assert tuple(cnn.shape) == (4, 10)
    assert not cnn.requires_grad  # ran under torch.no_grad()
    lm = run("torch", "lm_forward", "eager")
    assert tuple(lm.shape) == (4, 64, 1024)
    tokens = run("torch", "lm_generate_32", "eager")
    assert tuple(tokens.shape) == (4, 64)
    assert tokens.dtype == torch.long
    # The window slid GEN tokens: the prompt's last 32 ones, then the 32 generated.
    assert bool((tokens[:, : workloads.SEQ - workloads.GEN] == 1).all())
    assert bool((tokens[:, -workloads.GEN] == lm[:, -1].argmax(-1)).all())


def test_torch_builds_are_seeded_and_leave_the_global_rng_alone(plain_torch: Any) -> None:
    import torch

    before = torch.random.get_rng_state()
    first, second = plain_torch.build_cnn(), plain_torch.build_cnn()
    assert torch.equal(torch.random.get_rng_state(), before)
    images = plain_torch.cnn_input()
    with torch.no_grad():
        torch.testing.assert_close(first(images), second(images), rtol=0, atol=0)
    lm_a, lm_b = plain_torch.build_lm().state_dict(), plain_torch.build_lm().state_dict()
    assert all(torch.equal(lm_a[name], lm_b[name]) for name in lm_a)


def test_torch_workloads_are_cached(plain_torch: Any) -> None:
    eager = plain_workload("torch", "lm_forward", "eager")
    assert plain_workload("torch", "lm_forward", "eager") is eager
    assert isinstance(eager, PlainWorkload)
    assert eager.framework == "torch"
    assert eager.name == "plain torch LM forward (eager)"
    assert plain_workload("torch", "lm_generate_32", "eager").name == (
        "plain torch LM generate 32 (eager)"
    )


def test_torch_compiled_cnn_equals_eager(plain_torch: Any) -> None:
    """The one torch.compile run of the file: the CNN, the cheapest to compile."""
    import torch

    eager = run("torch", "cnn_forward", "eager")
    compiled = run("torch", "cnn_forward", "compiled")
    assert plain_workload("torch", "cnn_forward", "compiled").name == (
        "plain torch CNN forward (torch.compile)"
    )
    torch.testing.assert_close(compiled, eager, rtol=1e-4, atol=1e-4)
    # Building the compiled generate only wraps gen_torch; compiling waits for a call.
    generate = plain_workload("torch", "lm_generate_32", "compiled")
    assert generate.name == "plain torch LM generate 32 (torch.compile)"
    assert plain_workload("torch", "lm_generate_32", "compiled") is generate


# ---------------------------------------------------------------- jax


@pytest.fixture(scope="module")
def plain_jax() -> Any:
    pytest.importorskip("jax", reason="jax is not installed")
    from pytest_kerasperf.twins import plain_jax

    return plain_jax


def test_jax_parameter_counts(plain_jax: Any) -> None:
    assert plain_jax.count_params(plain_jax.init_cnn()) == workloads.CNN_PARAMS == 113_866
    assert plain_jax.count_params(plain_jax.init_lm()) == workloads.LM_PARAMS == 2_105_344
    for mode in MODES:
        assert plain_workload("jax", "cnn_forward", mode).params == workloads.CNN_PARAMS
        assert plain_workload("jax", "lm_forward", mode).params == workloads.LM_PARAMS
        assert plain_workload("jax", "lm_generate_32", mode).params == workloads.LM_PARAMS


def test_jax_parameters_are_a_plain_pytree_of_the_script_shapes(plain_jax: Any) -> None:
    import jax

    cnn = plain_jax.init_cnn()
    assert cnn["conv1"]["kernel"].shape == (3, 3, 3, 64)
    assert cnn["conv3"]["kernel"].shape == (3, 3, 64, 128)
    assert cnn["dense"]["kernel"].shape == (128, 10)
    lm = plain_jax.init_lm()
    assert lm["embed"]["embedding"].shape == (workloads.VOCAB, workloads.HDIM)
    assert len(lm["blocks"]) == workloads.NLAYERS
    assert lm["blocks"][0]["ff1"]["kernel"].shape == (workloads.HDIM, 4 * workloads.HDIM)
    assert lm["head"]["kernel"].shape == (workloads.HDIM, workloads.VOCAB)
    assert all(isinstance(leaf, jax.Array) for leaf in jax.tree.leaves([cnn, lm]))


def test_jax_output_shapes(plain_jax: Any) -> None:
    assert run("jax", "cnn_forward", "eager").shape == (4, 10)
    assert run("jax", "lm_forward", "eager").shape == (4, 64, 1024)
    tokens = run("jax", "lm_generate_32", "eager")
    assert tokens.shape == (4, 64)
    assert np.issubdtype(tokens.dtype, np.integer)


@pytest.mark.parametrize("workload", ["cnn_forward", "lm_forward"])
def test_jax_jit_forward_is_close_to_eager(plain_jax: Any, workload: str) -> None:
    eager = np.asarray(run("jax", workload, "eager"))
    jitted = np.asarray(run("jax", workload, "compiled"))
    assert jitted.shape == eager.shape
    np.testing.assert_allclose(jitted, eager, rtol=1e-4, atol=1e-4)


def test_jax_generate_jit_scan_equals_eager_loop(plain_jax: Any) -> None:
    eager = np.asarray(run("jax", "lm_generate_32", "eager"))
    compiled = np.asarray(run("jax", "lm_generate_32", "compiled"))
    np.testing.assert_array_equal(compiled, eager)
    assert compiled.shape == (4, 64)
    np.testing.assert_array_equal(compiled[:, : workloads.SEQ - workloads.GEN], 1)
    # The first generated token is the forward's argmax at the last position.
    logits = np.asarray(run("jax", "lm_forward", "compiled"))
    np.testing.assert_array_equal(compiled[:, -workloads.GEN], logits[:, -1].argmax(-1))


def test_jax_builds_are_seeded(plain_jax: Any) -> None:
    import jax

    images = plain_jax.cnn_input()
    first = plain_jax.cnn_apply(plain_jax.init_cnn(), images)
    second = plain_jax.cnn_apply(plain_jax.init_cnn(), images)
    np.testing.assert_array_equal(np.asarray(first), np.asarray(second))
    lm_a, lm_b = jax.tree.leaves(plain_jax.init_lm()), jax.tree.leaves(plain_jax.init_lm())
    assert all(
        np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(lm_a, lm_b, strict=True)
    )


def test_jax_inputs_are_the_workloads_inputs(plain_jax: Any) -> None:
    np.testing.assert_array_equal(np.asarray(plain_jax.cnn_input()), workloads.cnn_input())
    prompt = plain_jax.lm_prompt()
    assert prompt.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(prompt), workloads.lm_prompt())


def test_jax_workload_names_and_cache(plain_jax: Any) -> None:
    names = {
        (workload, mode): plain_workload("jax", workload, mode).name
        for workload in WORKLOADS
        for mode in MODES
    }
    assert names == {
        ("cnn_forward", "eager"): "plain jax CNN forward (eager)",
        ("cnn_forward", "compiled"): "plain jax CNN forward (jax.jit)",
        ("lm_forward", "eager"): "plain jax LM forward (eager)",
        ("lm_forward", "compiled"): "plain jax LM forward (jax.jit)",
        ("lm_generate_32", "eager"): "plain jax LM generate 32 (eager)",
        ("lm_generate_32", "compiled"): "plain jax LM generate 32 (jax.jit+scan)",
    }
    assert plain_workload("jax", "lm_forward", "compiled") is plain_workload(
        "jax", "lm_forward", "compiled"
    )
    assert plain_workload("jax", "cnn_forward", "eager").framework == "jax"
    assert twins.framework_for("jax") == "jax"
