"""Build commits of the planted-regression tree with the guest's config, timed, through
iolab's own builder (the cache `bisect --kernel-repo` uses).

Usage:  nice -n 10 .venv/bin/python bench/kernel_build_guest.py [COMMIT ...]

With no COMMIT: the planted commit's parent (the first build: the whole kernel), then the
planted commit (a rebuild: fs/ext4/fsync.c and the link, then the packages).  A COMMIT is a
sha or a key of tree.json (`planted`, `planted_parent`, `harmless_tip`, `unbuildable`, ...).

The tree and config come from bench/kernel_tree.py (made first if missing); the hook is
examples/hooks/kernel-build-bindeb; builds are cached under the tree's `build_cache`, so a
second call prints `cached` and takes well under a second per commit.  Each line: the
commit, the release, the seconds, cached or not, the linux-image package and its size.  The
figures are appended to `DIR/builds.jsonl` with the load average at the start and the end
(the machine is shared: a build's time grows with it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from iolab.builds.kernel import KernelBuilder, short

HERE = Path(__file__).resolve().parent


def tree_info() -> dict[str, str]:
    out = subprocess.run(
        [sys.executable, str(HERE / "kernel_tree.py"), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        sys.exit(out.stderr.strip() or "kernel_tree.py failed")
    return dict(json.loads(out.stdout))


def warm_checkout(tree: Path, sha: str) -> None:
    """Check the builder's work tree out once, without the builder's git timeout: a first
    checkout of 75,000 files can take minutes on a loaded machine (the builder then finds
    the tree there and checks out only what differs)."""
    if (tree / ".git").exists():
        subprocess.run(
            ["git", "-C", str(tree), "checkout", "--quiet", "--force", "--detach", sha],
            check=True,
        )


def main() -> None:
    info = tree_info()
    wanted = sys.argv[1:] or ["planted_parent", "planted"]
    shas = [info.get(w, w) for w in wanted]
    builder = KernelBuilder(
        Path(info["tree"]), Path(info["build_cache"]), (info["hook"], info["config"])
    )
    log = Path(info["tree"]).parent / "builds.jsonl"
    warm_checkout(builder.builder.clone, shas[0])
    for name, sha in zip(wanted, shas, strict=True):
        load0 = os.getloadavg()[0]
        start = time.monotonic()
        built = builder.build(sha)
        seconds = time.monotonic() - start
        load1 = os.getloadavg()[0]
        row: dict[str, object] = {
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
            "commit": sha,
            "name": name,
            "seconds": round(seconds, 1),
            "cached": built.cached,
            "ok": built.ok,
            "load_start": round(load0, 2),
            "load_end": round(load1, 2),
            "nice": os.nice(0),
        }
        if built.ok and built.manifest is not None:
            (deb,) = built.manifest.artifacts
            row.update(release=built.manifest.release, deb=str(deb), mb=deb.stat().st_size / 1e6)
            print(
                f"{name} {short(sha)}: {built.manifest.release} in {seconds:.1f} s"
                f"{' (cached)' if built.cached else ''}; {deb.name} {row['mb']:.1f} MB; "
                f"load {load0:.1f} → {load1:.1f}",
                flush=True,
            )
        else:
            row["reason"] = built.reason
            print(f"{name} {short(sha)}: not built in {seconds:.1f} s: {built.reason}", flush=True)
        with log.open("a") as fh:
            fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
