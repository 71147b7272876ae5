"""A Keras repository's first-parent history: listing, PR titles, exporting a commit's tree.

Everything here reads the repository through GitPython and never touches a
work tree: a bare repository (``git clone --mirror``) works as well as a
checkout, and a commit is measured from ``git archive`` of its tree exported
into a temporary directory.
"""

from __future__ import annotations

import io
import re
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import msgspec

if TYPE_CHECKING:
    import git


class HistoryError(Exception):
    """Bad input (not a repository, unknown ref, bad range): one line for the user."""


#: Keras squash-merges each PR into one commit titled "Title (#23183)".
_SQUASH = re.compile(r"^(?P<title>.*?)\s*\(#(?P<pr>\d+)\)\s*$")
#: A true merge commit: "Merge pull request #123 from user/branch", title on the body's first line.
_MERGE = re.compile(r"^Merge pull request #(?P<pr>\d+) from (?P<branch>\S+)")


#: a commit's sha (7 to 40 lowercase hex digits), a PR's number
Sha = Annotated[str, msgspec.Meta(pattern="^[0-9a-f]{7,40}$")]
PrNumber = Annotated[int, msgspec.Meta(gt=0, lt=10**9)]


class Commit(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One first-parent commit: the merge of one PR on the branch swept."""

    sha: Sha
    date: str  # committer date, ISO 8601: when it landed on the branch
    subject: str
    pr: PrNumber | None = None
    title: str = ""

    @property
    def short(self) -> str:
        return self.sha[:10]

    @property
    def day(self) -> str:
        return self.date[:10]

    def label(self) -> str:
        """``#23183`` or the short sha when the commit names no PR."""
        return f"#{self.pr}" if self.pr is not None else self.short


def pr_and_title(message: str) -> tuple[int | None, str]:
    """The PR number and title a commit message names (squash merge or merge commit)."""
    lines = message.strip().splitlines()
    subject = lines[0].strip() if lines else ""
    merge = _MERGE.match(subject)
    if merge:
        body = [line.strip() for line in lines[1:] if line.strip()]
        return int(merge["pr"]), body[0] if body else merge["branch"]
    squash = _SQUASH.match(subject)
    if squash:  # "Vectorize ... (#19512) (#23196)": the last number is the PR
        return int(squash["pr"]), squash["title"]
    return None, subject


def open_repo(path: Path | str) -> git.Repo:
    """The repository at ``path`` (a work tree or a bare repository).

    Every git command is pointed at the repository's git directory
    (``GIT_DIR``): a bare repository whose ``config`` lacks ``core.bare``
    would otherwise be taken for a work tree's and git run in its parent.
    """
    try:
        import git
    except ImportError as error:  # GitPython not installed, or no git executable
        raise HistoryError(
            f"reading a repository needs GitPython and a git executable "
            f"(pip install 'pytest-kerasperf[history]'): {error}"
        ) from None
    try:
        repo = git.Repo(str(path))
    except git.NoSuchPathError:
        raise HistoryError(f"{path}: no such directory") from None
    except git.InvalidGitRepositoryError:
        raise HistoryError(f"{path}: not a git repository") from None
    repo.git.update_environment(GIT_DIR=str(Path(repo.git_dir).resolve()))
    return repo


def resolve(repo: git.Repo, ref: str) -> str:
    """The full sha of the commit ``ref`` names."""
    import git

    try:
        return str(repo.commit(ref).hexsha)
    except (git.BadName, git.BadObject, ValueError, git.GitCommandError):
        raise HistoryError(f"unknown ref {ref!r} in {repo.git_dir}") from None


def split_range(spec: str) -> tuple[str, str]:
    """``A..B`` -> (A, B)."""
    start, sep, end = spec.partition("..")
    if not sep or not start or not end or end.startswith("."):
        raise HistoryError(f"{spec!r}: give the commits as A..B (two refs)")
    return start, end


def describe(commit: git.Commit) -> Commit:
    message = commit.message
    text = message.decode("utf-8", "replace") if isinstance(message, bytes) else str(message)
    pr, title = pr_and_title(text)
    return Commit(
        sha=str(commit.hexsha),
        date=commit.committed_datetime.isoformat(),
        subject=text.strip().splitlines()[0] if text.strip() else "",
        pr=pr,
        title=title,
    )


def first_parent_commits(repo: git.Repo, spec: str) -> list[Commit]:
    """A, then the first-parent commits of A..B, oldest first."""
    start, end = split_range(spec)
    start_sha, end_sha = resolve(repo, start), resolve(repo, end)
    if start_sha != end_sha and not repo.is_ancestor(repo.commit(start_sha), repo.commit(end_sha)):
        raise HistoryError(f"{start} is not an ancestor of {end}")
    listed = list(repo.iter_commits(f"{start_sha}..{end_sha}", first_parent=True))
    listed.reverse()
    if listed and (not listed[0].parents or str(listed[0].parents[0].hexsha) != start_sha):
        raise HistoryError(
            f"{start} is not on the first-parent line of {end}: pick a commit of the branch"
        )
    return [describe(repo.commit(start_sha))] + [describe(c) for c in listed]


def export(repo: git.Repo, sha: str, dest: Path) -> Path:
    """Write the tree of ``sha`` into ``dest``; returns ``dest``.

    Nothing of the repository's work tree or index is read or written: the
    tree comes from the object store (``git archive``).
    """
    import git

    buffer = io.BytesIO()
    try:
        repo.archive(buffer, sha, format="tar")
    except git.GitCommandError as error:
        last = (error.stderr or str(error)).strip().splitlines()
        raise HistoryError(f"cannot export {sha[:10]}: {last[-1] if last else error}") from None
    buffer.seek(0)
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=buffer, mode="r:") as archive:
        archive.extractall(dest, filter="data")
    return dest


def has_keras_package(root: Path) -> bool:
    """Whether ``root`` holds Keras importable from it (``keras/__init__.py``)."""
    return (root / "keras" / "__init__.py").is_file()


def binary_search(last: int, probe: Callable[[int], str]) -> tuple[int, int]:
    """``git bisect`` over positions 0 (good) .. ``last`` (bad): (last good, first bad).

    ``probe(index)`` says "good", "bad" or "skip" (did not run); the next
    index is the open one nearest the middle, so skipped commits are stepped
    around.  Commits between the two returned positions were all skipped.
    """
    low, high = 0, last
    skipped: set[int] = set()
    while True:
        open_ = [i for i in range(low + 1, high) if i not in skipped]
        if not open_:
            return low, high
        middle = (low + high) // 2
        index = min(open_, key=lambda i: (abs(i - middle), i))
        outcome = probe(index)
        if outcome == "skip":
            skipped.add(index)
        elif outcome == "good":
            low = index
        else:
            high = index


def commit_installed_keras(dest: Path) -> Path:
    """The Keras this environment imports, copied to ``dest/keras`` (no bytecode) and committed
    as the one commit of a new repository at ``dest``, as a Keras clone: what
    ``--kerasperf-changed`` diffs against.  Returns ``dest``."""
    import importlib.util
    import shutil

    import git

    spec = importlib.util.find_spec("keras")
    if spec is None or spec.origin is None:
        raise HistoryError("Keras is not installed in this environment")
    shutil.copytree(
        Path(spec.origin).parent, dest / "keras", ignore=shutil.ignore_patterns("__pycache__")
    )
    repo = git.Repo.init(dest)
    with repo.config_writer() as config:
        config.set_value("user", "name", "kerasperf")
        config.set_value("user", "email", "kerasperf@localhost")
    repo.git.add("-A")
    repo.git.commit("-qm", "base")
    return dest
