"""Building one commit of a git-range kernel bisect: the build hook and its manifest.

The hook (`--kernel-build "CMD ..."`, an argument list, no shell) runs on the controller in
a work tree of the kernel repository checked out at the commit (a shared clone under the
cache, one tree reused from commit to commit, so `make` rebuilds only what changed — as
ktest.pl does; the user's repository is only read), with:

- `IOLAB_KERNEL_SHA`, `IOLAB_KERNEL_SHA12`: the commit;
- `IOLAB_KERNEL_LOCALVERSION`: `-iolab-<sha12>`, for `make LOCALVERSION=…` so that the
  release carries the commit (what the check after boot compares);
- `IOLAB_KERNEL_OUT`: an empty directory for the artifacts and `manifest.json`;
- `IOLAB_KERNEL_REPO`: the repository.

It must leave in `IOLAB_KERNEL_OUT` the artifacts (e.g. the `linux-image-*.deb` of
`make bindeb-pkg`, copied from the tree's parent) and a manifest:

    {"release": "6.9.0-iolab-1a2b3c4d5e6f", "artifacts": ["linux-image-6.9.0-iolab-….deb"]}

`release` is what `uname -r` will print; `artifacts` are file names in the directory, in
the order the host's install hook gets them (`{artifact}` is the first).  A release that does
not carry the commit's short sha is refused unless the manifest says why
(`"release_without_sha": "…"`, e.g. a packaged kernel standing in for a build): the boot
check then compares the release alone, and the report says so.  A `.deb` artifact set must
hold the package `linux-image-<release>`.

Exit status non-zero: the commit is unbuildable (the engine skips it, as `git bisect skip`).
A manifest that is missing or wrong is the hook's fault, not the commit's: it ends the
bisect in one line.  The clone, the log, the time limit and the cache per build command and
sha are `iolab.builds.builder`'s (`<cache>/kernels/builds/<digest of the command>/<sha>/`):
a commit visited again, or a repeated bisect with the same command, is not built again (the
hook's own files are not part of the key: after changing the script, remove the cache); a
cached build whose artifacts changed is built again.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from iolab.builds.builder import DONE, Builder
from iolab.errors import IolabError, LabError, RefusedError
from iolab.kernels.artifacts import file_sha256
from iolab.plan.sections import _RELEASE

MANIFEST = "manifest.json"
_KEYS = {"release", "artifacts", "release_without_sha"}


class ManifestError(IolabError):
    """The build hook's manifest is missing or wrong (exit 2: the hook is the user's input)."""


@dataclass(frozen=True)
class Manifest:
    release: str
    artifacts: tuple[Path, ...]
    release_without_sha: str | None = None


@dataclass(frozen=True)
class Built:
    """One commit's outcome: ok with its manifest (and each artifact's SHA-256), or why not."""

    sha: str
    ok: bool
    reason: str | None = None
    manifest: Manifest | None = None
    sha256: tuple[str, ...] = ()
    cached: bool = False


def short(sha: str) -> str:
    return sha[:12]


def read_manifest(out: Path, sha: str) -> Manifest:
    """The manifest in `out`, checked; ManifestError or RefusedError in one line."""
    where = f"commit {short(sha)}: the build hook's {MANIFEST}"
    try:
        data = json.loads((out / MANIFEST).read_text())
    except FileNotFoundError:
        raise ManifestError(f"{where} is missing (docs/kernels.md)") from None
    except (OSError, ValueError) as exc:
        raise ManifestError(f"{where} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ManifestError(f"{where} must be a JSON object")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise ManifestError(
            f"{where}: unknown key {unknown[0]!r} (keys: {', '.join(sorted(_KEYS))})"
        )
    release = data.get("release")
    if not isinstance(release, str) or not _RELEASE.fullmatch(release):
        raise ManifestError(f"{where}: release {release!r} is not a kernel release (uname -r)")
    names = data.get("artifacts")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise ManifestError(f"{where}: artifacts must be a non-empty list of file names")
    if len(set(names)) != len(names):
        raise ManifestError(f"{where}: an artifact is listed twice")
    files = []
    for name in names:
        if "/" in name or name in (".", "..", MANIFEST, DONE) or not name:
            raise ManifestError(
                f"{where}: artifact {name!r} is not a file name in IOLAB_KERNEL_OUT"
            )
        path = out / name
        if path.is_symlink() or not path.is_file() or path.stat().st_size == 0:
            raise ManifestError(f"{where}: artifact {name} is not a non-empty regular file")
        files.append(path)
    why = data.get("release_without_sha")
    if why is not None and (not isinstance(why, str) or not why.strip()):
        raise ManifestError(f"{where}: release_without_sha must say why, in words")
    if short(sha) not in release and why is None:
        raise RefusedError(
            f"commit {short(sha)}: the build's release {release} does not carry the commit's "
            f"short sha (build with LOCALVERSION=$IOLAB_KERNEL_LOCALVERSION), and the manifest "
            "does not say why (release_without_sha): the boot check could not tell commits apart"
        )
    manifest = Manifest(release, tuple(files), why.strip() if why else None)
    check_debs(manifest, where)
    return manifest


def check_debs(manifest: Manifest, where: str) -> None:
    """A set of .deb artifacts must install the release it claims."""
    debs = [p for p in manifest.artifacts if p.suffix == ".deb"]
    if not debs:
        return
    if shutil.which("dpkg-deb") is None:
        raise LabError("dpkg-deb is missing: it checks a .deb artifact's package name")
    packages = []
    for deb in debs:
        proc = subprocess.run(
            ["dpkg-deb", "--field", str(deb), "Package"],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        if proc.returncode != 0:
            raise ManifestError(f"{where}: artifact {deb.name} is not a .deb package")
        packages.append(proc.stdout.strip())
    wanted = f"linux-image-{manifest.release}"
    if wanted not in packages:
        raise ManifestError(
            f"{where}: no artifact is the package {wanted} (found {', '.join(packages)})"
        )


class KernelBuilder:
    """Kernel commits built by the hook in one reused work tree (`iolab.builds.builder`),
    each good build's manifest and artifact checksums kept with it."""

    def __init__(
        self, repo: Path, cache: Path, argv: tuple[str, ...], timeout_s: float = 6 * 3600.0
    ) -> None:
        self.repo, self.cache, self.argv = repo, cache, argv
        self.builder = Builder(
            repo, cache, argv, option="--kernel-build", tree_per_commit=False, timeout_s=timeout_s
        )

    def cached(self, sha: str) -> Built | None:
        done = self.builder.recall(sha)
        try:
            manifest = read_manifest(self.builder.out(sha), sha) if done else None
        except IolabError:
            return None
        sums = tuple(str(s) for s in (done or {}).get("sha256", []))
        if manifest is None or len(sums) != len(manifest.artifacts):
            return None
        for path, digest in zip(manifest.artifacts, sums, strict=True):
            if file_sha256(path) != digest:
                return None
        return Built(sha, True, manifest=manifest, sha256=sums, cached=True)

    def build(self, sha: str) -> Built:
        """The commit built (or taken from the cache); a failing hook: not ok, with why."""
        hit = self.cached(sha)
        if hit is not None:
            return hit
        env = {
            "IOLAB_KERNEL_SHA": sha,
            "IOLAB_KERNEL_SHA12": short(sha),
            "IOLAB_KERNEL_LOCALVERSION": f"-iolab-{short(sha)}",
            "IOLAB_KERNEL_OUT": str(self.builder.out(sha)),
            "IOLAB_KERNEL_REPO": str(self.repo),
        }
        ran = self.builder.run(sha, env)
        if ran.reason is not None:
            return Built(sha, False, ran.reason)
        manifest = read_manifest(ran.out, sha)
        sums = tuple(file_sha256(p) for p in manifest.artifacts)
        self.builder.remember(sha, {"sha256": list(sums)})
        return Built(sha, True, manifest=manifest, sha256=sums)
