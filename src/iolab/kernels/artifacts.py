"""Built kernels carried from the controller to the test hosts, through the store.

A git-range kernel bisect (docs/kernels.md) builds each commit on the controller; the test
host must then install what was built.  Every fleet host already reaches the store, so the
artifacts travel there: as PostgreSQL large objects (`lo_create`/`lo_put`, read back with
`lo_get`), which need no table of iolab's and so no schema change.  The run's meta says
which release each commit built and which objects hold its artifacts
(`kernel_builds[sha] = {release, artifacts: [{name, sha256, size, oid}]}`); a worker asked to
boot a release it does not have fetches them into a content-addressed cache
(`/var/cache/iolab/kernel-artifacts/<sha256>/<name>`, `$IOLAB_KERNEL_ARTIFACTS`), checks
each SHA-256, and hands the paths to its `install` hook (`{artifact}`, `{artifacts}`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from iolab.errors import LabError
from iolab.store.store import Store

CHUNK = 4 << 20
META = "kernel_builds"


@dataclass(frozen=True)
class Artifact:
    name: str
    sha256: str
    size: int
    oid: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def cache_dir() -> Path:
    return Path(os.environ.get("IOLAB_KERNEL_ARTIFACTS") or "/var/cache/iolab/kernel-artifacts")


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def upload(store: Store, path: Path, sha256: str | None = None) -> Artifact:
    """`path` as a new large object, written in chunks in one transaction."""
    from sqlalchemy import text

    digest = sha256 or file_sha256(path)
    with store.engine.begin() as conn:
        oid = int(conn.execute(text("SELECT lo_create(0)")).scalar_one())
        offset = 0
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(CHUNK), b""):
                conn.execute(
                    text("SELECT lo_put(:oid, :offset, :data)"),
                    {"oid": oid, "offset": offset, "data": chunk},
                )
                offset += len(chunk)
    return Artifact(path.name, digest, offset, oid)


def _parse(entry: object) -> Artifact:
    if not isinstance(entry, Mapping):
        raise LabError("a kernel artifact record is not an object")
    try:
        art = Artifact(
            str(entry["name"]), str(entry["sha256"]), int(entry["size"]), int(entry["oid"])
        )
    except (KeyError, TypeError, ValueError):
        raise LabError("a kernel artifact record is incomplete") from None
    if "/" in art.name or art.name in ("", ".", ".."):
        raise LabError(f"kernel artifact name {art.name!r} is not a plain file name")
    return art


def for_release(meta: Mapping[str, Any], release: str) -> list[Artifact]:
    """The artifacts the run's meta records for `release` ([] when none)."""
    builds = meta.get(META)
    if not isinstance(builds, Mapping):
        return []
    for build in builds.values():
        if isinstance(build, Mapping) and build.get("release") == release:
            return [_parse(a) for a in build.get("artifacts") or []]
    return []


def fetch(store: Store, run_id: int, release: str) -> list[Path]:
    """The artifacts of `release` in run `run_id`, as local files (cached by SHA-256)."""
    arts = for_release(store.run(run_id).meta, release)
    if not arts:
        raise LabError(f"run {run_id} has no built artifact for kernel {release}")
    return [_fetch_one(store, a) for a in arts]


def _fetch_one(store: Store, art: Artifact) -> Path:
    from sqlalchemy import text

    dest = cache_dir() / art.sha256 / art.name
    if dest.is_file() and dest.stat().st_size == art.size and file_sha256(dest) == art.sha256:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    h = hashlib.sha256()
    with store.engine.connect() as conn, tmp.open("wb") as out:
        offset = 0
        while offset < art.size:
            data = conn.execute(
                text("SELECT lo_get(:oid, :offset, :n)"),
                {"oid": art.oid, "offset": offset, "n": min(CHUNK, art.size - offset)},
            ).scalar_one()
            if not data:
                break
            chunk = bytes(data)
            out.write(chunk)
            h.update(chunk)
            offset += len(chunk)
    if offset != art.size or h.hexdigest() != art.sha256:
        tmp.unlink(missing_ok=True)
        raise LabError(
            f"kernel artifact {art.name}: what the store holds does not match its SHA-256"
        )
    tmp.replace(dest)
    return dest


def remove(store: Store, meta: Mapping[str, Any]) -> int:
    """Drop the large objects a run's meta names (the run's artifacts); how many."""
    from sqlalchemy import text

    builds = meta.get(META)
    oids: set[int] = set()
    if isinstance(builds, Mapping):
        for build in builds.values():
            if isinstance(build, Mapping):
                oids.update(_parse(a).oid for a in build.get("artifacts") or [])
    with store.engine.begin() as conn:
        for oid in sorted(oids):
            conn.execute(
                text("SELECT lo_unlink(oid) FROM pg_largeobject_metadata WHERE oid = :oid"),
                {"oid": oid},
            )
    return len(oids)
