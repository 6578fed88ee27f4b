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
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from fleet_env import Fleet
from guest_fixtures import PLAN
from iolab.store import leases, open_store
from test_guest_kernels import (
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


def setup_files(tmp_path: Path) -> tuple[Path, list[str], Path, Path, Path]:
    """The repository, its shas, the build hook, the guest's hooks and the plan."""
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
    return repo, shas, hook, hooks, plan


def check_run(fl: Fleet, environ: dict[str, str], run_id: int, shas: list[str]) -> None:
    """Every sample once, in a boot of its own, on the release its commit built."""
    with open_store(fl.db) as store:
        meta = store.run(run_id).meta
    built = {sha: rec["release"] for sha, rec in meta["kernel_builds"].items() if rec["ok"]}
    assert built[shas[0]] == KERNELS[0] and built[shas[-1]] == KERNELS[-1], built
    assert meta["kernel_artifacts_removed"] == len(built)
    samples = results(environ, run_id)
    assert samples
    keys = Counter((s["variant"], s["block"]) for s in samples)
    assert max(keys.values()) == 1, keys
    for s in samples:
        assert s["status"] == "ok", s["reason"]
        boot = s["provenance"]["boot"]
        # the release its commit built: installed in the guest (the image has none of them)
        assert boot["release"] == built[s["variant"]], (s["variant"], boot)
        assert boot["booted_for_sample"] is True and boot["from_boot_id"] != boot["boot_id"]
    boots = [s["provenance"]["boot"]["boot_id"] for s in samples]
    assert len(set(boots)) == len(boots)
    blocks = max(s["block"] for s in samples)
    releases = sorted(set(built.values()))
    print(f"run {run_id}: {len(samples)} samples in {blocks} blocks, releases {releases}")


def bisect_args(
    plan: Path, repo: Path, shas: list[str], hook: Path, tmp: Path, name: str
) -> list[str]:
    return [
        "bisect", str(plan), "--kernel-repo", str(repo), "--good", shas[0], "--bad", shas[-1],
        "--kernel-build", str(hook), "--cache", str(tmp / "cache"), "--fleet", name,
        "--max-blocks", "6", "--margin", "50",
    ]  # fmt: skip


@long_scenario
@pytest.mark.timeout(3600)
def test_kernel_git_bisect_in_a_guest(
    fleet: Fleet,  # noqa: F811
    env: dict[str, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    name = "kgb-" + secrets.token_hex(2)
    repo, shas, hook, hooks, plan = setup_files(tmp_path)
    run_env = {**env, "DEBS": str(DEBS)}
    try:
        guest_up(env, fleet, name, "--hooks", str(hooks))
        wait_for(lambda: worker_up(fleet, name), 240, f"the worker in {name}\n{log_of(env, name)}")
        args = bisect_args(plan, repo, shas, hook, tmp_path, name)
        proc = iolab(run_env, *args, "--format", "json", timeout=2400)
        # packaged kernels of one series measure alike under TCG: no culprit is honest
        assert proc.returncode in (21, 22), proc.stderr + log_of(env, name)
        report = json.loads(proc.stdout)
        assert report["result"] in ("no regression", "not known"), report
        print(f"result: {report['result']} (exit {proc.returncode}): {report.get('reason')}")
        assert report["good"]["sha"] == shas[0] and report["bad"]["sha"] == shas[-1]
        check_run(fleet, env, newest_run(fleet), shas)
        # each end built once (the engine asks for them in every block)
        assert proc.stderr.count(" built: kernel ") == 2 and " cached: " not in proc.stderr
    finally:
        guest_down(env, name)


@long_scenario
@pytest.mark.timeout(3600)
def test_kernel_git_bisect_resumed_after_ctrl_c(
    fleet: Fleet,  # noqa: F811
    env: dict[str, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    """Ctrl-C once the second block is under way, then `bisect --resume ID`: the first block
    is replayed (not measured again) and the bisect ends with a documented result, every
    sample once."""
    name = "kgr-" + secrets.token_hex(2)
    repo, shas, hook, hooks, plan = setup_files(tmp_path)
    run_env = {**env, "DEBS": str(DEBS)}
    try:
        guest_up(env, fleet, name, "--hooks", str(hooks))
        wait_for(lambda: worker_up(fleet, name), 240, f"the worker in {name}\n{log_of(env, name)}")
        args = bisect_args(plan, repo, shas, hook, tmp_path, name)
        controller = subprocess.Popen(
            [sys.executable, "-m", "iolab", *args],
            env=run_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:

            def second_block() -> bool:
                with open_store(fleet.db) as store:
                    runs = store.runs()
                    return bool(runs) and any(
                        a.block == 2 for a in leases.attempts(store, runs[-1].id)
                    )

            wait_for(second_block, 1500, f"block 2\n{log_of(env, name)}")
            controller.send_signal(signal.SIGINT)
            _out, err = controller.communicate(timeout=300)
        finally:
            if controller.poll() is None:
                controller.kill()
                controller.wait()
        assert controller.returncode == 5, err
        assert "--resume" in err
        run_id = newest_run(fleet)
        proc = iolab(run_env, "bisect", "--resume", str(run_id), "--format", "json", timeout=2400)
        assert proc.returncode in (21, 22), proc.stderr + log_of(env, name)
        assert "(blocks 1-" in proc.stderr and "replayed" in proc.stderr, proc.stderr
        report = json.loads(proc.stdout)
        assert report["result"] in ("no regression", "not known"), report
        print(f"result: {report['result']} (exit {proc.returncode}): {report.get('reason')}")
        print(proc.stderr.splitlines()[0])
        check_run(fleet, env, run_id, shas)
    finally:
        guest_down(env, name)
