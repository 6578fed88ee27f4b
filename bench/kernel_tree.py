"""A Linux 6.1 git tree with one planted ext4 regression, and a config that boots the guest.

Usage:  python3 bench/kernel_tree.py [--work DIR] [--json]

Makes (once; a second call only prints what the first made, in well under a second):

- `DIR/linux`: Debian's `linux-source-6.1` (fetched with `apt-get download`) as a git
  repository.  Branch `planted`: the source, then 17 commits — 16 harmless ones (a function
  holding one `pr_debug` line appended to a file of fs/ext4, block/ or mm/: nothing calls it,
  nothing observable changes, but each forces a recompile and a relink, as a real commit
  does) and, as the 11th, the planted regression: `ext4_sync_file` journals the inode once
  more in a synchronous handle after the commit fsync already waited for, so every fsync
  (and fdatasync) costs a second journal commit.  Modelled on the ext4 IOPS thread ("the
  difference is somewhere in waiting for the journal"); on an fsync-per-write workload it
  shows as one more jbd2 transaction per write (`jbd2.transactions`), with several writers
  as fewer handles per transaction (`jbd2.handles_per_txn`), and as write IOPS falling with
  the commits.  Three more branches share the history up to the
  planted commit's parent:
  - `harmless`: the same 17 changes with the planted one replaced by a harmless one in
    fs/ext4/fsync.c — every commit harmless (a bisect over it must name no culprit);
  - `reverted`: `planted` plus `git revert` of the planted commit (the ends measure alike);
  - `unbuildable`: the planted commit's parent replaced by one that does not compile (an
    `#error` line, which the planted commit removes): a bisect skips it and reports the
    culprit as a range (parent's parent .. planted).
  Author and committer dates are fixed, so every machine makes the same shas from the same
  source package.
- `DIR/guest.config`: the guest's kernel config.  Debian's cloud config (from
  `linux-image-<abi>-cloud-amd64`, the guest image's own kernel) trimmed by `make
  localmodconfig` against `bench/kernel/guest.lsmod` (the modules the lab loads), then
  `bench/kernel/guest.fragment` merged (virtio built in, so the root mounts without an
  initramfs; no module signing, no BTF).  Checked: every line of the fragment holds.
- `DIR/tree.json`: the shas (the planted commit, its parent, each branch's tip, the base).

`bench/kernel-build-real` builds commits of it with examples/hooks/kernel-build-bindeb and
proves the result boots the guest (docs/kernels.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
LSMOD = HERE / "kernel" / "guest.lsmod"
FRAGMENT = HERE / "kernel" / "guest.fragment"
CLOUD_ABI = "6.1.0-56"  # the newest kernel of the guest image (src/iolab/guest/recipe.py)
RECIPE = 4  # bump when the commits or the config recipe change: the tree is made again

# (file, harmless change number): each gets a function with a pr_debug line appended
HARMLESS = (
    "fs/ext4/super.c",
    "block/blk-core.c",
    "mm/filemap.c",
    "fs/ext4/namei.c",
    "block/bio.c",
    "mm/page-writeback.c",
    "fs/ext4/extents.c",
    "block/blk-mq.c",
    "mm/readahead.c",
    "fs/ext4/balloc.c",
    # the planted commit comes here (11th)
    "block/blk-settings.c",
    "mm/truncate.c",
    "fs/ext4/dir.c",
    "block/genhd.c",
    "mm/vmscan.c",
    "fs/ext4/mballoc.c",
)
PLANTED_AT = 10  # index in the series of 17 changes
STAND_IN = "fs/ext4/fsync.c"  # the harmless change standing in for it on `harmless`

PLANTED_SUBJECT = "ext4: journal the inode once more after fsync's commit"
PLANTED_BODY = """\
Make the inode's on-disk copy follow the data fsync just wrote: after the
commit fsync waited for, journal the inode again in a synchronous handle.

This costs a second journal commit per fsync and fdatasync.
"""
PATCH = HERE / "kernel" / "planted-fsync.patch"
HOOK = HERE.parent / "examples" / "hooks" / "kernel-build-bindeb"
BROKEN = '#error "this commit does not build (a bisect must skip it)"\n'


# what making the config (`make localmodconfig`) and the builds need; a new machine has
# only the toolchains, so the missing ones are installed first (as bench/kernel-build-real)
BUILD_PACKAGES = (
    "flex", "bison", "bc", "libelf-dev", "libssl-dev", "cpio", "rsync", "kmod",
    "build-essential", "dpkg-dev",
)  # fmt: skip


def install_build_packages() -> None:
    missing = [
        p
        for p in BUILD_PACKAGES
        if subprocess.run(["dpkg", "-s", p], capture_output=True, check=False).returncode != 0
    ]
    if missing:
        print(f"kernel_tree: installing {' '.join(missing)}", file=sys.stderr)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        run(["apt-get", "install", "-y", "-q", *missing], env=env)


def run(argv: list[str], cwd: Path | None = None, **kw: object) -> str:
    proc = subprocess.run(  # type: ignore[call-overload]
        argv, cwd=cwd, capture_output=True, text=True, check=False, **kw
    )
    if proc.returncode != 0:
        why = proc.stderr[-2000:]
        sys.exit(f"kernel_tree: {' '.join(argv[:4])}: exit {proc.returncode}: {why}")
    return str(proc.stdout)


class Repo:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.tick = 0

    def git(self, *args: str) -> str:
        # fixed identities and dates: the same source makes the same shas everywhere
        date = f"2026-01-01T00:{self.tick // 60:02d}:{self.tick % 60:02d}Z"
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "iolab bench",
            "GIT_AUTHOR_EMAIL": "bench@iolab.invalid",
            "GIT_COMMITTER_NAME": "iolab bench",
            "GIT_COMMITTER_EMAIL": "bench@iolab.invalid",
            "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_DATE": date,
        }
        return run(["git", "-C", str(self.path), *args], env=env).strip()

    def commit(self, message: str) -> str:
        self.tick += 1
        self.git("commit", "-q", "-a", "-m", message)
        return self.git("rev-parse", "HEAD")


def harmless(tree: Path, path: str, n: int) -> str:
    """Append a function with one pr_debug line: compiled and linked, never called."""
    where = tree / path
    name = re.sub(r"\W", "_", Path(path).stem)
    with where.open("a") as fh:
        fh.write(
            f"\nvoid iolab_bench_{name}_{n}(void);\n"
            f"void iolab_bench_{name}_{n}(void)\n{{\n"
            f'\tpr_debug("iolab bench: harmless change {n}\\n");\n}}\n'
        )
    return f"{Path(path).parent.name}/{Path(path).stem}: a debug line nobody enables ({n})"


def plant(tree: Path) -> None:
    """bench/kernel/planted-fsync.patch: ext4_fsync_journal's second, synchronous handle."""
    run(["git", "-C", str(tree), "apply", str(PATCH)])


def unpack(work: Path) -> Path:
    """The source package's tree, unpacked under `work` (downloaded once)."""
    debs = sorted(work.glob("linux-source-6.1_*_all.deb"))
    if not debs:
        run(["apt-get", "download", "-q", "linux-source-6.1"], cwd=work)
        debs = sorted(work.glob("linux-source-6.1_*_all.deb"))
    tree = work / "linux"
    shutil.rmtree(tree, ignore_errors=True)
    shutil.rmtree(work / "linux-source-6.1", ignore_errors=True)
    tar = f"dpkg-deb --fsys-tarfile {debs[-1]} | tar -xO ./usr/src/linux-source-6.1.tar.xz"
    run(["sh", "-c", f"{tar} | tar -xJ -C {work}"])
    (work / "linux-source-6.1").rename(tree)
    # Debian's source package ignores every top-level file in git: keep the kernel's own rules
    gi = tree / ".gitignore"
    text = gi.read_text()
    cut = text.find("#\n# Debian packaging: ignore everything")
    gi.write_text(text if cut < 0 else text[:cut])
    return tree


def make_tree(work: Path) -> dict[str, str]:
    tree = unpack(work)
    repo = Repo(tree)
    repo.git("init", "-q", "-b", "planted")
    repo.git("add", "-A")
    repo.tick += 1
    repo.git("commit", "-q", "-m", f"linux-source-6.1 {kernelversion(tree)} (Debian)")
    base = repo.git("rev-parse", "HEAD")
    shas: list[str] = []
    files = list(HARMLESS)
    for i in range(PLANTED_AT):
        shas.append(repo.commit(harmless(tree, files[i], i + 1)))
    parent = shas[-1]
    plant(tree)
    planted = repo.commit(f"{PLANTED_SUBJECT}\n\n{PLANTED_BODY}")
    for i in range(PLANTED_AT, len(files)):
        repo.commit(harmless(tree, files[i], i + 2))
    tip = repo.git("rev-parse", "HEAD")
    # every commit harmless: the planted one replaced by a harmless change of the same file
    repo.git("checkout", "-q", "-b", "harmless", parent)
    repo.commit(harmless(tree, STAND_IN, PLANTED_AT + 1))
    for i in range(PLANTED_AT, len(files)):
        repo.commit(harmless(tree, files[i], i + 2))
    harmless_tip = repo.git("rev-parse", "HEAD")
    # the planted commit reverted on top
    repo.git("checkout", "-q", "-b", "reverted", tip)
    repo.tick += 1
    repo.git("revert", "--no-edit", planted)
    reverted_tip = repo.git("rev-parse", "HEAD")
    # the planted commit's parent made unbuildable; the planted commit mends it
    repo.git("checkout", "-q", "-b", "unbuildable", shas[-2])
    broken_file = tree / files[PLANTED_AT - 1]
    msg = harmless(tree, files[PLANTED_AT - 1], PLANTED_AT)
    with broken_file.open("a") as fh:
        fh.write(BROKEN)
    unbuildable = repo.commit(f"{msg}, and a line that does not compile")
    broken_file.write_text(broken_file.read_text().replace(BROKEN, ""))
    plant(tree)
    planted_u = repo.commit(f"{PLANTED_SUBJECT}\n\n{PLANTED_BODY}")
    for i in range(PLANTED_AT, len(files)):
        repo.commit(harmless(tree, files[i], i + 2))
    unbuildable_tip = repo.git("rev-parse", "HEAD")
    repo.git("checkout", "-q", "planted")
    return {
        "base": base,
        "planted": planted,
        "planted_parent": parent,
        "planted_tip": tip,
        "harmless_tip": harmless_tip,
        "reverted_tip": reverted_tip,
        "unbuildable": unbuildable,
        "unbuildable_planted": planted_u,
        "unbuildable_tip": unbuildable_tip,
    }


def commits(work: Path) -> dict[str, str]:
    """The tree's commits: made again only when the series or the patch changed."""
    made = work / "commits.json"
    key = f"{RECIPE}\n{PATCH.read_text()}"
    try:
        known = json.loads(made.read_text())
        if known.pop("key") == key and (work / "linux" / ".git").is_dir():
            return dict(known)
    except (OSError, ValueError, KeyError):
        pass
    made.unlink(missing_ok=True)
    shas = make_tree(work)
    made.write_text(json.dumps({"key": key, **shas}, indent=1) + "\n")
    return shas


def kernelversion(tree: Path) -> str:
    return run(["make", "-s", "-C", str(tree), "kernelversion"]).strip()


def cloud_config(work: Path) -> Path:
    """Debian's cloud config of the guest image's newest kernel (downloaded once)."""
    out = work / f"config-{CLOUD_ABI}-cloud-amd64"
    if out.exists():
        return out
    pkg = f"linux-image-{CLOUD_ABI}-cloud-amd64"
    debs = sorted(work.glob(f"{pkg}_*.deb"))
    if not debs:
        run(["apt-get", "download", "-q", pkg], cwd=work)
        debs = sorted(work.glob(f"{pkg}_*.deb"))
    text = run(["sh", "-c", f"dpkg-deb --fsys-tarfile {debs[-1]} | tar -xO ./boot/{out.name}"])
    out.write_text(text)
    return out


def fragment_lines() -> dict[str, str]:
    """CONFIG_X -> its wanted value ('n' for `# CONFIG_X is not set`)."""
    wanted: dict[str, str] = {}
    for line in FRAGMENT.read_text().splitlines():
        m = re.fullmatch(r"(CONFIG_\w+)=(.*)", line) or re.fullmatch(
            r"# (CONFIG_\w+) is not set", line
        )
        if m:
            wanted[m.group(1)] = m.group(2) if m.re.pattern.startswith("(") else "n"
    return wanted


def make_config(work: Path, tree: Path) -> Path:
    """cloud config → localmodconfig (guest.lsmod) → the fragment merged → olddefconfig."""
    out = work / "guest.config"
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        obj = Path(tmp)
        shutil.copy(cloud_config(work), obj / ".config")
        env = {**os.environ, "LSMOD": str(LSMOD)}
        run(["make", "-s", "-C", str(tree), f"O={obj}", "localmodconfig"], env=env, input="")
        run(
            [str(tree / "scripts/kconfig/merge_config.sh"), "-m", "-O", str(obj),
             str(obj / ".config"), str(FRAGMENT)],
            cwd=tree,
        )  # fmt: skip
        run(["make", "-s", "-C", str(tree), f"O={obj}", "olddefconfig"], input="")
        got = config_values((obj / ".config").read_text())
        for key, value in fragment_lines().items():
            if got.get(key, "n") != value:
                sys.exit(f"kernel_tree: {key}={got.get(key, 'n')} after olddefconfig, not {value}")
        shutil.copy(obj / ".config", out)
    return out


def config_values(text: str) -> dict[str, str]:
    found = {}
    for line in text.splitlines():
        m = re.fullmatch(r"(CONFIG_\w+)=(.*)", line)
        if m:
            found[m.group(1)] = m.group(2)
    return found


def builder_inputs(work: Path, config: Path) -> dict[str, str]:
    """The build hook at a path named by its contents, and the builder's cache.

    iolab's builder keys its cache on the hook's argument list: a copy under
    `DIR/hooks/<sha256 of the hook>/` keeps that key the same from one checkout of iolab to
    another, and changes it when the hook changes (so a changed hook builds again)."""
    body = HOOK.read_bytes()
    hook = work / "hooks" / hashlib.sha256(body).hexdigest()[:12] / HOOK.name
    if not hook.exists():
        hook.parent.mkdir(parents=True, exist_ok=True)
        tmp = hook.with_suffix(".tmp")
        tmp.write_bytes(body)
        tmp.chmod(0o755)
        tmp.rename(hook)
    # iolab's own layout: `bisect --cache C` builds kernels in C/kernels, `ab --kernel-repo`
    # in $XDG_CACHE_HOME/iolab/bisect/kernels — one directory serves both
    xdg = work / "xdg"
    bisect_cache = xdg / "iolab" / "bisect"
    return {
        "hook": str(hook),
        "build_cache": str(bisect_cache / "kernels"),
        "bisect_cache": str(bisect_cache),
        "xdg_cache_home": str(xdg),
        "kernel_build": f"{hook} {config}",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = os.environ.get("IOLAB_KERNEL_TREE_WORK", "/var/cache/iolab/kernel-tree")
    ap.add_argument("--work", type=Path, default=Path(default))
    ap.add_argument("--json", action="store_true", help="print tree.json instead of lines")
    args = ap.parse_args()
    work: Path = args.work
    work.mkdir(parents=True, exist_ok=True)
    stamp = work / "tree.json"
    inputs = hashlib.sha256(
        (LSMOD.read_text() + FRAGMENT.read_text() + PATCH.read_text()).encode()
    ).hexdigest()
    try:
        known = json.loads(stamp.read_text())
        fresh = known.get("recipe") == RECIPE and known.get("inputs_sha256") == inputs
    except (OSError, ValueError):
        known, fresh = {}, False
    if not fresh or not (work / "linux" / ".git").is_dir():
        stamp.unlink(missing_ok=True)
        install_build_packages()
        shas = commits(work)
        tree = work / "linux"
        config = make_config(work, tree)
        known = {
            "recipe": RECIPE,
            "inputs_sha256": inputs,
            "tree": str(tree),
            "config": str(config),
            "kernelversion": kernelversion(tree),
            **shas,
        }
        stamp.write_text(json.dumps(known, indent=1) + "\n")
    extra = builder_inputs(work, Path(known["config"]))
    if any(known.get(k) != v for k, v in extra.items()):
        known.update(extra)
        stamp.write_text(json.dumps(known, indent=1) + "\n")
    if args.json:
        print(json.dumps(known, indent=1))
        return
    for key in ("tree", "config", "hook", "build_cache", "bisect_cache", "xdg_cache_home",
                "kernelversion", "base", "planted_parent", "planted"):  # fmt: skip
        print(f"{key}={known[key]}")
    for key in ("planted_tip", "harmless_tip", "reverted_tip", "unbuildable",
                "unbuildable_planted", "unbuildable_tip"):  # fmt: skip
        print(f"{key}={known[key]}")


if __name__ == "__main__":
    main()
