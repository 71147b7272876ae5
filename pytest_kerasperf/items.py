"""What makes a collected test a perf test, and the budgets its markers ask for."""

from __future__ import annotations

import pytest

from pytest_kerasperf import markers
from pytest_kerasperf.budget import PERF_MARKER, Budget, MarkerError


def node_id(item: pytest.Item) -> str:
    """The item's node id as the gate keys it: pytest's, with the module's file name in front
    where pytest gives none (pytest 9 names a test of a module outside the rootdir, as a
    ``--pyargs`` run of an editable install from another directory collects it, ``::test``)."""
    nodeid = item.nodeid
    return f"{item.path.name}{nodeid}" if nodeid.startswith("::") else nodeid


def item_key(item: pytest.Item) -> str:
    """The item's baseline key (``record.test_key`` of ``node_id``)."""
    from pytest_kerasperf.record import test_key

    return test_key(node_id(item))


def is_perf_test(item: pytest.Item) -> bool:
    """A test that uses the ``kerasperf`` fixture or carries a budget or ``kerasperf`` marker."""
    names = getattr(item, "fixturenames", ())
    return (
        "kerasperf" in names
        or item.get_closest_marker(PERF_MARKER) is not None
        or any(item.get_closest_marker(name) for name in markers.MARKER_NAMES)
    )


#: An item's budgets, parsed once (at collection) and read by the handle and the gate.
_BUDGETS = pytest.StashKey[tuple[Budget, ...]]()


def budgets(item: pytest.Item) -> list[Budget]:
    """The item's budget markers; a wrong argument, or a marker not registered whose name is
    close to one of ours (a typo that would gate nothing), is a usage error naming the test.
    Parsed once per item (kept in its stash)."""
    parsed = item.stash.get(_BUDGETS, None)
    if parsed is None:
        parsed = item.stash[_BUDGETS] = tuple(_parse_budgets(item))
    return list(parsed)


def _parse_budgets(item: pytest.Item) -> list[Budget]:
    _check_marker_names(item)
    found = []
    for name in markers.MARKER_NAMES:
        for mark in item.iter_markers(name):
            try:
                found.append(markers.budget_from_mark(name, mark.args, dict(mark.kwargs)))
            except MarkerError as error:
                args = ", ".join(
                    [repr(a) for a in mark.args] + [f"{k}={v!r}" for k, v in mark.kwargs.items()]
                )
                raise pytest.UsageError(
                    f"{item.nodeid}: bad marker @pytest.mark.{name}({args}): {error}"
                ) from None
    return found


def _check_marker_names(item: pytest.Item) -> None:
    registered = {
        line.split(":")[0].split("(")[0].strip() for line in item.config.getini("markers")
    }
    for mark in item.iter_markers():
        if mark.name in registered:
            continue
        close = markers.close_marker(mark.name)
        if close is not None:
            raise pytest.UsageError(
                f"{item.nodeid}: unknown marker @pytest.mark.{mark.name}: "
                f"did you mean @pytest.mark.{close}?"
            )


def declared_mode(item: pytest.Item) -> str | None:
    """``@pytest.mark.kerasperf(mode="compiled")``: the mode a test without a
    ``kerasperf_mode`` parameter records (a unittest-style test); usage error if bad."""
    mark = item.get_closest_marker(PERF_MARKER)
    if mark is None:
        return None
    try:
        return markers.perf_mode(*mark.args, **mark.kwargs)
    except (MarkerError, TypeError) as error:
        hint = markers.keyword_hint(error, markers.perf_mode)
        raise pytest.UsageError(
            f"{item.nodeid}: bad marker @pytest.mark.kerasperf: {error}{hint}"
        ) from None
