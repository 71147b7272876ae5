"""The environment stored with a measurement: Keras's git commit via GitPython."""

from __future__ import annotations

import types
from pathlib import Path

import git

from pytest_kerasperf.environment import keras_git_commit


def fake_keras_checkout(root: Path) -> tuple[git.Repo, types.ModuleType]:
    package = root / "keras"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("__version__ = '3.16.0.dev'\n")
    repo = git.Repo.init(root)
    with repo.config_writer() as config:
        config.set_value("user", "name", "t")
        config.set_value("user", "email", "t@example.invalid")
    repo.index.add(["keras/__init__.py"])
    repo.index.commit("keras")
    module = types.ModuleType("keras")
    module.__file__ = str(package / "__init__.py")
    return repo, module


def test_commit_of_a_keras_checkout(tmp_path: Path) -> None:
    repo, module = fake_keras_checkout(tmp_path / "keras-src")
    assert keras_git_commit(module) == repo.head.commit.hexsha


def test_dirty_checkout_is_marked(tmp_path: Path) -> None:
    repo, module = fake_keras_checkout(tmp_path / "keras-src")
    Path(str(module.__file__)).write_text("__version__ = 'patched'\n")
    assert keras_git_commit(module) == f"{repo.head.commit.hexsha}+dirty"


def test_installed_keras_has_no_commit(tmp_path: Path) -> None:
    package = tmp_path / "site-packages" / "keras"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    module = types.ModuleType("keras")
    module.__file__ = str(package / "__init__.py")
    assert keras_git_commit(module) is None


def test_a_keras_installed_in_a_virtualenv_inside_another_checkout_has_no_commit(
    tmp_path: Path,
) -> None:
    outer = git.Repo.init(tmp_path / "project")
    root = Path(str(outer.working_tree_dir))
    (root / "README.md").write_text("project\n")
    (root / ".gitignore").write_text(".venv/\n")
    with outer.config_writer() as config:
        config.set_value("user", "name", "t")
        config.set_value("user", "email", "t@example.invalid")
    outer.index.add(["README.md", ".gitignore"])
    outer.index.commit("project")
    package = root / ".venv" / "lib" / "python3.11" / "site-packages" / "keras"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    module = types.ModuleType("keras")
    module.__file__ = str(package / "__init__.py")
    assert keras_git_commit(module) is None


def test_a_keras_package_that_the_repository_does_not_track_has_no_commit(tmp_path: Path) -> None:
    repo, module = fake_keras_checkout(tmp_path / "other")
    repo.index.remove(["keras/__init__.py"], working_tree=False)
    repo.index.commit("untrack keras")
    assert keras_git_commit(module) is None
