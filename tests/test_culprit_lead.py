"""The culprit line leads with the caller whose own calls changed, wherever it lives.

A contributor adds one op call to their own layer, in a package of their own: the new calls are
made by their code (outside Keras), and the Keras functions it calls are called more often and
so make more calls themselves.  Before, ``made by`` led with the biggest of those consequences
(numpy's ``convert_to_tensor``) and named the contributor's code sixth; now the calls made
outside Keras lead, because no Keras function called as often as before changed its own calls.
"""

from __future__ import annotations

import pytest

from pytest_kerasperf.explain import OUTSIDE
from tests.inner import Inner

LAYER = """
import keras


class Scale(keras.layers.Layer):
    def call(self, x):
        y = x * 2.0
{planted}        return y
"""

TEST = """
import numpy as np

from mylib.blocks import Scale


def test_scale(kerasperf):
    layer = Scale()
    x = np.ones((2, 3), "float32")
    layer(x)
    kerasperf(layer, x)
"""


def write_layer(inner: Inner, *, planted: bool) -> None:
    package = inner.pytester.path / "mylib"
    package.mkdir(exist_ok=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    extra = "        y = keras.ops.add(y, keras.ops.convert_to_tensor(1.0))\n" if planted else ""
    (package / "blocks.py").write_text(LAYER.format(planted=extra), encoding="utf-8")


def test_a_call_added_in_the_contributors_own_package_leads_the_culprit_line(
    inner: Inner,
) -> None:
    inner.write(TEST)
    write_layer(inner, planted=False)
    recorded = inner.run("--kerasperf-update-baseline", "--kerasperf-rounds", "0", fresh=True)
    assert recorded.ret == pytest.ExitCode.OK, recorded.stdout.str()[-2000:]

    write_layer(inner, planted=True)
    gated = inner.run(
        "--kerasperf", "--kerasperf-rounds", "0", "--kerasperf-json", "out.json", fresh=True
    )
    assert gated.ret == pytest.ExitCode.TESTS_FAILED, gated.stdout.str()[-2000:]
    [result] = inner.results()
    [calls] = [c for c in result["verdict"]["changes"] if c["metric"] == "calls"]
    groups = calls["explanation"]["groups"]
    assert groups[0]["caller"] == OUTSIDE, groups
    # The consequences follow: Keras functions called more often, so making more calls.
    assert any(g["caller"].startswith("keras/src/") for g in groups[1:]), groups
    [line] = [f["text"] for f in result["verdict"]["failures"] if f["kind"] == "calls"]
    made_by = line.split("made by (sums to ", 1)[1]
    assert made_by.split("): ", 1)[1].startswith(f"{OUTSIDE} +"), line
    # ... and names the contributor's function that makes them.
    assert groups[0]["callers"] == ["mylib/blocks.py:Scale.call"], groups[0]
    assert "(from mylib/blocks.py:Scale.call)" in line, line
