"""The issue #22561 workloads, written as a Keras contributor would write a perf test."""

from __future__ import annotations

from typing import Any

from pytest_kerasperf import generate
from pytest_kerasperf.plugin import KerasPerf


def test_cnn_forward(kerasperf: KerasPerf, cnn: Any, cnn_input: Any) -> None:
    kerasperf(lambda: cnn(cnn_input, training=False))


def test_lm_forward(kerasperf: KerasPerf, lm: Any, lm_prompt: Any) -> None:
    kerasperf(lambda: lm(lm_prompt, training=False))


def test_lm_generate_32(kerasperf: KerasPerf, lm: Any, lm_prompt: Any) -> None:
    kerasperf(lambda: generate(lm, lm_prompt, steps=32))
