"""Call counting on plain Python: names, exactness, the stability rule."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_kerasperf.measure.calls import (
    PASS_THROUGH_FUNCTIONS,
    CountsUnstable,
    Profile,
    count_calls,
    profile_call,
)
from pytest_kerasperf.measure.names import function_name, relative_path
from pytest_kerasperf.parts.calls import package_of
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
    counts = profile_call(workload).by_function
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


def run_probe(code: str, *args: str, **env: str) -> Any:
    """What a probe script prints as JSON, run in a fresh process with ``env`` added."""
    run = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONHASHSEED="0", **env),
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout)


def test_aotautograd_caching_changes_no_torch_compiled_count(tmp_path: Path) -> None:
    """Real torch: the AOTAutograd cache on (the compiled graph wrapped in
    ``SerializableCompiledFunction``) and off (not wrapped) give the same counts."""
    require_backend("torch")
    cache = str(tmp_path / "cache")
    found = {
        setting: run_probe(TORCH_CACHE_PROBE, setting, TORCHINDUCTOR_CACHE_DIR=cache)
        for setting in ("on", "off")
    }
    (name,) = PASS_THROUGH_FUNCTIONS
    assert found["on"]["raw"].get(name, 0) == 1, found["on"][
        "raw"
    ]  # wrapped: counted without the rule
    assert name not in found["off"]["raw"]
    assert found["on"]["kept"] == found["off"]["kept"]


JAX_CACHE_PROBE = """
import json
import jax, jax.numpy as jnp
from pytest_kerasperf.measure.calls import profile_call
from pytest_kerasperf.measure.users import as_users_run_it

x = jnp.ones((4,))

def compiles():  # a new function each call: traced, lowered and XLA-compiled every call
    return jax.jit(lambda v: v * 2.0 + 1.0)(x).block_until_ready()

compiles()
raw = profile_call(compiles)
with as_users_run_it():
    pinned = profile_call(compiles)
json.dump({"raw": raw.by_function, "pinned": pinned.by_function}, sys.stdout)
"""


def test_jax_compile_time_changes_no_count() -> None:
    """Real jax: a call that compiles counts the same whether jax's persistent-cache threshold
    says every compile is long enough to write (``=0``) or none is (``=1e9``), as the
    machine's load would decide; without the plugin's pin the write path is counted."""
    require_backend("jax")
    found = {
        threshold: run_probe(
            "import sys\n" + JAX_CACHE_PROBE,
            KERAS_BACKEND="jax",
            JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=threshold,
        )
        for threshold in ("0", "1e9")
    }
    write = "jax/_src/compilation_cache.py:put_executable_and_time"
    assert found["0"]["raw"].get(write) == 1, sorted(found["0"]["raw"])
    assert write not in found["1e9"]["raw"]
    assert found["0"]["pinned"] == found["1e9"]["pinned"]
    assert write not in found["0"]["pinned"]


TORCH_MODULE_PROBE = """
import json, sys
import torch
from pytest_kerasperf.measure.calls import profile_call
from pytest_kerasperf.measure.users import as_if_never_compiled

one = torch.tensor(1.0)

def builds():  # an eager workload that builds a module in every call, as fit does, and draws
    # from a Beta, as layers.MixUp does
    return torch.nn.Linear(2, 2), torch.distributions.Beta(one, one).sample()

builds()
before = profile_call(builds).by_function
torch.compile(lambda v: v + 1, backend="eager")(torch.ones(2))  # dynamo patches nn.Module
patched = torch.nn.Module.__init__
after = profile_call(builds).by_function
with as_if_never_compiled("torch", "eager"):
    kept = profile_call(builds).by_function
    hidden = "___needs_generation_tag_patch" not in dir(torch.nn.Module)
unchecked = torch.distributions.Distribution._validate_args is False  # dynamo's, kept after
json.dump({"before": before, "after": after, "kept": kept, "hidden": hidden,
           "restored": torch.nn.Module.__init__ is patched and unchecked}, sys.stdout)
"""


def test_a_compile_earlier_in_the_process_changes_no_eager_torch_count() -> None:
    """Real torch: once anything compiled ran, dynamo's patched ``nn.Module.__init__`` costs
    every module built afterwards calls more, and distributions no longer check their
    arguments; an eager measurement counts as before the compile, and dynamo's changes are
    back after it."""
    require_backend("torch")
    found = run_probe(TORCH_MODULE_PROBE)
    tag = "torch/_dynamo/mutation_guard.py:GenerationTracker.tag"
    check = "torch/distributions/constraints.py:is_dependent"
    assert found["after"].get(tag) == 1
    assert tag not in found["before"]
    assert found["before"].get(check, 0) > 0
    assert check not in found["after"]
    assert found["kept"] == found["before"]
    assert found["hidden"]
    assert found["restored"]


JAX_ARGV_PROBE = """
import json, sys
import jax, jax.numpy as jnp
from pytest_kerasperf.measure.calls import profile_call
from pytest_kerasperf.measure.users import as_users_run_it

x = jnp.ones((4,))

def compiles():  # traced, lowered and XLA-compiled every call: jax hashes a cache key each time
    return jax.jit(lambda v: v * 2.0 + 1.0)(x).block_until_ready()

SHORT, LONG = ["pytest"], ["pytest", "--kerasperf", "--kerasperf-strict", "--kerasperf-ratchet"]
for _ in range(3):  # warm: jax's caches of file names and lowerings filled
    compiles()
found = {"raw": {}, "pinned": {}}
for argv in (SHORT, LONG, SHORT, LONG):  # the second of each kept: caches warm
    sys.argv = argv
    found["raw"][len(argv)] = profile_call(compiles).by_function
with as_users_run_it():
    compiles()  # warm again after the Keras import
for argv in (SHORT, LONG, SHORT, LONG):
    sys.argv = argv
    with as_users_run_it():
        found["pinned"][len(argv)] = profile_call(compiles).by_function
found["argv"] = sys.argv
json.dump(found, sys.stdout)
"""


def test_the_command_line_changes_no_jax_count() -> None:
    """Real jax: each XLA compile looks at every element of ``sys.argv`` (for XLA flags to hash
    into its cache key), three calls per argument; measured, a compile counts the same however
    pytest was invoked, and ``sys.argv`` is back after."""
    require_backend("jax")
    found = run_probe(JAX_ARGV_PROBE, KERAS_BACKEND="jax")
    scan = "jax/_src/cache_key.py:_hash_xla_flags.<locals>.<genexpr>"  # one per argument
    assert found["raw"]["4"][scan] - found["raw"]["1"][scan] == 3, found["raw"]["4"][scan]
    assert found["pinned"]["4"] == found["pinned"]["1"]
    assert len(found["argv"]) == 4


FX_GRAPHS = """
import json, sys
sys.path.insert(0, sys.argv[1])
import torch
from torch import fx
from pytest_kerasperf.measure.calls import profile_call


class Twice(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2


x = torch.ones(3)
graphs = [fx.symbolic_trace(Twice()) for _ in range(3)]
print(json.dumps({
    "files": [g.forward.__code__.co_filename for g in graphs],
    "counts": [profile_call(lambda g=g: g(x)).by_function for g in graphs],
}))
"""


def test_a_torch_fx_graph_module_is_one_name_whatever_graphs_came_before() -> None:
    """torch.fx compiles each graph's code as ``<eval_with_key>.N``, N counting the graphs
    the process built before it (a compiled train step's AOT-autograd graph was ``.116`` in
    the gate's order and ``.296`` in its reverse): the same graph counts the same."""
    require_backend("torch")
    found = run_probe(FX_GRAPHS, str(Path(__file__).parents[1]))
    assert len(set(found["files"])) == 3, found["files"]
    assert all(f.startswith("<eval_with_key>.") for f in found["files"]), found["files"]
    first, *later = found["counts"]
    assert all(counts == first for counts in later), found["counts"]
    [graph] = [name for name in first if "eval_with_key" in name]
    # fx names the traced code's origin after the counter: kept, the counter not.
    assert graph.startswith("<eval_with_key> from <string>:")
    assert graph.endswith(":forward")
    assert first[graph] == 1
    assert package_of(graph) == "<eval_with_key>"
    # An origin in an installed package is named as any other file of it.
    origin = "/venv/lib/python3.11/site-packages/keras/src/ops/operation.py:9 in call"
    code = compile("def forward(): pass", f"<eval_with_key>.7 from {origin}", "exec")
    assert function_name(code.co_consts[0]) == (
        "<eval_with_key> from keras/src/ops/operation.py:9 in call:forward"
    )
