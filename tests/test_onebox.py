"""`iolab ab PLAN --here` on this machine, without booting it: the refusals, the resume unit
(installed before the first block, kept across a boot, removed when the run ends or is
cancelled), the attempt states a boot leaves, and a whole A/B whose samples need no boot
(`reboot: per-switch` on the running kernel) measured on real loop devices with real fio.

The boot itself is the guest's to prove (tests/test_guest_onebox.py): this machine is never
kexec'd — the host config's `boot` hook here is `true`, which boots nothing, so each resume
finds the box still on the boot that asked (`lost`, asked again).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolab.runs import resume_unit
from iolab.store import leases, open_store

pytestmark = pytest.mark.lab
RELEASE = platform.release()

PLAN = f"""\
name: onebox
target: {{size: 32M}}
filesystem: {{type: ext4, mkfs_options: -m 1}}
workload:
  fio: |
    [w]
    filename={{mnt}}/f
    size=2M
    bs=4k
    rw=randwrite
    ioengine=psync
    runtime=300ms
    time_based=1
variants:
  old: {{kernel: {RELEASE}}}
  new: {{kernel: {{release: {RELEASE}, cmdline: "loglevel=4"}}}}
kpis: [write.iops]
prepare: {{drop_caches: false}}
"""

# both variants on the running kernel and its command line: per-switch boots for neither
NO_BOOT_PLAN = (
    PLAN.replace("name: onebox", "name: onebox-noboot")
    .replace(f"new: {{kernel: {{release: {RELEASE}, cmdline: \"loglevel=4\"}}}}",
             f"new: {{kernel: {RELEASE}, fio: {{bs: 16k}}}}")
    .replace("kpis:", "reboot: per-switch\nkpis:")
)  # fmt: skip


@pytest.fixture
def box(tmp_path: Path) -> Iterator[dict[str, str]]:
    env = dict(os.environ)
    env.update(
        IOLAB_DB=str(tmp_path / "store.db"),
        IOLAB_JOURNAL_DIR=str(tmp_path / "journal"),
        IOLAB_SYSTEMD_DIR=str(tmp_path / "units"),
        IOLAB_KERNEL_STATE=str(tmp_path / "kernel-switch.json"),
        IOLAB_HOST_CONFIG=str(tmp_path / "host.toml"),
    )
    (tmp_path / "host.toml").write_text('name = "box"\n[hooks]\nboot = ["true"]\n')
    (tmp_path / "plan.yaml").write_text(PLAN)
    (tmp_path / "noboot.yaml").write_text(NO_BOOT_PLAN)
    try:
        yield env
    finally:
        subprocess.run([sys.executable, "-m", "iolab", "cleanup"], env=env, capture_output=True)


def iolab(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "iolab", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def one_line(proc: subprocess.CompletedProcess[str], code: int) -> str:
    assert proc.returncode == code, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("iolab: "), proc.stderr
    return lines[0]


def attempts(env: dict[str, str], run_id: int) -> list[leases.Attempt]:
    with open_store(env["IOLAB_DB"]) as store:
        return leases.attempts(store, run_id)


def status(env: dict[str, str], run_id: int) -> str:
    with open_store(env["IOLAB_DB"]) as store:
        return store.run(run_id).status


def unit_files(env: dict[str, str], run_id: int) -> list[Path]:
    units = Path(env["IOLAB_SYSTEMD_DIR"])
    name = resume_unit.name(run_id)
    return [p for p in (units / name, units / "multi-user.target.wants" / name) if p.exists()]


def test_refusals_before_a_run_exists(box: dict[str, str], tmp_path: Path) -> None:
    plan = str(tmp_path / "plan.yaml")
    line = one_line(iolab(box, "ab", plan), 2)
    assert "--here" in line and "--fleet" in line  # the kernel plan says where it can run
    line = one_line(iolab(box, "ab", plan, "--here", "--fleet", "lab"), 2)
    assert "not both" in line
    plain = tmp_path / "plain.yaml"
    plain.write_text(PLAN.split("variants:")[0] + "variants:\n  a: {fio: {bs: 4k}}\n"
                     "  b: {fio: {bs: 8k}}\nkpis: [write.iops]\n")  # fmt: skip
    line = one_line(iolab(box, "ab", str(plain), "--here"), 2)
    assert "names none" in line
    bad = dict(box, IOLAB_HOST_CONFIG=str(tmp_path / "nope.toml"))
    line = one_line(iolab(bad, "ab", plan, "--here"), 2)
    assert "nope.toml" in line
    if not Path("/run/systemd/system").is_dir():  # a machine without systemd: no resume
        plain_env = {k: v for k, v in box.items() if k != "IOLAB_SYSTEMD_DIR"}
        line = one_line(iolab(plain_env, "ab", plan, "--here"), 2)
        assert "systemd" in line
    assert not Path(box["IOLAB_DB"]).exists()  # nothing was stored, no store made


def test_a_boot_hands_the_run_to_the_unit_and_cancel_removes_it(
    box: dict[str, str], tmp_path: Path
) -> None:
    plan = str(tmp_path / "plan.yaml")
    proc = iolab(box, "ab", plan, "--here", "--max-blocks", "2", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    unit = resume_unit.name(1)
    assert f"{unit} continues the run after the boot" in proc.stderr
    assert proc.stdout == ""  # no report: the run goes on after the boot
    assert status(box, 1) == "running"
    (first,) = attempts(box, 1)
    assert (first.block, first.state, first.boot_kernel) == (1, "booting", RELEASE)
    switch = json.loads(Path(box["IOLAB_KERNEL_STATE"]).read_text())
    assert switch["token"] == "run 1 block 1 attempt 1 position 1"
    path, link = unit_files(box, 1)
    assert link.resolve() == path.resolve()
    text = path.read_text()
    db = str(Path(box["IOLAB_DB"]).resolve())
    assert f" --db {db} ab --resume 1 --here --format json\n" in text
    assert "StandardOutput=journal" in text and "WantedBy=multi-user.target" in text
    assert f"Environment=IOLAB_HOST_CONFIG={box['IOLAB_HOST_CONFIG']}" in text
    assert str(Path(db).parent) in text.split("RequiresMountsFor=")[1].splitlines()[0]

    # what the unit runs, on a box that did not boot: asked again, by a new attempt
    again = iolab(box, "ab", "--resume", "1", "--here", "--format", "json")
    assert again.returncode == 0, again.stderr
    assert "did not boot" in again.stderr
    assert [(a.attempt, a.state) for a in attempts(box, 1)] == [(1, "lost"), (2, "booting")]
    assert unit_files(box, 1)  # still there for the boot

    done = iolab(box, "cancel", "1")
    assert done.returncode == 0, done.stderr
    assert f"{unit} removed" in done.stdout + done.stderr
    assert not unit_files(box, 1)
    assert status(box, 1) == "cancelled"  # `iolab cancel` of a run whose process is gone


def test_a_run_that_needs_no_boot_ends_here_and_removes_its_unit(
    box: dict[str, str], tmp_path: Path
) -> None:
    """Per-switch on the running kernel: every sample measured in this boot, under the
    kernel blocks' leases and boot records; the unit goes with the run's end."""
    proc = iolab(
        box, "ab", str(tmp_path / "noboot.yaml"), "--here", "--max-blocks", "2",
        "--format", "json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert "reboot per switch (4 samples in 1 boots)" in json.dumps(report)
    assert not unit_files(box, 1)
    assert status(box, 1) == "finished"
    assert [(a.block, a.state) for a in attempts(box, 1)] == [(1, "finished"), (2, "finished")]
    out = iolab(box, "results", "--run", "1", "--json")
    samples = json.loads(out.stdout)
    assert len(samples) == 4
    for s in samples:
        boot = s["provenance"]["boot"]
        assert boot["release"] == RELEASE and boot["booted_for_sample"] is False


def test_the_warm_up_runs_once_per_boot_not_once_per_block(
    box: dict[str, str], tmp_path: Path
) -> None:
    """`warmups: 1` on one boot: the second block begins on the boot the first ended on (a
    lab session of its own) and does not warm up again; only the run's first sample follows
    a warm-up, and the boot's mark names the run and the boot."""
    plan = tmp_path / "warm.yaml"
    plan.write_text(NO_BOOT_PLAN.replace("kpis:", "warmups: 1\nkpis:"))
    proc = iolab(box, "ab", str(plan), "--here", "--max-blocks", "2", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    samples = json.loads(iolab(box, "results", "--run", "1", "--json").stdout)
    assert len(samples) == 4
    by_order = sorted(samples, key=lambda s: (s["block"], s["position"]))
    assert [s["provenance"].get("warmups") for s in by_order] == [1, None, None, None]
    mark = json.loads(Path(box["IOLAB_KERNEL_STATE"]).with_suffix(".warm").read_text())
    boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert mark == {"run": 1, "boot_id": boot_id}
    assert "1 unmeasured warm-up samples before them" in proc.stdout


def test_the_unit_text_takes_paths_literally(tmp_path: Path) -> None:
    text = resume_unit.text(7, ["/opt/x%y/iolab", "--db", "/srv/a b$c.db"], ["/srv"])
    assert "ExecStart=/opt/x%%y/iolab --db '/srv/a b$$c.db'\n" in text
    assert "RequiresMountsFor=/srv\n" in text


def test_a_store_url_keeps_the_unit_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IOLAB_SYSTEMD_DIR", str(tmp_path))
    path = resume_unit.install(3, ["iolab", "--db", "postgresql+psycopg://u:pw@h/db"])
    assert path.stat().st_mode & 0o777 == 0o600
    assert resume_unit.remove(3) and not path.exists() and not resume_unit.remove(3)
    plain = resume_unit.install(4, ["iolab", "--db", "/srv/s.db"])
    assert plain.stat().st_mode & 0o777 == 0o644
    resume_unit.remove(4)


def test_bisect_over_releases_here_hands_over_its_boots(
    box: dict[str, str], tmp_path: Path
) -> None:
    """`bisect --kernels R1,R2 --here`: the same blocks and unit as an A/B; the releases
    need not be installed for a `boot` hook that boots nothing."""
    plan = tmp_path / "one.yaml"
    plan.write_text(PLAN.split("variants:")[0] + "kpis: [write.iops]\n")
    kernels = "6.1.0-1-test,6.1.0-2-test"
    line = one_line(iolab(box, "bisect", str(plan), "--kernels", kernels), 2)
    assert "--here" in line
    line = one_line(iolab(box, "bisect", str(plan), "--kernels", kernels, "--here",
                          "--fleet", "lab"), 2)  # fmt: skip
    assert "not with --fleet" in line
    proc = iolab(box, "bisect", str(plan), "--kernels", kernels, "--here", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert f"{resume_unit.name(1)} continues the run after the boot" in proc.stderr
    (first,) = attempts(box, 1)
    assert first.state == "booting" and first.boot_kernel in kernels.split(",")
    (path, _) = unit_files(box, 1)
    assert " bisect --resume 1 --here --format json\n" in path.read_text()
    again = iolab(box, "bisect", "--resume", "1", "--here")
    assert again.returncode == 0 and "did not boot" in again.stderr, again.stderr
    assert [a.state for a in attempts(box, 1)] == ["lost", "booting"]
    assert iolab(box, "cancel", "1").returncode == 0
    assert not unit_files(box, 1)


def test_the_lab_is_undone_before_the_boot_is_fired(
    box: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Per-switch, a block's first sample runs on this kernel and its second asks for a
    boot: the lab session is closed (its journal gone, its loop images deleted) before the
    boot is fired, so a direct kexec a second later cuts no undo and writes none of the
    images out.  In process, the boot's `fire` replaced by a look at the journals."""
    from click.testing import CliRunner

    from iolab.cli.main import cli
    from iolab.kernels import order, switch
    from iolab.lab.journal import leftovers

    seed = next(s for s in range(1000) if order.paired_block_order(s, 1, 2) == [0, 1])
    plan = tmp_path / "half.yaml"
    plan.write_text(PLAN.replace("kpis:", f"reboot: per-switch\nseed: {seed}\nkpis:"))
    for key, value in box.items():
        monkeypatch.setenv(key, value)
    journals = Path(box["IOLAB_JOURNAL_DIR"])
    at_fire: list[list[str]] = []

    def fire(
        commands: object, delay_s: float = 1.0, stamp: Path | None = None, end: int | None = None
    ) -> None:
        assert end is None  # the box's own process ends by itself: it is never killed
        at_fire.append([str(left.path) for left in leftovers(journals)])

    monkeypatch.setattr(switch, "fire", fire)
    result = CliRunner().invoke(cli, ["ab", str(plan), "--here", "--max-blocks", "2"])
    assert result.exit_code == 0, result.output
    assert at_fire == [[]]  # fired once, with no lab journal left open
    out = iolab(box, "results", "--run", "1", "--json")
    assert [s["variant"] for s in json.loads(out.stdout)] == ["old"]  # measured before it
    # (no `iolab cancel`: this test's own process owns the run, and would get its SIGTERM)


def test_a_block_left_half_done_by_a_boot_is_finished_not_replayed(
    box: dict[str, str], tmp_path: Path
) -> None:
    """Per-switch: the first sample of block 1 runs on this kernel (stored at once), the
    second asks for a boot.  The resume replays no block — block 1 is not fed to the
    decisions with one variant — and the block goes on, its stored sample kept."""
    from iolab.kernels.order import paired_block_order

    seed = next(s for s in range(1000) if paired_block_order(s, 1, 2) == [0, 1])  # old first
    plan = tmp_path / "half.yaml"
    plan.write_text(PLAN.replace("kpis:", f"reboot: per-switch\nseed: {seed}\nkpis:"))
    first = iolab(box, "ab", str(plan), "--here", "--max-blocks", "2")
    assert first.returncode == 0, first.stderr
    assert "booting" in first.stderr
    out = iolab(box, "results", "--run", "1", "--json")
    (stored,) = json.loads(out.stdout)
    assert stored["variant"] == "old" and stored["block"] == 1
    again = iolab(box, "ab", "--resume", "1", "--here")
    assert again.returncode == 0, again.stderr
    assert "ab run 1 resumed at block 1 (no block had ended)" in again.stderr
    assert [(a.block, a.state) for a in attempts(box, 1)] == [(1, "lost"), (1, "booting")]
    out = iolab(box, "results", "--run", "1", "--json")
    assert [s["variant"] for s in json.loads(out.stdout)] == ["old"]  # not measured again
    assert iolab(box, "cancel", "1").returncode == 0
