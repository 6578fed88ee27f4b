"""Commit → measured target: the step that makes a commit measurable.

`CommitTarget` is the interface the driver calls; `LocalBuild` is what exists now: the
commit checked out into a work tree of iolab's own (a `git clone --shared --no-checkout` of
the user's repository in the cache directory, one `git worktree` per sha — the user's
checkout and index are never touched), the build command run there with its output in a log
file, the outcome remembered per sha (a marker file), so a resumed bisect neither rebuilds
nor re-decides.  A failing build makes the commit unbuildable (`git bisect skip`).

Later, a fleet worker implements the same interface for kernels: build, install on a test
host, boot, check `uname -r` / the build id, then measure (docs/bisect.md, "Kernels").
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from iolab.bisect.git import git
from iolab.errors import LabError


@dataclass(frozen=True)
class Prepared:
    sha: str
    ok: bool
    src: Path | None  # the work tree ({src}) when ok
    log: Path | None  # the build log, if a build ran
    reason: str | None = None  # why not ok
    seconds: float = 0.0


class CommitTarget(Protocol):
    def prepare(self, sha: str) -> Prepared: ...

    def close(self, remove: bool) -> None: ...


class LocalBuild:
    """Work trees under `cache/trees/<sha>`, build logs under `cache/logs/<sha>.log`."""

    def __init__(
        self, repo: Path, cache: Path, build: tuple[str, ...], timeout_s: float = 3600.0
    ) -> None:
        self.repo = repo
        self.cache = cache
        self.build = build
        self.timeout_s = timeout_s
        self.clone = cache / "clone"
        self._done: dict[str, Prepared] = {}

    def _ensure_clone(self) -> None:
        if (self.clone / ".git").exists():
            return
        self.cache.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self.clone, ignore_errors=True)
        # --shared: objects are read through alternates, so any commit of the user's repo
        # (also one no ref points at) can be checked out; nothing is written there
        git(self.cache, "clone", "--quiet", "--shared", "--no-checkout", str(self.repo), "clone")

    def prepare(self, sha: str) -> Prepared:
        if sha in self._done:
            return self._done[sha]
        tree = self.cache / "trees" / sha
        logs = self.cache / "logs"
        log = logs / f"{sha}.log"
        marker = self.cache / "builds" / sha
        if marker.exists() and (tree.exists() or marker.read_text().startswith("failed")):
            state = marker.read_text()
            ok = state.startswith("ok")
            done = Prepared(
                sha,
                ok,
                tree if ok else None,
                log if log.exists() else None,
                None if ok else state.partition(" ")[2] or "build failed",
            )
            self._done[sha] = done
            return done
        self._ensure_clone()
        if not tree.exists():
            tree.parent.mkdir(parents=True, exist_ok=True)
            git(self.clone, "worktree", "prune")
            git(self.clone, "worktree", "add", "--quiet", "--force", "--detach", str(tree), sha)
        began = time.monotonic()
        ok, reason, used_log = True, None, None
        if self.build:
            logs.mkdir(parents=True, exist_ok=True)
            used_log = log
            ok, reason = self._build(tree, sha, log)
        done = Prepared(sha, ok, tree if ok else None, used_log, reason, time.monotonic() - began)
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text("ok" if ok else f"failed {reason}")
        self._done[sha] = done
        return done

    def _build(self, tree: Path, sha: str, log: Path) -> tuple[bool, str | None]:
        env = {**os.environ, "IOLAB_SRC": str(tree), "IOLAB_REV": sha}
        with log.open("w") as out:
            out.write(f"$ {' '.join(self.build)}  (in {tree})\n")
            out.flush()
            try:
                proc = subprocess.run(
                    list(self.build),
                    cwd=tree,
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    timeout=self.timeout_s,
                    check=False,
                )
            except FileNotFoundError:
                raise LabError(f"--build: {self.build[0]} not found") from None
            except subprocess.TimeoutExpired:
                return False, f"build took longer than {self.timeout_s:g} s (log {log})"
        if proc.returncode != 0:
            return False, f"build exited with {proc.returncode} (log {log})"
        return True, None

    def close(self, remove: bool) -> None:
        """Remove the work trees and the clone (logs and markers stay) when `remove`."""
        if not remove:
            return
        shutil.rmtree(self.cache / "trees", ignore_errors=True)
        shutil.rmtree(self.clone, ignore_errors=True)
