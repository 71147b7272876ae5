"""Shared set-up for the project's tests."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def fixed_hash_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner pytest runs measure exact counts, which need PYTHONHASHSEED=0."""
    monkeypatch.setenv("PYTHONHASHSEED", "0")
