"""The commits of a user's repository, read only (rev-parse, rev-list, show, merge-base):
what `iolab bisect` bisects and `iolab ab --kernel-repo` builds.  Every git call is an
argument list."""

from __future__ import annotations

import subprocess
from pathlib import Path

from iolab.errors import IolabError, LabError
from iolab.model.bisect import Commit


def git(repo: Path, *args: str, timeout: float = 120.0) -> str:
    """stdout of `git -C repo args`; a LabError naming the command on failure."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(repo), *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
        )
    except FileNotFoundError:
        raise LabError("git not found (scripts/install-deps installs it)") from None
    except subprocess.TimeoutExpired:
        raise LabError(f"git {' '.join(args)} took longer than {timeout:g} s") from None
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise LabError(f"git {' '.join(args[:2])}: {why}")
    return proc.stdout


def resolve(repo: Path, rev: str, what: str, option: str = "--repo") -> str:
    """The full sha of `rev` in `repo`, or a one-line IolabError."""
    if not (repo / ".git").exists() and not (repo / "HEAD").exists():
        raise IolabError(f"{option} {str(repo)!r}: not a git repository")
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").strip()
    except LabError:
        raise IolabError(f"{what} {rev!r}: no such commit in {repo}") from None


def candidates(repo: Path, good: str, bad: str) -> list[str]:
    """The commits after `good` up to and including `bad` on bad's first-parent history,
    oldest first.  First-parent, because a merge brings its whole branch in at once: the
    mainline is one line of tested states, and a regression from a merged branch is blamed
    on its merge (bisect the branch itself next, with the merge's parents as the ends)."""
    if good == bad:
        raise IolabError("--good and --bad name the same commit")
    try:
        git(repo, "merge-base", "--is-ancestor", good, bad)
    except LabError:
        raise IolabError(f"--good {good[:12]} is not an ancestor of --bad {bad[:12]}") from None
    shas = git(repo, "rev-list", "--first-parent", "--reverse", f"{good}..{bad}").split()
    if not shas:
        raise IolabError("no commits between --good and --bad")
    first_parent = git(repo, "rev-parse", f"{shas[0]}^1").strip()
    if first_parent != good:
        raise IolabError(
            f"--good {good[:12]} is not on the first-parent history of --bad {bad[:12]} "
            "(it is on a merged branch): give the merge's first parent as --good, or bisect "
            "the branch with its own ends"
        )
    return shas


def commit_range(repo: Path, good: str, bad: str, option: str) -> list[str]:
    """The bisect's commits: the good end, then the candidates (the bad end last)."""
    g = resolve(repo, good, "--good", option)
    b = resolve(repo, bad, "--bad", option)
    return [g, *candidates(repo, g, b)]


def describe(repo: Path, sha: str) -> Commit:
    out = git(repo, "show", "-s", "--format=%H%x00%s%x00%an%x00%aI", sha)
    full, subject, author, date = [*out.rstrip("\n").split("\x00"), "", "", ""][:4]
    return Commit(full, subject, author, date)
