"""``python -m pytest_kerasperf.schemas``: write the generated JSON schemas."""

from __future__ import annotations

from pytest_kerasperf.schemas import write

for path in write():
    print(path)
