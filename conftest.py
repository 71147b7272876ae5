"""Repository-level pytest configuration.

The project's own tests drive pytest with pytester; the plugin itself is
loaded through its pytest11 entry point.
"""

from __future__ import annotations

pytest_plugins = ("pytester",)
