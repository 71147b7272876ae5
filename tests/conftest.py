"""Shared set-up for the project's tests."""

from __future__ import annotations

import pytest

from tests.inner import Inner, make_inner


@pytest.fixture(autouse=True)
def fixed_hash_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner pytest runs measure exact counts, which need PYTHONHASHSEED=0."""
    monkeypatch.setenv("PYTHONHASHSEED", "0")


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Inner:
    """An isolated project on the numpy backend with its own baseline directory."""
    return make_inner(pytester, monkeypatch)
