"""The bare work the standard suite measures, done by hand in one plain script.

This is the article's method without pytest or the plugin: build the models,
explain + compile (torch), call once, cProfile until counts repeat, then
warm up and time each workload with a device sync after every call.
``benchmarks/suite_overhead.py`` compares the gated suite against it.
"""

from __future__ import annotations

import functools
import json
import time
import warnings
from collections.abc import Callable
from typing import Any

from pytest_kerasperf import backends, workloads
from pytest_kerasperf.measure import count_calls
from pytest_kerasperf.measure.graph import graph_breaks
from pytest_kerasperf.metrics.latency import GATED_TIMING, REPORTED_TIMING


def main() -> None:
    backend = backends.active_backend()
    keras = backends.import_keras()
    keras.config.enable_traceback_filtering()
    _, accelerator = backends.device(backend)
    warmup, rounds = GATED_TIMING if accelerator else REPORTED_TIMING
    warnings.simplefilter("ignore")  # as the plugin measures
    sync = backends.make_sync(backend)
    cnn, lm = workloads.build_cnn(), workloads.build_lm()
    x, prompt = workloads.cnn_input(), workloads.lm_prompt()
    modes = ["eager", "compiled"] if backends.has_compiled_mode(backend) else ["eager"]
    report: dict[str, Any] = {}
    for mode in modes:
        cnn_fwd = workloads.eager_forward(cnn)
        lm_fwd = workloads.eager_forward(lm)
        if mode == "compiled":
            if backend == "torch":
                graph_breaks(cnn, (x,), {"training": False})
            cnn_fwd = backends.compile_forward(cnn, backend)
            if backend == "torch":
                graph_breaks(lm, (prompt,), {"training": False})
            lm_fwd = backends.compile_forward(lm, backend)
        jobs: dict[str, Callable[[], Any]] = {
            "cnn_forward": functools.partial(cnn_fwd, x),
            "lm_forward": functools.partial(lm_fwd, prompt),
            "lm_generate_32": functools.partial(workloads.generate, lm_fwd, prompt, steps=32),
        }
        for name, fn in jobs.items():
            sync(fn())
            counts = count_calls(fn)
            for _ in range(warmup):
                sync(fn())
            times = []
            for _ in range(rounds):
                start = time.perf_counter()
                sync(fn())
                times.append(time.perf_counter() - start)
            times.sort()
            report[f"{name}[{mode}]"] = {
                "calls": counts.calls,
                "median_ms": round(times[len(times) // 2] * 1e3, 3),
            }
    print("BARE " + json.dumps(report))


if __name__ == "__main__":
    main()
