"""A pull request's before and after commits, from a Keras repository's refs.

``kerasperf prs`` measures a PR **merged** on the target branch's first-parent line on its merge
and that commit's first parent, otherwise its **head** (``refs/pull/N/head``) and its merge base
with the target.  A head can hold more than its PR (stacked branches): ``contains`` names the
other PRs sharing commits with its range without holding all of it, ``merged_branches`` the
branches merged into it (docs/history.md, "Per PR").  Read through GitPython, bare or not;
nothing is checked out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Annotated, Literal

import msgspec

from pytest_kerasperf.ab.commits import (
    Commit,
    HistoryError,
    PrNumber,
    describe,
    pr_and_title,
)

if TYPE_CHECKING:
    import git

How = Literal["merged", "head"]
Day = Annotated[str, msgspec.Meta(pattern=r"^\d{4}-\d{2}-\d{2}$")]
#: "Merge branch 'perf-P3-global-state' into perf-P4-convert-to-tensor",
#: "Merge remote-tracking branch 'origin/perf-x' into y"
_MERGED_BRANCH = re.compile(r"^Merge (?:remote-tracking )?branch(?:es)? '(?P<branch>[^']+)'")
#: branches that are the target itself, merged back into a PR branch
_TARGET_NAMES = re.compile(r"(^|[/:])(master|main)$")


class Contained(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Another PR whose commits this PR's range holds (``commits`` of them)."""

    pr: PrNumber
    commits: int


class PullPair(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What ``kerasperf prs`` measures for one PR: ``before`` and ``after``."""

    pr: PrNumber
    title: str
    how: How
    before: Commit
    after: Commit
    merged: Day | None = None  # the day the PR landed on the target branch
    commits: int = 1  # commits in before..after
    contains: tuple[Contained, ...] = ()
    merged_branches: tuple[str, ...] = ()

    def describe(self) -> str:
        if self.how == "merged":
            where = (
                f"merged {self.merged}: {self.after.short} vs its first parent {self.before.short}"
            )
        else:
            where = (
                f"not merged: head {self.after.short} vs its merge base {self.before.short} "
                f"({self.before.day}), {self.commits} commits"
            )
        return f"#{self.pr} {self.title} ({where})"

    def also_line(self, branch: Callable[[str], str] = str) -> str:
        """The other work the head holds (``branch``: how a branch's name is shown), or ``""``."""
        parts = []
        if self.contains:
            parts.append(
                "shares commits with " + ", ".join(f"#{c.pr} ({c.commits})" for c in self.contains)
            )
        if self.merged_branches:
            parts.append("merges branch " + ", ".join(map(branch, self.merged_branches)))
        return "; ".join(parts)


def _commit(repo: git.Repo, sha: str) -> Commit:
    return describe(repo.commit(sha))


class Pulls:
    """Resolves PR numbers in one repository (the first-parent index is read once)."""

    def __init__(self, repo: git.Repo, target: str = "master") -> None:
        self.repo = repo
        self.target = target
        try:
            self.target_sha = repo.commit(target).hexsha
        except Exception:  # GitPython raises several types for a bad ref
            raise HistoryError(f"{target}: no such branch in {repo.git_dir}") from None
        self._ranges: dict[int, dict[str, str]] = {}

    @cached_property
    def merges(self) -> dict[int, str]:
        """PR number -> its merge commit on the target's first-parent line."""
        found: dict[int, str] = {}
        log = self.repo.git.log("--first-parent", "--format=%H%x00%B%x01", self.target_sha)
        for entry in log.split("\x01"):
            sha, _, message = entry.strip().partition("\x00")
            pr, _ = pr_and_title(message)
            if sha and pr is not None and pr not in found:
                found[pr] = sha
        return found

    def head(self, pr: int) -> str | None:
        try:
            return str(
                self.repo.git.rev_parse("--verify", "--quiet", f"refs/pull/{pr}/head^{{commit}}")
            )
        except Exception:  # GitCommandError: no such ref
            return None

    def resolve(self, pr: int, listed: Sequence[int] = ()) -> PullPair:
        merge = self.merges.get(pr)
        if merge is not None:
            after = _commit(self.repo, merge)
            parent = self.repo.commit(merge).parents[0].hexsha
            return PullPair(
                pr=pr,
                title=after.title,
                how="merged",
                before=_commit(self.repo, parent),
                after=after,
                merged=after.day,
            )
        head = self.head(pr)
        if head is None:
            raise HistoryError(
                f"#{pr}: not merged on {self.target}'s first-parent line and no "
                f"refs/pull/{pr}/head in {self.repo.git_dir} "
                f"(git fetch origin pull/{pr}/head:refs/pull/{pr}/head)"
            )
        base = self._base(head)
        if base is None:
            raise HistoryError(f"#{pr}: its head {head[:10]} shares no history with {self.target}")
        own = self._range(base, head)
        contains = self._contained(pr, base, own, listed)
        return PullPair(
            pr=pr,
            title=self._title(own, base, head, contains),
            how="head",
            before=_commit(self.repo, base),
            after=_commit(self.repo, head),
            commits=len(own),
            contains=contains,
            merged_branches=self._merged_branches(base, head),
        )

    def _base(self, head: str) -> str | None:
        bases = self.repo.merge_base(head, self.target_sha)
        return bases[0].hexsha if bases else None

    def _range(self, base: str, head: str) -> dict[str, str]:
        """sha -> subject of the non-merge commits in ``base..head``, oldest first."""
        log = self.repo.git.log("--reverse", "--no-merges", "--format=%H %s", f"{base}..{head}")
        return {
            sha: subject for sha, _, subject in (line.partition(" ") for line in log.splitlines())
        }

    def _subjects_of(self, pr: int) -> set[str]:
        """The subjects of another PR's own commits (its head's range), or none."""
        if pr not in self._ranges:
            head = self.head(pr)
            base = self._base(head) if head else None
            self._ranges[pr] = self._range(base, head) if head and base else {}
        return set(self._ranges[pr].values())

    @cached_property
    def _heads(self) -> list[tuple[int, str]]:
        """Every ``refs/pull/*/head`` ref, with its commit's time (unix)."""
        listing = self.repo.git.for_each_ref(
            "--format=%(committerdate:unix) %(refname)", "refs/pull/*/head"
        )
        return [
            (int(when), ref)
            for when, _, ref in (line.partition(" ") for line in listing.splitlines())
        ]

    def _contained(
        self, pr: int, base: str, own: dict[str, str], listed: Sequence[int]
    ) -> tuple[Contained, ...]:
        """Other PRs sharing commits with ``own`` without holding all of them.

        A commit is known by its subject, so a branch rebased onto another
        (new shas, the same commits) is seen too.  Looked at: the other PRs
        ``listed``, and the PR heads, no older than the merge base, that
        contain one of ``own``'s commits.
        """
        if not own:
            return ()
        candidates = set(listed)
        since = self.repo.commit(base).committed_date
        recent = [ref for when, ref in self._heads if when >= since]
        if recent:
            args = [f"--contains={sha}" for sha in own]  # any of them
            for ref in self.repo.git.for_each_ref("--format=%(refname)", *args, *recent).split():
                match = re.fullmatch(r"refs/pull/(\d+)/head", ref)
                if match is not None:
                    candidates.add(int(match[1]))
        mine = set(own.values())
        theirs = {other: self._subjects_of(other) for other in sorted(candidates - {pr})}
        return tuple(
            Contained(other, len(mine & subjects))
            for other, subjects in theirs.items()
            if mine & subjects and not mine <= subjects
        )

    def _title(
        self, own: dict[str, str], base: str, head: str, contains: Sequence[Contained]
    ) -> str:
        """The subject of the range's first commit that no contained PR holds (git has no
        PR titles)."""
        others: set[str] = set()
        for contained in contains:
            others |= self._subjects_of(contained.pr)
        subjects = list(own.values())
        mine = [s for s in subjects if s not in others] or subjects
        return mine[0] if mine else str(self.repo.commit(head).summary)

    def _merged_branches(self, base: str, head: str) -> tuple[str, ...]:
        subjects = self.repo.git.log("--merges", "--format=%s", f"{base}..{head}").splitlines()
        names = {match["branch"] for s in subjects if (match := _MERGED_BRANCH.match(s))}
        return tuple(sorted(name for name in names if not _TARGET_NAMES.search(name)))


def resolve_all(repo: git.Repo, prs: Sequence[int], target: str = "master") -> list[PullPair]:
    """Each PR's pair, in the order given; an unknown PR is an error naming it."""
    pulls = Pulls(repo, target)
    listed = list(dict.fromkeys(prs))
    return [pulls.resolve(pr, listed) for pr in listed]
