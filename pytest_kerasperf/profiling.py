"""A failing (or, with ``--kerasperf-profile``, every) perf test's workload profiled again
with pyinstrument, in the process that measured it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from pytest_kerasperf.items import item_key

if TYPE_CHECKING:
    from pytest_kerasperf.handle import Workload
    from pytest_kerasperf.measure.profile import WorkloadProfile
    from pytest_kerasperf.options import Options
    from pytest_kerasperf.record import Record


def take_profile(
    item: pytest.Item,
    options: Options,
    backend: str,
    record: Record,
    workload: Workload | None,
) -> tuple[WorkloadProfile | None, str]:
    """The test's workload run again under pyinstrument, or None and why not.

    Taken in the process that measured (an xdist worker included): the
    profile's text and path travel on the report like the result.
    """
    if workload is None:
        return None, "the measured workload was not kept"
    from pytest_kerasperf.measure.profile import html_name, profile_workload

    key = item_key(item)
    path = options.profile_dir / html_name(key, backend, record.mode)
    try:
        profile = profile_workload(
            workload.call,
            workload.sync,
            path,
            description=f"kerasperf profile of {key} ({backend}, {record.mode})",
        )
    except Exception as error:  # a profile must never turn a verdict into a crash
        return None, f"{type(error).__name__}: {error}"
    return profile, ""
