"""The suite's train steps: one optimizer step on one batch, as a user runs it.

``model.compile(optimizer=Adam, loss=SparseCategoricalCrossentropy(from_logits=True),
jit_compile=...)`` then ``train_on_batch(x, y)`` (``workloads.compile_for_training``,
docs/models.md).  Their counts are gated like the forwards' (``tests/test_suite_gate.py``
runs them against the committed baselines); here: a call planted in the optimizer's
``apply`` fails the test and is named, and a train step's counts do not depend on what
else ran in the process before it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kerasperf.baseline import Baselines
from tests import readresult
from tests.inner import VARIANT
from tests.realrun import BASELINES, require_backend
from tests.test_keras_regression import copy_keras, gate, patch, snapshot

APPLY = "keras/src/optimizers/base_optimizer.py:BaseOptimizer.apply"
PLANTED = "keras/src/optimizers/base_optimizer.py:_kerasperf_planted_check"
CNN_STEP = "test_standard.py::test_cnn_train_step[eager]"


def plant_apply_check(keras_root: Path) -> None:
    """One extra call per optimizer step: ``_kerasperf_planted_check(self)`` in
    ``BaseOptimizer.apply``, which every Keras optimizer's step goes through."""
    path = keras_root / "keras" / "src" / "optimizers" / "base_optimizer.py"
    patch(
        path,
        "    def apply(self, grads, trainable_variables=None):\n",
        "        _kerasperf_planted_check(self)\n",
    )
    path.write_text(
        path.read_text() + "\n\ndef _kerasperf_planted_check(optimizer):\n    return optimizer\n"
    )


def test_an_extra_call_in_the_optimizers_apply_fails_the_train_step_and_is_named(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    require_backend("torch")
    before = snapshot(BASELINES / "torch")
    base = Baselines(BASELINES, "torch", VARIANT).load()[CNN_STEP]
    clean = copy_keras(tmp_path / "clean")
    planted = copy_keras(tmp_path / "planted")
    plant_apply_check(planted)
    select = "cnn_train_step and eager"

    result, results = gate(pytester, monkeypatch, "torch", clean, select)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    assert [r["verdict"]["status"] for r in results] == ["pass"]  # type: ignore[index]

    result, results = gate(pytester, monkeypatch, "torch", planted, select)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-3000:]
    calls, made = base.profile().functions[APPLY]
    assert calls == 1  # one optimizer step per train step
    line = (
        f"kerasperf calls: {base.calls + 1:,} per call, baseline {base.calls:,} (+1); "
        f"made by (sums to +1): {APPLY} +1 (calls it makes {made:,}→{made + 1:,}); "
        f"grew: {PLANTED} (+1)"
    )
    assert sum(text == line for text in result.stdout.lines) == 1, result.stdout.str()[-3000:]
    (only,) = results
    assert only["verdict"]["status"] == "regressed"  # type: ignore[index]
    assert readresult.calls_delta(only) == 1
    assert snapshot(BASELINES / "torch") == before


@pytest.mark.parametrize(
    ("backend", "select"),
    [("jax", "train_step"), ("torch", "lm_train_step or (cnn_forward and compiled)")],
)
def test_counts_do_not_depend_on_what_ran_before(
    backend: str, select: str, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The committed entries were recorded by the whole suite in one process; a selection run
    alone (another history: no forward before the jax train steps, no eager train step before
    the torch compiled forward) gives the same counts, function for function."""
    require_backend(backend)
    committed = Baselines(BASELINES, backend, VARIANT).load()
    result, results = gate(pytester, monkeypatch, backend, None, select)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    assert results, result.stdout.str()[-3000:]
    for r in results:
        assert r["verdict"]["status"] == "pass", r["verdict"]  # type: ignore[index]
        assert r["record"]["calls"] == committed[str(r["key"])].calls  # type: ignore[index]


#: keras-team/keras#23234 (merged after Keras 3.15.1): torch's train function became a Python
#: loop over the batches it is given, around ``torch.compile(train_step)``; its code as merged
ONE_COMPILED_STEP = '''        def one_step_on_data(data):
            """Runs a single training step on a batch of data."""
            data = data[0]
            return self.train_step(data)

        if self._should_torch_compile():
            self.train_function = torch.compile(one_step_on_data)
        else:
            self.train_function = one_step_on_data
'''
LOOP_AROUND_A_COMPILED_STEP = '''        train_step = self.train_step
        if self._should_torch_compile():
            train_step = torch.compile(train_step)

        def train_function(data):
            """Runs training steps on a list of batches of data."""
            logs = {}
            for step_data in data:
                logs = train_step(step_data)
            return logs

        self.train_function = train_function
'''


def test_a_compiled_train_step_is_explained_where_the_train_function_loops_over_batches(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Keras's newer torch train function keeps torch.compile's function in its closure: the
    suite finds it there, and explain counts the graph breaks of the same step as on Keras
    3.15.1 (where they are committed), with no error."""
    require_backend("torch")
    looped = copy_keras(tmp_path / "looped")
    trainer = looped / "keras" / "src" / "backend" / "torch" / "trainer.py"
    text = trainer.read_text()
    assert text.count(ONE_COMPILED_STEP) == 1, "Keras's torch train function changed"
    trainer.write_text(text.replace(ONE_COMPILED_STEP, LOOP_AROUND_A_COMPILED_STEP))
    committed = Baselines(BASELINES, "torch", VARIANT).load()
    result, results = gate(pytester, monkeypatch, "torch", looped, "cnn_train_step and compiled")
    (only,) = results
    assert only["record"] is not None, result.stdout.str()[-3000:]
    expected = committed[str(only["key"])].graph_breaks
    assert expected is not None
    assert expected.breaks > 0
    assert readresult.graph_breaks(only) == expected.breaks, result.stdout.str()[-3000:]
