"""Building a commit of the user's repository: the one clone, checkout, log, time limit and
build cache that commit bisects and kernel-commit bisects share.

The user's repository is only read: iolab clones it (`git clone --shared --no-checkout`:
objects through alternates, so any commit, also one no ref points at, can be checked out)
into `<root>/clone`.  A commit is checked out either into a work tree of its own
(`<root>/trees/<sha>`: a commit bisect measures in it, `{src}`) or into the clone itself,
one tree reused from commit to commit so that `make` rebuilds only what changed (a kernel,
as ktest.pl does).  The build command runs there (an argument list, no shell) with its
output in `<root>/logs/<sha>.log`; a non-zero exit or the time limit makes the commit
unbuildable.  A good build is remembered in `<root>/builds/<digest of the command>/<sha>/`
(which a kernel build also fills with its artifacts), so a commit visited again — or a
resumed bisect — is not built again, and another command never takes this one's builds.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iolab.builds.git import git
from iolab.errors import IolabError

DONE = "iolab-built.json"
# writing a whole work tree: a kernel tree (~80k files) took over 2 minutes on a loaded 2-core
# machine, where git's other calls take seconds
CHECKOUT_S = 1800.0


def command(text: str | None, option: str) -> tuple[str, ...]:
    """A build command given on the command line (split like a shell, not run by one)."""
    try:
        return tuple(shlex.split(text)) if text else ()
    except ValueError as e:
        raise IolabError(f"{option}: {e}") from None


def default_cache() -> Path:
    """Where builds go unless `--cache` says otherwise (shared by bisect and ab)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "iolab" / "bisect"


@dataclass(frozen=True)
class BuildRecord:
    """One commit built, or why not (a bisect then skips it, as `git bisect skip`), as a
    run's meta records it.  A kernel commit's build also names its release, files and (once
    in the store) their large objects, in the shape `iolab.kernels.artifacts` reads on the
    hosts."""

    ok: bool
    reason: str | None = None
    release: str | None = None
    release_without_sha: str | None = None
    files: tuple[str, ...] = ()
    sha256: tuple[str, ...] = ()
    artifacts: tuple[dict[str, Any], ...] = ()
    cached: bool = False  # not stored: this process took it from the build cache

    @property
    def state(self) -> str:
        return "ok" if self.ok else f"failed: {self.reason or 'build failed'}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ok": self.ok}
        if not self.ok:
            out["reason"] = self.reason
        if self.release is not None:
            out |= {
                "release": self.release,
                "release_without_sha": self.release_without_sha,
                "files": list(self.files),
                "sha256": list(self.sha256),
                "artifacts": list(self.artifacts),
            }
        return out

    @classmethod
    def from_json(cls, data: Any) -> BuildRecord:
        if not isinstance(data, dict):
            raise TypeError("a build record is not an object")
        release = data.get("release")
        return cls(
            ok=bool(data["ok"]),
            reason=data.get("reason"),
            release=None if release is None else str(release),
            release_without_sha=data.get("release_without_sha"),
            files=tuple(str(f) for f in data.get("files") or ()),
            sha256=tuple(str(d) for d in data.get("sha256") or ()),
            artifacts=tuple(data.get("artifacts") or ()),
        )


@dataclass(frozen=True)
class Ran:
    """A build command's outcome: `reason` None when it exited 0."""

    tree: Path
    out: Path
    log: Path | None
    reason: str | None
    seconds: float


class Builder:
    def __init__(
        self,
        repo: Path,
        root: Path,
        argv: tuple[str, ...],
        *,
        option: str,
        tree_per_commit: bool,
        timeout_s: float,
    ) -> None:
        self.repo, self.root, self.argv, self.option = repo, root, argv, option
        self.tree_per_commit, self.timeout_s = tree_per_commit, timeout_s
        self.clone = root / "clone"
        digest = hashlib.sha256("\0".join(argv).encode()).hexdigest()[:12]
        self.builds = root / "builds" / digest

    def out(self, sha: str) -> Path:
        return self.builds / sha

    def tree(self, sha: str) -> Path:
        return self.root / "trees" / sha if self.tree_per_commit else self.clone

    def recall(self, sha: str) -> dict[str, Any] | None:
        """What `remember` kept of a good build of `sha`, or None."""
        try:
            data = json.loads((self.out(sha) / DONE).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict):
            return None
        if self.tree_per_commit and not self.tree(sha).exists():
            return None  # the commit's tree is what it built: gone with it
        return data

    def remember(self, sha: str, data: Mapping[str, Any]) -> None:
        (self.out(sha) / DONE).write_text(json.dumps(dict(data)))

    def _checkout(self, sha: str) -> Path:
        """The commit's work tree (one per commit, or the one tree moved to it)."""
        if not (self.clone / ".git").exists():
            self.root.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(self.clone, ignore_errors=True)
            git(self.root, "clone", "--quiet", "--shared", "--no-checkout", str(self.repo), "clone")
        tree = self.tree(sha)
        if not self.tree_per_commit:
            git(tree, "checkout", "--quiet", "--force", "--detach", sha, timeout=CHECKOUT_S)
        elif not tree.exists():
            tree.parent.mkdir(parents=True, exist_ok=True)
            git(self.clone, "worktree", "prune")
            git(
                self.clone, "worktree", "add", "--quiet", "--force", "--detach", str(tree), sha,
                timeout=CHECKOUT_S,
            )  # fmt: skip
        return tree

    def run(self, sha: str, env: Mapping[str, str]) -> Ran:
        """Check `sha` out and run the build command there (none: checked out only), with
        `env` added to the environment; an empty `out(sha)` is ready for its products."""
        out = self.out(sha)
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        tree = self._checkout(sha)
        began = time.monotonic()
        if not self.argv:
            return Ran(tree, out, None, None, 0.0)
        log = self.root / "logs" / f"{sha}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("w") as fh:
            fh.write(f"$ {' '.join(self.argv)}  (in {tree})\n")
            fh.flush()
            try:
                proc = subprocess.run(
                    list(self.argv),
                    cwd=tree,
                    env={**os.environ, **env},
                    stdin=subprocess.DEVNULL,
                    stdout=fh,
                    stderr=subprocess.STDOUT,
                    timeout=self.timeout_s,
                    check=False,
                )
            except FileNotFoundError:
                raise IolabError(f"{self.option}: {self.argv[0]} not found") from None
            except subprocess.TimeoutExpired:
                slow = f"build took longer than {self.timeout_s:g} s (log {log})"
                return Ran(tree, out, log, slow, time.monotonic() - began)
        why = None if proc.returncode == 0 else f"build exited with {proc.returncode} (log {log})"
        return Ran(tree, out, log, why, time.monotonic() - began)

    def close(self) -> None:
        """Remove the work trees and the clone; logs and builds stay."""
        shutil.rmtree(self.root / "trees", ignore_errors=True)
        shutil.rmtree(self.clone, ignore_errors=True)
