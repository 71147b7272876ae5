"""An independent count of one commit's LM forward, for ``tests/test_prs_torch.py``.

``python tests/independent.py calls|breaks`` with a commit's exported Keras
first on ``PYTHONPATH``: plain cProfile (``pstats``'s total) of the issue's
eager LM forward, or plain ``torch._dynamo.explain`` of the LM: none of the
plugin's measuring code.  Prints one JSON line.
"""

# ruff: noqa: I001  (torch first: nothing may import tensorflow before it)
from __future__ import annotations

import cProfile
import gc
import json
import pstats
import sys

import torch  # before anything imports tensorflow
import torch._dynamo

import keras
from pytest_kerasperf import workloads  # the models, built as the script builds them


def calls(forward: object, x: object) -> int:
    totals = []
    for _ in range(8):  # warm-up first; then two profiled calls must agree
        gc.collect()
        gc.disable()
        profiler = cProfile.Profile()
        profiler.enable()
        forward(x)  # type: ignore[operator]
        profiler.disable()
        gc.enable()
        total: int = pstats.Stats(profiler).total_calls  # type: ignore[attr-defined]
        totals.append(total - 1)  # less profiler.disable()
    assert totals[-1] == totals[-2], totals
    return totals[-1]


def main() -> None:
    lm, x = workloads.build_lm(), workloads.lm_prompt()
    out: dict[str, object] = {"keras": keras.__file__, "torch": torch.__version__}
    if sys.argv[1] == "calls":
        out["calls"] = calls(lambda v: lm(v, training=False), x)
    else:
        torch._dynamo.reset()
        explained = torch._dynamo.explain(lm)(x, training=False)
        out["graph_breaks"] = explained.graph_break_count
    print("INDEPENDENT " + json.dumps(out))


if __name__ == "__main__":
    main()
