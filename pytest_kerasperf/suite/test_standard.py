"""The issue #22561 workloads, as the issue's script calls them (docs/models.md).

``kerasperf_cnn`` and ``kerasperf_lm`` are the script's one-argument forwards
for the mode; each test measures what the script's ``bench(fn, *a)`` times:
``fn(*a)``.  Each names its plain-framework twin (the script's plain torch /
plain JAX version, measured with ``--kerasperf-plain``).
"""

from __future__ import annotations

from typing import Any

from pytest_kerasperf import KerasPerf, generate


def test_cnn_forward(kerasperf: KerasPerf, kerasperf_cnn: Any, kerasperf_cnn_input: Any) -> None:
    kerasperf.against_plain("cnn_forward")(kerasperf_cnn, kerasperf_cnn_input)


def test_lm_forward(kerasperf: KerasPerf, kerasperf_lm: Any, kerasperf_lm_prompt: Any) -> None:
    kerasperf.against_plain("lm_forward")(kerasperf_lm, kerasperf_lm_prompt)


def test_lm_generate_32(kerasperf: KerasPerf, kerasperf_lm: Any, kerasperf_lm_prompt: Any) -> None:
    kerasperf.against_plain("lm_generate_32")(
        lambda ids: generate(kerasperf_lm, ids, steps=32), kerasperf_lm_prompt
    )
