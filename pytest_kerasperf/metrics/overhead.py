"""Keras over its plain twin: the same workload in plain torch or plain JAX, same process and run.

Measured where a test names a twin (``kerasperf.against_plain(...)``) and the
run asks for it (``--kerasperf-plain``, or a ``max_overhead`` budget), right
after the Keras workload, with the same passes.  Gated on any device (both
sides ran here); never stored in a baseline entry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from pytest_kerasperf.budget import Budget, MarkerError
from pytest_kerasperf.metrics.base import NOTHING, Metric, scoped
from pytest_kerasperf.parts.overhead import PlainTwinRecord

if TYPE_CHECKING:
    from pytest_kerasperf.measure.context import Measuring
    from pytest_kerasperf.metrics.base import Judgement
    from pytest_kerasperf.record import Record
    from pytest_kerasperf.settings import Settings

OVERHEAD_METRICS = ("latency", "calls")


def max_overhead(
    ratio: float,
    *,
    metric: str = "latency",
    backend: str | None = None,
    mode: str | None = None,
) -> Budget:
    """max_overhead(ratio, *, metric="latency", backend=None, mode=None): fail if the
    workload under Keras takes more than ratio times its plain twin
    (plain torch / plain JAX, same process and run): median latency, or with
    metric="calls" Python calls; backend= / mode= limit it to that backend / mode."""
    if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not ratio > 0:
        raise MarkerError(f"ratio must be a positive number, got {ratio!r}")
    if metric not in OVERHEAD_METRICS:
        raise MarkerError(
            f"metric must be one of {', '.join(map(repr, OVERHEAD_METRICS))}, got {metric!r}"
        )
    return scoped("overhead", float(ratio), backend, mode, metric=metric)


class Overhead(Metric, name="overhead", marker=max_overhead, limit_format="{:g}"):
    def check(
        self, budget: Budget, measured: Record, baseline: Record | None, settings: Settings
    ) -> Judgement:
        if (ref := measured.plain_twin) is None:
            return self.not_checked(budget, "the test named no plain twin")
        if budget.metric == "calls":
            ratio, what = measured.calls_overhead, f"{measured.calls:,} calls vs {ref.calls:,}"
        else:
            ratio = measured.latency_overhead
            if ratio is None or measured.latency is None or ref.latency is None:
                return self.not_checked(budget, "latency was not measured")
            what = f"median {measured.latency.median_ms:.3f} ms vs {ref.latency.median_ms:.3f} ms"
        if ratio is not None and ratio > budget.limit:
            return self.failed(f"{self.describe(budget)}: Keras {ratio:.2f}× {ref.name} ({what})")
        return NOTHING

    def measure(self, run: Measuring) -> None:
        """The named twin's calls and, when the Keras workload was timed, its latency."""
        from pytest_kerasperf.measure.calls import CountsUnstable, count_calls
        from pytest_kerasperf.measure.latency import time_rounds
        from pytest_kerasperf.metrics.latency import gated, timing

        plain = run.plain_workload()
        if plain is None:
            run.fields["plain_twin"] = None
            return

        def synced() -> None:
            plain.sync(plain.call())

        synced()  # compiles and traces happen here
        try:
            counts = count_calls(plain.call)
        except CountsUnstable as error:
            run.fail(f"kerasperf: {plain.name}: {error}")
        latency = None
        if run.fields.get("latency") is not None:
            # timed as the Keras workload was: the same warm-up and rounds
            env = run.environment()
            accelerator = env["accelerator"] == "yes"
            warmup, rounds = timing(
                run.options, gated(accelerator, run.options.gate_latency_on_cpu)
            )
            device = str(env["device"])
            latency = time_rounds(
                synced, warmup=warmup, rounds=rounds, device=device, accelerator=accelerator
            )
        run.fields["plain_twin"] = PlainTwinRecord(
            framework=plain.framework, name=plain.name, calls=counts.calls, latency=latency
        )

    def merge(
        self, before: Record, after: Record, counts_moved: bool, settings: Settings
    ) -> Record:
        return msgspec.structs.replace(after, plain_twin=None)  # an entry is Keras's only


METRIC = Overhead()
