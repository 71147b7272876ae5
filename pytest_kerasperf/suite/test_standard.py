"""The issue #22561 workloads, as the issue's script calls them (docs/models.md).

``cnn`` and ``lm`` are the script's one-argument forwards for the mode; each
test measures what the script's ``bench(fn, *a)`` times: ``fn(*a)``.
"""

from __future__ import annotations

from typing import Any

from pytest_kerasperf import KerasPerf, generate


def test_cnn_forward(kerasperf: KerasPerf, cnn: Any, cnn_input: Any) -> None:
    kerasperf(cnn, cnn_input)


def test_lm_forward(kerasperf: KerasPerf, lm: Any, lm_prompt: Any) -> None:
    kerasperf(lm, lm_prompt)


def test_lm_generate_32(kerasperf: KerasPerf, lm: Any, lm_prompt: Any) -> None:
    kerasperf(lambda ids: generate(lm, ids, steps=32), lm_prompt)
