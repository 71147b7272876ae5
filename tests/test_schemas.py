"""The committed JSON schemas are the ones the files' types make (nothing written by hand)."""

from __future__ import annotations

import pytest

from pytest_kerasperf import schemas


@pytest.mark.parametrize("name", sorted(schemas.generated()))
def test_the_committed_schema_is_the_generated_one(name: str) -> None:
    committed = (schemas.DIRECTORY / name).read_text(encoding="utf-8")
    assert committed == schemas.text(schemas.generated()[name]), (
        f"{name} is not what its type makes: run `python -m pytest_kerasperf.schemas`"
    )
