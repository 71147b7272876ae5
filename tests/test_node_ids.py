"""A perf test whose module pytest collects outside the rootdir keeps its file in its key.

pytest 9 gives such a test the node id ``::test_work`` (an editable install's census collected
with ``--pyargs`` from a Keras checkout is one): the gate keyed it ``::test_work``, a key its own
results reader refuses, and ``--kerasperf-isolate`` and ``-n`` stopped with an internal error.
"""

from __future__ import annotations

import pytest

from tests.inner import KEY, Inner, workload_source


@pytest.mark.parametrize("isolate", [False, True])
def test_a_module_outside_the_rootdir_is_keyed_by_its_file_name(
    inner: Inner, isolate: bool
) -> None:
    module = inner.write(workload_source())
    rootdir = inner.pytester.path / "project"
    rootdir.mkdir()
    done = inner.run(
        f"--rootdir={rootdir}",
        "--kerasperf",
        "--kerasperf-json",
        str(inner.pytester.path / "out.json"),
        *(["--kerasperf-isolate"] if isolate else []),
        str(module),
        fresh=True,
    )
    assert done.ret == pytest.ExitCode.OK, done.stdout.str()[-3000:]
    [result] = inner.results()
    assert result["key"] == KEY
    assert result["nodeid"] == KEY
