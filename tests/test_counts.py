"""Call counting on plain Python: names, exactness, the stability rule."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_kerasperf.measure.calls import (
    PASS_THROUGH_FUNCTIONS,
    CountsUnstable,
    Profile,
    count_calls,
    profile_call,
    profile_once,
)
from pytest_kerasperf.measure.names import function_name, relative_path
from tests.realrun import require_backend


class Shape:
    def area(self) -> int:
        return 6


def workload() -> list[int]:
    out: list[int] = []
    for value in range(5):
        if isinstance(value, int):
            out.append(Shape().area())
    return sorted(out)


def test_names_are_readable_and_stable() -> None:
    counts = profile_once(workload)
    assert counts["isinstance"] == 5
    assert counts["list.append"] == 5
    assert counts["sorted"] == 1
    assert counts["tests/test_counts.py:Shape.area"] == 5
    assert counts["tests/test_counts.py:workload"] == 1
    # The profiler's own disable() is not counted; nothing carries an address.
    assert not any("disable" in name or "0x" in name for name in counts)
    assert sum(counts.values()) == 17


def test_builtin_names_drop_addresses() -> None:
    assert function_name("<built-in method builtins.isinstance>") == "isinstance"
    assert function_name("<method 'append' of 'list' objects>") == "list.append"
    assert (
        function_name("<built-in method __new__ of type object at 0x7f3a2c1d9e40>")
        == "type.__new__"
    )
    assert function_name("<built-in method torch._C._get_tracing_state>") == (
        "torch._C._get_tracing_state"
    )


def test_generated_code_hashes_are_one_name() -> None:
    kernel = "c3uwtvze2k5p5x6jw5p7vq3qo5tx5zpyazgcs2ac6hbg2jsgqhbx.kernel.kernel"
    assert function_name(f"<built-in method {kernel}>") == "<hash>.kernel.kernel"
    assert (
        function_name(
            "<built-in method cbhetpj7abce5veql2m6uxsrncbxounms2zxmc7w4qzocb4uh4sh.kernel.kernel>"
        )
        == "<hash>.kernel.kernel"
    )
    assert function_name("<built-in method isinstance_of_a_short_name>") == (
        "isinstance_of_a_short_name"
    )


def test_call_edges_say_who_called_whom_how_often() -> None:
    edges = profile_call(workload).edges
    assert edges["tests/test_counts.py:workload"] == {
        "isinstance": 5,
        "list.append": 5,
        "sorted": 1,
        "tests/test_counts.py:Shape.area": 5,
    }
    assert "tests/test_counts.py:Shape.area" not in edges  # it calls nothing
    result = count_calls(workload)
    assert result.call_edges == edges


def test_paths_are_relative_to_site_packages_or_the_top_package(tmp_path: Path) -> None:
    assert (
        relative_path("/opt/venv/lib/python3.11/site-packages/keras/src/ops/operation.py")
        == "keras/src/ops/operation.py"
    )
    # A Keras checkout anywhere (PYTHONPATH, editable install) names files as a wheel does.
    package = tmp_path / "checkout" / "keras" / "src" / "ops"
    package.mkdir(parents=True)
    for directory in (package, package.parent, package.parent.parent):
        (directory / "__init__.py").write_text("")
    assert relative_path(str(package / "operation.py")) == "keras/src/ops/operation.py"
    # A file in no package keeps its name.
    assert relative_path(str(tmp_path / "test_x.py")) == "test_x.py"


def test_count_calls_waits_until_counts_repeat() -> None:
    calls = itertools.count()

    def warming() -> None:
        # The first two calls do extra work (a cache filling), later ones do not.
        if next(calls) < 2:
            sorted(range(3))

    result = count_calls(warming, stable=3)
    assert result.passes == 5
    assert "sorted" not in result.calls_by_function
    assert result.calls == sum(result.calls_by_function.values())


def test_count_calls_names_what_keeps_moving() -> None:
    calls = itertools.count()

    def drifting() -> None:
        for _ in range(next(calls)):
            abs(1)

    with pytest.raises(CountsUnstable, match=r"still moving: abs \d+->\d+"):
        count_calls(drifting, max_passes=6)


@pytest.mark.parametrize("stable", [0, 1])
def test_one_pass_proves_nothing(stable: int) -> None:
    fn: Callable[[], None] = lambda: None  # noqa: E731
    with pytest.raises(ValueError, match="at least 2"):
        count_calls(fn, stable=stable)


class Probed:
    """A key whose ``__eq__`` runs from dict probes (equal hashes), as jax's FlatTree does."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __hash__(self) -> int:
        return 7

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Probed) and _probe_helper(self.value) == _probe_helper(other.value)


def _probe_helper(value: int) -> int:
    return _probe_leaf(value)


def _probe_leaf(value: int) -> int:
    return value


def probed_workload(keys: int) -> int:
    """Looks up the last of ``keys`` colliding keys (``__eq__`` runs keys - 1 times), then
    calls ``_probe_helper`` twice itself, and ``isinstance`` once."""
    table = {Probed(i): i for i in range(keys)}
    found = table[Probed(keys - 1)]
    return found + _probe_helper(1) + _probe_helper(2) + isinstance(found, int)


EQ = "tests/test_counts.py:Probed.__eq__"
HELPER = "tests/test_counts.py:_probe_helper"
LEAF = "tests/test_counts.py:_probe_leaf"


@pytest.mark.parametrize("keys", [3, 6])
def test_a_volatile_function_is_dropped_with_the_calls_below_it(keys: int) -> None:
    """With ``Probed.__eq__`` ignored, how many keys collide no longer moves the count: its
    ``isinstance`` calls are taken off, its helper calls too, and the helper's own calls are
    kept only where the helper was also called from elsewhere (cProfile keeps edges)."""
    everything = profile_call(lambda: probed_workload(keys), ignore=frozenset())
    assert everything.by_function[EQ] > 0  # it ran (how often depends on the table)
    kept = profile_call(lambda: probed_workload(keys), ignore=frozenset({EQ}))
    assert EQ not in kept.by_function
    assert all(EQ not in callees for callees in kept.edges.values())
    assert EQ not in kept.edges
    assert kept.by_function["isinstance"] == 1  # the workload's own
    assert kept.by_function[HELPER] == 2  # the workload's own two calls
    # _probe_leaf is called only by _probe_helper, which was also called from elsewhere: the
    # leaf's share of the dropped calls cannot be told apart and stays counted.
    assert kept.by_function[LEAF] == everything.by_function[LEAF]
    probe_calls = everything.by_function[HELPER] - 2
    assert kept.by_function[LEAF] == 2 + probe_calls


def test_a_callee_called_only_from_below_a_dropped_function_is_dropped_too() -> None:
    def only_probes() -> int:
        table = {Probed(i): i for i in range(4)}
        return table[Probed(3)]

    kept = profile_call(only_probes, ignore=frozenset({EQ}))
    assert not {EQ, HELPER, LEAF} & set(kept.by_function)
    assert "isinstance" not in kept.by_function
    assert profile_call(only_probes, ignore=frozenset({EQ})) == kept


class PassThrough:
    """A pure pass-through wrapper, as AOTAutograd's ``SerializableCompiledFunction``."""

    def __init__(self, inner: Callable[[], int]) -> None:
        self.inner = inner

    def __call__(self) -> int:
        return self.inner()


WRAPPER = "tests/test_counts.py:PassThrough.__call__"


def _wrapped_leaf() -> int:
    return len([_probe_leaf(1), _probe_leaf(2)])


def calls_through(target: Callable[[], int]) -> int:
    return target() + _probe_helper(3)


def test_a_pass_through_leaves_the_count_alone_and_its_callees_go_to_its_caller() -> None:
    """With and without the wrapper in the path, the same counts and edges: the wrapper's
    own calls leave, ``_wrapped_leaf`` is credited to the one who called the wrapper."""
    through = frozenset({WRAPPER})
    wrapper = PassThrough(_wrapped_leaf)
    bare = profile_call(lambda: calls_through(_wrapped_leaf), through=through)
    wrapped_raw = profile_call(lambda: calls_through(wrapper), through=frozenset())
    wrapped = profile_call(lambda: calls_through(wrapper), through=through)
    assert wrapped_raw.by_function[WRAPPER] == 1  # it was there, and is counted without the rule
    assert sum(wrapped_raw.by_function.values()) == sum(bare.by_function.values()) + 1

    # the lambdas differ by name only (the line they sit on): compare what lies below them
    def below(profile: Profile) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
        return (
            {k: v for k, v in profile.by_function.items() if "<lambda>" not in k},
            {k: v for k, v in profile.edges.items() if "<lambda>" not in k},
        )

    assert below(wrapped) == below(bare)
    assert (
        wrapped.edges["tests/test_counts.py:calls_through"]["tests/test_counts.py:_wrapped_leaf"]
        == 1
    )
    assert WRAPPER not in wrapped.by_function
    assert all(WRAPPER not in callees for callees in wrapped.edges.values())


TORCH_CACHE_PROBE = """
import json, sys
import torch
import torch._functorch.config as functorch_config
from pytest_kerasperf.measure.calls import PASS_THROUGH_FUNCTIONS, profile_call

functorch_config.enable_autograd_cache = sys.argv[1] == "on"

@torch.compile(backend="inductor")
def f(x):
    return torch.relu(x @ x + 1.0)

x = torch.ones(8, 8)
with torch.no_grad():
    f(x); f(x)
    raw = profile_call(lambda: f(x), through=frozenset())
    kept = profile_call(lambda: f(x))
json.dump({"raw": raw.by_function, "kept": kept.by_function}, sys.stdout)
"""


def test_aotautograd_caching_changes_no_torch_compiled_count(tmp_path: Path) -> None:
    """Real torch: the AOTAutograd cache on (the compiled graph wrapped in
    ``SerializableCompiledFunction``) and off (not wrapped) give the same counts."""
    require_backend("torch")
    found = {}
    for setting in ("on", "off"):
        env = dict(os.environ, PYTHONHASHSEED="0", TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "cache"))
        run = subprocess.run(
            [sys.executable, "-c", TORCH_CACHE_PROBE, setting],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
            check=False,
        )
        assert run.returncode == 0, run.stderr[-3000:]
        found[setting] = json.loads(run.stdout)
    (name,) = PASS_THROUGH_FUNCTIONS
    assert found["on"]["raw"].get(name, 0) == 1, found["on"][
        "raw"
    ]  # wrapped: counted without the rule
    assert name not in found["off"]["raw"]
    assert found["on"]["kept"] == found["off"]["kept"]
