"""The issue #22561 workloads, as the issue's script calls them (docs/models.md).

``kerasperf_cnn`` and ``kerasperf_lm`` are the script's one-argument forwards
for the mode; each test measures what the script's ``bench(fn, *a)`` times:
``fn(*a)``.  Each names its plain-framework twin (the script's plain torch /
plain JAX version, measured with ``--kerasperf-plain``).  The train steps are one
optimizer step on one batch, as a user runs it (``model.compile(...)`` then
``train_on_batch``; the script does not train): they skip where Keras cannot
train (numpy, openvino).
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


def test_cnn_train_step(
    kerasperf: KerasPerf,
    kerasperf_cnn_train_step: Any,
    kerasperf_cnn_input: Any,
    kerasperf_cnn_labels: Any,
) -> None:
    kerasperf(kerasperf_cnn_train_step, kerasperf_cnn_input, kerasperf_cnn_labels)


def test_lm_train_step(
    kerasperf: KerasPerf,
    kerasperf_lm_train_step: Any,
    kerasperf_lm_prompt: Any,
    kerasperf_lm_targets: Any,
) -> None:
    kerasperf(kerasperf_lm_train_step, kerasperf_lm_prompt, kerasperf_lm_targets)
