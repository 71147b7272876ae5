"""The run's account: stale entries honour deselection; what strict mode fails on."""

from __future__ import annotations

from pathlib import Path

import msgspec

from pytest_kerasperf.accounting import Collection, Skip, account, stale_entries
from pytest_kerasperf.codec import to_data
from pytest_kerasperf.metrics.latency import LatencyAccount
from pytest_kerasperf.outcome import Outcome
from pytest_kerasperf.record import LatencyRecord, Record
from pytest_kerasperf.report.terminal import closing_lines
from pytest_kerasperf.settings import Settings
from pytest_kerasperf.verdict import Verdict

BASELINE = ["test_a.py::test_x[eager]", "test_a.py::test_y", "test_b.py::test_z"]


def collected(*keys: str, partial: tuple[str, ...] = ()) -> Collection:
    collection = Collection()
    collection.add(keys)
    collection.partial_modules |= set(partial)
    return collection


def test_an_entry_whose_test_is_gone_from_a_collected_module_is_stale() -> None:
    assert stale_entries(BASELINE, collected("test_a.py::test_x[eager]")) == ("test_a.py::test_y",)


def test_an_entry_of_a_module_not_collected_is_not_stale() -> None:
    # test_b.py was not part of this run (a path argument, --ignore, --lf skipping files)
    assert stale_entries(BASELINE, collected("test_a.py::test_x[eager]", "test_a.py::test_y")) == ()


def test_deselected_tests_count_as_collected() -> None:
    # -k / -m / --deselect: the plugin adds deselected items to the collection
    collection = collected("test_a.py::test_x[eager]")
    collection.add(["test_a.py::test_y"])
    assert stale_entries(BASELINE, collection) == ()


def test_a_module_named_by_node_id_is_not_collected_whole() -> None:
    collection = collected("test_a.py::test_x[eager]", partial=("test_a.py",))
    assert stale_entries(BASELINE, collection) == ()


def test_collections_merge_across_workers() -> None:
    one = collected("test_a.py::test_x[eager]")
    two = msgspec.convert(to_data(collected("test_a.py::test_y")), Collection)
    one.merge(two)
    assert stale_entries(BASELINE, one) == ()


def result(key: str, *, compared: bool, reason: str | None = None, latency: bool = True) -> Outcome:
    """An outcome of a test compared (or not, for ``reason``), timed on a CPU (or not)."""
    timing = LatencyRecord(1.0, 0.1, 5, "cpu: X", accelerator=False) if latency else None
    record = Record("numpy", "eager", 1, {"f.py:f": 1}, None, timing)
    return Outcome(
        nodeid=key,
        key=key,
        record=record,
        verdict=Verdict("pass" if compared else "new", compared=compared, not_compared=reason),
        passed=True,
        latency_not_measured=None if latency else "--kerasperf-rounds=0",
    )


def test_account_counts_each_perf_test_once() -> None:
    summary = account(
        [
            result("a", compared=True),
            result("b", compared=False, reason="no baseline entry"),
            result("c", compared=False, reason="environment differs: python 3.12 -> 3.11"),
            result("d", compared=True, latency=False),
        ],
        [Skip("e", "kerasperf: backend 'jax' needs jax", framework_missing=True)],
        ["test_a.py::test_gone"],
        Settings(gate_latency_on_cpu=False),
    )
    assert summary.measured == 4
    assert summary.compared == 2
    assert summary.not_compared == {
        "environment differs: python 3.12 -> 3.11": 1,
        "no baseline entry": 1,
    }
    assert summary.not_measured == {"kerasperf: backend 'jax' needs jax": 1}
    assert summary.framework_missing == 1
    latency = summary.metric(LatencyAccount)
    assert latency is not None
    assert latency.measured == 3
    assert latency.gated == 0
    assert latency.not_measured == {"--kerasperf-rounds=0": 1}
    assert summary.strict_problems() == [
        "2 not compared",
        "1 stale baseline entry",
        "1 skipped for a missing framework",
    ]
    lines = closing_lines(summary, Path("baselines/jax.json"), strict=True)
    assert lines == [
        (
            "kerasperf: 5 perf tests: 4 measured, 2 compared, 2 not compared (environment "
            "differs: python 3.12 -> 3.11: 1, no baseline entry: 1), 1 not measured (kerasperf: "
            "backend 'jax' needs jax: 1); 1 stale baseline entry (test_a.py::test_gone) "
            "[baselines/jax.json]",
            True,
        ),
        (
            "kerasperf latency: 3 measured, 3 on a CPU: reported, not gated "
            "(--kerasperf-gate-latency-on-cpu gates it); not measured (--kerasperf-rounds=0: 1)",
            False,
        ),
        (
            "kerasperf --kerasperf-strict: run FAILED: 2 not compared, 1 stale baseline entry, "
            "1 skipped for a missing framework",
            True,
        ),
    ]


def test_a_run_that_measured_nothing_is_a_strict_problem() -> None:
    summary = account([], [], [], Settings(gate_latency_on_cpu=False))
    assert summary.strict_problems() == ["no perf test was measured"]
    head, _ = closing_lines(summary, Path("b/numpy.json"), strict=False)
    assert head == (
        "kerasperf: 0 perf tests: 0 measured, 0 compared; 0 stale baseline entries [b/numpy.json]",
        True,
    )


def test_an_update_run_records_what_it_could_not_compare() -> None:
    summary = account(
        [result("a", compared=False, reason="no baseline entry")],
        [],
        [],
        Settings(gate_latency_on_cpu=True, updating=True),
    )
    assert summary.strict_problems() == []
    head, latency = closing_lines(summary, Path("b/numpy.json"), strict=True)
    assert head == (
        "kerasperf: 1 perf test: 1 measured, 0 compared, 1 not compared (no baseline entry: 1); "
        "0 stale baseline entries [b/numpy.json]",
        False,
    )
    assert latency == ("kerasperf latency: 1 measured, gated", False)


def test_many_skip_reasons_are_grouped_by_kind_in_a_readable_closing_line() -> None:
    """A census on jax with NNX skips a hundred tests, each with Keras's own error: the
    closing line groups the reasons by kind, with counts, and says where each one is."""
    skips = [
        Skip(
            f"test_census_layers.py::test_layer[keras.layers.L{i}]",
            f"kerasperf census: Keras cannot run keras.layers.L{i} on jax: TypeError: "
            f"the layer's variable 'kernel_{i}' is not an nnx.Variable (NNX enabled)",
        )
        for i in range(100)
    ]
    skips += [
        Skip(f"test_census_ops.py::test_op[keras.ops.o{i}]", f"kerasperf census: {i} needs x")
        for i in range(3)
    ]
    skips.append(Skip("test_x.py::test_y", "kerasperf: Keras cannot train on the jax backend"))
    summary = account([], skips, [], Settings(gate_latency_on_cpu=False))
    head, *_ = closing_lines(summary, Path("b/jax.json"), strict=False)
    line = head[0]
    assert len(line) < 400, line
    assert "(104 reasons of 3 kinds: kerasperf census: Keras cannot run … on jax: 100, " in line
    assert "kerasperf census: … needs x: 3" in line
    assert "kerasperf: Keras cannot train on the jax backend: 1" in line
    assert "each reason: `-rs` or --kerasperf-json" in line
