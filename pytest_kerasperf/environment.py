"""Where a measurement was taken: Python, Keras (and its git commit), frameworks, device."""

from __future__ import annotations

import os
import platform
from typing import Any

from pytest_kerasperf import backends


def keras_git_commit(keras_module: Any) -> str | None:
    """The commit of the Keras checkout ``keras_module`` was imported from, if any.

    A dirty work tree is marked ``<sha>+dirty`` so a baseline never claims a
    clean commit it was not measured on.
    """
    try:
        import git
    except ImportError:  # GitPython is a dependency; tolerate a broken install
        return None
    package_dir = os.path.dirname(os.path.abspath(keras_module.__file__))
    try:
        repo = git.Repo(package_dir, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None
    try:
        root = os.path.abspath(str(repo.working_tree_dir))
        if os.path.commonpath([root, package_dir]) != root:
            return None
        sha = str(repo.head.commit.hexsha)
        return f"{sha}+dirty" if repo.is_dirty(path=package_dir) else sha
    except (ValueError, git.GitError):
        return None


def capture(backend: str) -> dict[str, str | None]:
    """The environment fields stored with every measurement."""
    keras = backends.import_keras()
    device, accelerator = backends.device(backend)
    env: dict[str, str | None] = {
        "python": platform.python_version(),
        "platform": f"{platform.system()}-{platform.machine()}",
        "backend": backend,
        "keras_commit": keras_git_commit(keras),
        "device": device,
        "accelerator": "yes" if accelerator else "no",
    }
    env.update(backends.framework_versions())
    env["keras"] = str(getattr(keras, "__version__", env.get("keras")))
    return env
