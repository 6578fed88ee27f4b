"""A kernel bisect over a git range, end to end on a QEMU guest (docs/kernels.md).

A throwaway git repository whose commits each name a real packaged Debian kernel that the
guest image does not carry (6.1.0-48, -49, -51); the build hook "builds" a commit by fetching
that package (`apt-get download`, cached under /var/cache/iolab/debs) and declaring it in its
manifest.  The controller uploads each package to the store; the guest's worker fetches it,
installs it with its `install` hook (`dpkg -i`, real: postinst and update-initramfs inside the
guest), kexecs into it and checks the release.  Each sample's provenance shows the release of
its commit.  Several boots under TCG: runs with IOLAB_GUEST_LONG=1 (bench/guest-kernels).
"""

from __future__ import annotations

import json
import secrets
import subprocess
from pathlib import Path

import pytest

from fleet_env import Fleet
from iolab.store import open_store
from test_guest_kernels import (
    PLAN,
    env,  # noqa: F401  (fixture)
    fleet,  # noqa: F401  (fixture)
    guest_down,
    guest_up,
    iolab,
    log_of,
    long_scenario,
    newest_run,
    pytestmark,  # noqa: F401
    results,
    wait_for,
    worker_up,
)

KERNELS = ("6.1.0-48-cloud-amd64", "6.1.0-49-cloud-amd64", "6.1.0-51-cloud-amd64")
DEBS = Path("/var/cache/iolab/debs")

HOOK = """\
#!/bin/sh
# "builds" this commit: fetches the packaged kernel its kernel.txt names
set -eu
rel=$(cat kernel.txt)
mkdir -p "$DEBS"
deb=$(ls "$DEBS"/linux-image-"$rel"_*_amd64.deb 2>/dev/null | head -n 1 || true)
if [ -z "$deb" ]; then
  (cd "$DEBS" && apt-get download -q "linux-image-$rel")
  deb=$(ls "$DEBS"/linux-image-"$rel"_*_amd64.deb | head -n 1)
fi
cp "$deb" "$IOLAB_KERNEL_OUT/"
printf '{"release": "%s", "artifacts": ["%s"], "release_without_sha": "%s"}\\n' \\
  "$rel" "$(basename "$deb")" "packaged Debian kernel standing in for $IOLAB_KERNEL_SHA12" \\
  > "$IOLAB_KERNEL_OUT/manifest.json"
"""


def make_repo(path: Path) -> list[str]:
    """One commit per kernel, oldest first; their shas."""
    path.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(path), *args], check=True, capture_output=True, text=True
        ).stdout.strip()

    git("init", "-q", "-b", "main")
    git("config", "user.email", "lab@example.invalid")
    git("config", "user.name", "lab")
    shas = []
    for release in KERNELS:
        (path / "kernel.txt").write_text(release + "\n")
        git("add", "kernel.txt")
        git("commit", "-q", "-m", f"kernel {release}")
        shas.append(git("rev-parse", "HEAD"))
    return shas


@long_scenario
@pytest.mark.timeout(3600)
def test_kernel_git_bisect_in_a_guest(
    fleet: Fleet,  # noqa: F811
    env: dict[str, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    name = "kgb-" + secrets.token_hex(2)
    repo = tmp_path / "linux"
    shas = make_repo(repo)
    hook = tmp_path / "build-hook"
    hook.write_text(HOOK)
    hook.chmod(0o755)
    hooks = tmp_path / "hooks.toml"
    hooks.write_text('[hooks]\ninstall = ["dpkg", "-i", "{artifact}"]\n')
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        PLAN.split("variants:")[0] + "kpis: [write.iops]\nprepare: {drop_caches: false}\n"
    )
    run_env = {**env, "DEBS": str(DEBS)}
    try:
        guest_up(env, fleet, name, "--hooks", str(hooks))
        wait_for(lambda: worker_up(fleet, name), 240, f"the worker in {name}\n{log_of(env, name)}")
        proc = iolab(
            run_env, "bisect", str(plan), "--kernel-repo", str(repo), "--good", shas[0],
            "--bad", shas[-1], "--kernel-build", str(hook), "--cache", str(tmp_path / "cache"),
            "--fleet", name, "--max-blocks", "6", "--margin", "50", "--format", "json",
            timeout=2400,
        )  # fmt: skip
        # packaged kernels of one series measure alike under TCG: no culprit is honest
        assert proc.returncode in (21, 22), proc.stderr + log_of(env, name)
        report = json.loads(proc.stdout)
        assert report["result"] in ("no regression", "not known"), report
        assert report["good"]["sha"] == shas[0] and report["bad"]["sha"] == shas[-1]
        run_id = newest_run(fleet)
        with open_store(fleet.db) as store:
            meta = store.run(run_id).meta
        built = {sha: rec["release"] for sha, rec in meta["kernel_builds"].items() if rec["ok"]}
        assert built[shas[0]] == KERNELS[0] and built[shas[-1]] == KERNELS[-1], built
        assert meta["kernel_artifacts_removed"] == len(built)
        samples = results(env, run_id)
        assert samples
        for s in samples:
            assert s["status"] == "ok", s["reason"]
            boot = s["provenance"]["boot"]
            # the release its commit built: installed in the guest (the image has none of them)
            assert boot["release"] == built[s["variant"]], (s["variant"], boot)
            assert boot["booted_for_sample"] is True and boot["from_boot_id"] != boot["boot_id"]
        boots = [s["provenance"]["boot"]["boot_id"] for s in samples]
        assert len(set(boots)) == len(boots)
        # the ends are built once; a second bisect would take them from the cache
        assert "cached" not in proc.stderr
    finally:
        guest_down(env, name)
