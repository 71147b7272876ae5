"""Performance tests of the two models of keras-team/keras#22561.

Each test measures one call of a workload, as the issue's benchmark script
calls it: the CNN's forward, the transformer LM's forward and a 32-step greedy
generate with the LM. What is measured and gated (pytest-kerasperf):

- the exact number of Python calls per workload call (cProfile), per
  function and per caller -> callee edge;
- torch.compile graph breaks, with each break's reason and Keras function;
- recompiles after warm-up (torch dynamo, `jax.jit`, `tf.function`);
- the median latency, gated on an accelerator only.

Each test runs once eager and once compiled (`torch.compile`, `jax.jit`,
`tf.function`; numpy and openvino have the eager mode only), against the
baselines under `benchmarks/kerasperf/baselines/`. Run them in the pinned
environment (`requirements-kerasperf.txt`):

    PYTHONHASHSEED=0 KERAS_HOME=.github/workflows/config/torch \
        pytest keras/src/models/model_perf_test.py --kerasperf

and record a change with `--kerasperf-update-baseline`. Without pytest-kerasperf
installed (Keras's regular test jobs) this module is skipped.
"""

import pytest

pytest_kerasperf = pytest.importorskip(
    "pytest_kerasperf",
    reason="the perf tests need pytest-kerasperf "
    "(pip install -r requirements-kerasperf.txt)",
)

# A compiled forward must not compile again once warmed up.
pytestmark = pytest.mark.max_recompiles(0, mode="compiled")


# 0 before #23111: `id(x) != structure_id` in keras/src/tree/torchtree_impl.py
# breaks the graph (dynamo cannot compare compile-time ids).
@pytest.mark.max_graph_breaks(9, backend="torch", mode="compiled")
def test_cnn_forward(kerasperf, kerasperf_cnn, kerasperf_cnn_input):
    kerasperf(kerasperf_cnn, kerasperf_cnn_input)


@pytest.mark.max_graph_breaks(11, backend="torch", mode="compiled")
def test_lm_forward(kerasperf, kerasperf_lm, kerasperf_lm_prompt):
    kerasperf(kerasperf_lm, kerasperf_lm_prompt)


@pytest.mark.max_graph_breaks(11, backend="torch", mode="compiled")
def test_lm_generate_32(kerasperf, kerasperf_lm, kerasperf_lm_prompt):
    kerasperf(
        lambda ids: pytest_kerasperf.generate(kerasperf_lm, ids, steps=32),
        kerasperf_lm_prompt,
    )
