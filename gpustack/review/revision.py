"""Reading a blueprint (and the workload templates it names) as it was at a git revision.

git runs as a subprocess with an argument list, never through a shell, in the blueprint's own repository,
so `--base origin/main` works from any working directory.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

GIT_TIMEOUT_S = 60


class RevisionError(Exception):
    """git could not give the old version: not a repository, an unknown revision, git missing."""


class TooLarge(ValueError):
    """A blob at the revision is larger than the caller reads."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"{size} bytes at the revision, over the {limit}-byte cap")
        self.size = size
        self.limit = limit


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=False, timeout=GIT_TIMEOUT_S)
    except FileNotFoundError as error:
        raise RevisionError("git is not installed (needed for --base)") from error
    except subprocess.TimeoutExpired as error:
        raise RevisionError(f"git {args[0]} did not finish within {GIT_TIMEOUT_S}s") from error


def _stderr(result: subprocess.CompletedProcess[bytes]) -> str:
    return result.stderr.decode("utf-8", errors="replace").strip()


@dataclass(frozen=True)
class Revision:
    """One commit of the repository that holds a blueprint."""

    root: Path
    name: str  # as the user wrote it: origin/main, v1.2, a sha
    commit: str

    def read(self, path: str, limit: int | None = None) -> bytes | None:
        """A file's bytes at this commit (path relative to the repository root); None if it was not there.

        A blob larger than `limit` is refused (TooLarge) before any of it is read: git would hand over all of it.
        """
        spec = f"{self.commit}:{path}"
        kind = _git(self.root, "cat-file", "-t", spec)
        if kind.returncode != 0 or kind.stdout.strip() != b"blob":
            return None
        if limit is not None:
            size = _git(self.root, "cat-file", "-s", spec)
            if size.returncode != 0 or not size.stdout.strip().isdigit():
                raise RevisionError(f"cannot read {path} at {self.name}: {_stderr(size)}")
            if int(size.stdout) > limit:
                raise TooLarge(int(size.stdout), limit)
        shown = _git(self.root, "cat-file", "blob", spec)
        if shown.returncode != 0:
            raise RevisionError(f"cannot read {path} at {self.name}: {_stderr(shown)}")
        return shown.stdout

    def is_link(self, path: str) -> bool:
        """Whether `path` is a symlink at this commit: its blob is the link's target, not a file's text."""
        listed = _git(self.root, "ls-tree", "-z", self.commit, "--", path)
        return listed.returncode == 0 and listed.stdout.startswith(b"120000 ")


def renamed_from(revision: Revision, path: str) -> str | None:
    """The path `path` had at this revision, when git sees the working tree's file as a rename of it."""
    found = _git(revision.root, "diff", "--find-renames", "--name-status", "-z", "--end-of-options", revision.commit)
    if found.returncode != 0:
        return None
    fields = found.stdout.decode("utf-8", errors="surrogateescape").split("\0")
    index = 0
    while index < len(fields) - 1:
        status = fields[index]
        if status.startswith(("R", "C")) and index + 2 < len(fields):
            old, new = fields[index + 1], fields[index + 2]
            if new == path and status.startswith("R"):
                return old
            index += 3
        else:
            index += 2
    return None


def open_revision(blueprint: str, name: str) -> tuple[Revision, str]:
    """The revision `name` of the repository holding `blueprint`, and the blueprint's path inside it."""
    if not name or name.startswith("-"):
        raise RevisionError(f"'{name}' is not a revision")
    file = Path(blueprint).resolve()
    if not file.parent.is_dir():
        raise RevisionError(f"{blueprint}: no such directory")
    top = _git(file.parent, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise RevisionError(f"{blueprint} is not inside a git repository: {_stderr(top)}")
    root = Path(top.stdout.decode("utf-8", errors="surrogateescape").strip()).resolve()
    try:
        relative = file.relative_to(root).as_posix()
    except ValueError as error:
        raise RevisionError(f"{blueprint} is outside the repository at {root}") from error
    commit = _git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{name}^{{commit}}")
    if commit.returncode != 0:
        raise RevisionError(f"unknown revision '{name}' in {root} (fetch it first, e.g. git fetch origin)")
    return Revision(root, name, commit.stdout.decode().strip()), relative
