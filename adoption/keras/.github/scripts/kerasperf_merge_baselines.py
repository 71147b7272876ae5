"""Merge the baselines re-recorded by several jobs over the checkout's ones.

usage: kerasperf_merge_baselines.py BASELINES_DIR ARTIFACT_DIR...

Each ARTIFACT_DIR is a whole copy of BASELINES_DIR
(benchmarks/kerasperf/baselines/) after one job of kerasperf-rebaseline.yml
re-recorded one variant (<backend>/<variant>/) from the same commit as
BASELINES_DIR. Against BASELINES_DIR, an artifact's differences are its own
job's: a new or changed file is copied in; a file it lacks is deleted, but
only in a directory the artifact still has (an artifact missing a whole
directory deletes nothing there). Hidden files (not uploaded by
actions/upload-artifact) are left alone. Two artifacts changing one file
differently is an error (exit 1), and nothing is written then.

Prints one line per changed file: `A path`, `M path` or `D path`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from pathlib import PurePosixPath


def _files(root: Path) -> dict[PurePosixPath, Path]:
    """The regular, non-hidden files under root, by relative path."""
    found: dict[PurePosixPath, Path] = {}
    for path in sorted(root.rglob("*")):
        relative = PurePosixPath(path.relative_to(root).as_posix())
        if any(part.startswith(".") for part in relative.parts):
            continue
        if path.is_file() and not path.is_symlink():
            found[relative] = path
    return found


def plan(
    base: Path, artifacts: list[Path]
) -> tuple[dict[PurePosixPath, bytes | None], list[str]]:
    """The changes (path → new bytes, None to delete) and the conflicts."""
    base_files = _files(base)
    changes: dict[PurePosixPath, bytes | None] = {}
    origin: dict[PurePosixPath, Path] = {}
    conflicts: list[str] = []

    def record(
        path: PurePosixPath, content: bytes | None, artifact: Path
    ) -> None:
        if path in changes and changes[path] != content:
            conflicts.append(
                f"{path}: changed differently by {origin[path]} and {artifact}"
            )
            return
        changes[path] = content
        origin[path] = artifact

    for artifact in artifacts:
        files = _files(artifact)
        directories = {parent for path in files for parent in path.parents}
        for path, source in files.items():
            content = source.read_bytes()
            if (
                path not in base_files
                or base_files[path].read_bytes() != content
            ):
                record(path, content, artifact)
        for path in base_files:
            if path not in files and path.parent in directories:
                record(path, None, artifact)
    return changes, conflicts


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    base = Path(argv[0])
    artifacts = [Path(a) for a in argv[1:] if Path(a).is_dir()]
    changes, conflicts = plan(base, artifacts)
    if conflicts:
        for line in conflicts:
            print(f"conflict: {line}", file=sys.stderr)
        return 1
    for path, content in sorted(changes.items()):
        target = base.joinpath(*path.parts)
        if content is None:
            target.unlink()
            print(f"D {path}")
            continue
        existed = target.exists()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        print(f"{'M' if existed else 'A'} {path}")
    if not changes:
        print("no baseline changed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
