"""``python -m pytest_kerasperf``: the ``kerasperf`` command."""

from __future__ import annotations

import sys

from pytest_kerasperf.cli import main

sys.exit(main())
