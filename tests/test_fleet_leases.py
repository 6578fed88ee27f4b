"""The lease rules in the real store (SQLite and PostgreSQL): one claim wins, a duplicate
message measures nothing, a late result of an expired attempt is not stored, every attempt
ends in exactly one terminal state; and a local run's blocks get the same leases."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolab.model.sample import Sample
from iolab.store import leases, open_store
from iolab.store.store import Store
from store_backends import BACKENDS, location_for


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    for location in location_for(request.param, tmp_path):
        with open_store(location) as opened:
            yield opened


def _sample(run_id: int, block: int, variant: str, host: str) -> Sample:
    return Sample(
        run_id=run_id, variant=variant, cell={}, block=block, metrics={"x": 1.0}, host=host
    )


def test_one_claim_wins_and_a_duplicate_measures_nothing(store: Store) -> None:
    run_id = store.create_run("lab")
    attempt = leases.new_attempt(store, run_id, 1, host_class="lab")
    assert attempt.attempt == 1 and attempt.state == "queued"
    wins: list[object] = []
    threads = [
        threading.Thread(target=lambda h=h: wins.append(leases.claim(store, run_id, 1, 1, h)))
        for h in ("h1", "h2", "h3")
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(w is not None for w in wins) == 1
    assert leases.state_of(store, run_id, 1, 1) == "running"
    winner = next(w for w in wins if w is not None)
    assert isinstance(winner, leases.Attempt)
    assert leases.store_block(store, winner.id, [_sample(run_id, 1, "a", str(winner.host))])
    # the same message delivered again (visibility timeout, a restart): nothing to claim
    assert leases.claim(store, run_id, 1, 1, "h2") is None
    assert leases.store_block(store, winner.id, [_sample(run_id, 1, "b", "h2")]) is False
    assert [s.variant for s in store.samples(run_id)] == ["a"]
    assert [s.host for s in store.samples(run_id)] == [winner.host]


def test_a_late_result_of_an_expired_attempt_is_not_stored(store: Store) -> None:
    run_id = store.create_run("lab")
    first = leases.new_attempt(store, run_id, 3, host_class="lab")
    claimed = leases.claim(store, run_id, 3, 1, "slow")
    assert claimed is not None
    time.sleep(1.2)
    (gone,) = leases.expire(store, run_id, grace_s=1.0)
    assert gone.id == first.id and gone.state == "lost"
    assert leases.heartbeat(store, first.id) is False
    second = leases.new_attempt(store, run_id, 3, host_class="lab")
    assert second.attempt == 2
    assert leases.claim(store, run_id, 3, 2, "fast") is not None
    assert leases.store_block(store, second.id, [_sample(run_id, 3, "a", "fast")])
    assert leases.store_block(store, first.id, [_sample(run_id, 3, "a", "slow")]) is False
    assert [s.host for s in store.samples(run_id)] == ["fast"]
    states = {a.attempt: a.state for a in leases.attempts(store, run_id)}
    assert states == {1: "lost", 2: "finished"}
    assert leases.end(store, first.id, "finished") is False  # ended once, for good


def test_hosts_drain_quarantine_and_undrain(store: Store) -> None:
    leases.register_host(store, "h1", "lab", kernel="6.1", boot_id="b", devices=[])
    assert leases.host_heartbeat(store, "h1", "run 1 block 1") is not None
    assert leases.hosts(store)[0].state == "busy"
    leases.set_host_state(store, "h1", "quarantined", "silent")
    row = leases.host_heartbeat(store, "h1", None)
    assert row is not None and row.state == "quarantined"  # its heartbeat does not lift it
    assert leases.set_drained(store, "h1", True)
    assert leases.hosts(store)[0].drained
    assert leases.set_drained(store, "h1", False)
    row = leases.host_heartbeat(store, "h1", None)
    assert row is not None and row.state == "idle" and not row.drained
    assert leases.set_drained(store, "nobody", True) is False


LOCAL_PLAN = """\
name: local-lease
target: {size: 32M}
filesystem: {type: ext4}
workload:
  fio: |
    [w]
    filename={mnt}/f
    size=1M
    bs=64k
    rw=write
repeat: 2
kpis: [write.iops]
prepare: {drop_caches: false}
"""


@pytest.mark.lab
def test_a_local_run_takes_a_lease_per_block(tmp_path: Path) -> None:
    import os
    import socket
    import subprocess
    import sys

    plan = tmp_path / "plan.yaml"
    plan.write_text(LOCAL_PLAN)
    env = dict(os.environ, IOLAB_DB=str(tmp_path / "s.db"), IOLAB_JOURNAL_DIR=str(tmp_path / "j"))
    done = subprocess.run(
        [sys.executable, "-m", "iolab", "run", str(plan), "-q"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    with open_store(env["IOLAB_DB"]) as store:
        (run,) = store.runs()
        tried = leases.attempts(store, run.id)
        samples = store.samples(run.id)
    assert [(a.block, a.attempt, a.state) for a in tried] == [
        (1, 1, "finished"),
        (2, 1, "finished"),
    ]
    assert {a.host for a in tried} == {s.host for s in samples} == {socket.gethostname()}


def _iolab(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "iolab", *args], capture_output=True, text=True, timeout=60, env=env
    )
    return done.returncode, done.stdout, done.stderr


def test_the_worker_unit_and_its_refusals(tmp_path: Path) -> None:
    import os

    code, unit, _ = _iolab("worker", "--print-unit")
    assert code == 0
    assert "ExecStart=" in unit and " worker --config /etc/iolab/host.toml" in unit
    assert "EnvironmentFile=/etc/iolab/worker.env" in unit and "Restart=on-failure" in unit
    env = dict(os.environ, IOLAB_BROKER="redis://127.0.0.1:1/0")
    store = tmp_path / "s.db"
    code, _, err = _iolab("worker", "--db", str(store), env=env)
    assert code == 2 and err.count("\n") == 1 and "PostgreSQL" in err
    assert not store.exists()
    config = tmp_path / "host.toml"
    config.write_text('name = "h1"\ndevice = ["/dev/sdz"]\n')
    code, _, err = _iolab(
        "worker", "--config", str(config), "--db", "postgresql+psycopg://x@127.0.0.1:1/x", env=env
    )
    assert code == 2 and "unknown key 'device'" in err and err.count("\n") == 1
    config.write_text('[hooks]\nboot = "reboot now"\n')
    code, _, err = _iolab("worker", "--config", str(config), env=env)
    assert code == 2 and "hooks.boot must be a non-empty list" in err


def test_a_host_config_with_hooks() -> None:
    import textwrap

    from iolab.fleet.config import load

    text = textwrap.dedent("""\
        name = "qemu-1"
        class = "guests"
        devices = ["/dev/vdb"]
        [hooks]
        boot = ["/usr/local/sbin/boot", "{kernel}"]
        check = ["uname", "-r"]
        """)
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".toml") as fh:
        fh.write(text)
        fh.flush()
        config = load(fh.name)
        assert (config.name, config.host_class, config.devices) == (
            "qemu-1",
            "guests",
            ("/dev/vdb",),
        )
        assert config.hooks["check"] == ("uname", "-r")
        assert load(fh.name, name="other", host_class="c2").name == "other"
        assert config.kexec == "systemd"  # the default: systemd stops every service


def test_a_host_config_says_how_a_kexec_ends_the_system(tmp_path: Path) -> None:
    from iolab.errors import IolabError
    from iolab.fleet.config import load
    from iolab.guest.hosts import _host_toml

    config = tmp_path / "host.toml"
    config.write_text('name = "h1"\nkexec = "direct"\n')
    assert load(str(config)).kexec == "direct"
    config.write_text('name = "h1"\nkexec = "reboot"\n')
    with pytest.raises(IolabError, match='kexec is "systemd" or "direct"'):
        load(str(config))
    # a guest host (a throw-away overlay for its root) jumps directly unless asked otherwise
    config.write_text(_host_toml("g1", "default"))
    assert load(str(config)).kexec == "direct"
    config.write_text(_host_toml("g1", "default", kexec="systemd"))
    assert load(str(config)).kexec == "systemd"


def test_only_the_controllers_config_names_a_command(tmp_path: Path) -> None:
    """A host cannot hand the controller a command: a host config with a power_cycle hook
    is refused, a host row has no column for one, and the controller's power cycle of a
    host comes from its own fleet.toml (or, for a guest this machine started, `iolab guest
    power-cycle`) and from nothing else."""
    import os

    from iolab.errors import IolabError
    from iolab.fleet import power
    from iolab.fleet.config import load
    from iolab.store.schema import fleet_hosts

    host = tmp_path / "host.toml"
    host.write_text('[hooks]\npower_cycle = ["touch", "/tmp/owned"]\n')
    with pytest.raises(IolabError, match="power_cycle is run by the controller"):
        load(str(host))
    assert set(fleet_hosts.c.keys()) == {
        "name", "host_class", "state", "drained", "reason", "heartbeat_at", "started_at",
        "kernel", "boot_id", "current_job", "devices", "cmdline", "device_names", "provides",
        "version",
    }  # fmt: skip
    fleet = tmp_path / "fleet.toml"
    fleet.write_text('[hosts.ssd-01]\npower_cycle = ["ipmitool", "power", "cycle"]\n')
    env = {"IOLAB_FLEET_CONFIG": str(fleet), "IOLAB_GUEST_STATE": str(tmp_path / "guests")}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        config = power.load()
        assert config.power_cycle("ssd-01") == ["ipmitool", "power", "cycle"]
        assert config.power_cycle("ssd-02") is None
        (tmp_path / "guests" / "g1").mkdir(parents=True)
        (tmp_path / "guests" / "g1" / "state.json").write_text("{}")
        assert config.power_cycle("g1")[-2:] == ["power-cycle", "g1"]  # type: ignore[index]
        assert config.power_cycle("../g1") is None
        fleet.write_text('[hosts.ssd-01]\nboot = ["reboot"]\n')
        with pytest.raises(IolabError, match="unknown hook 'boot'; hooks: power_cycle"):
            power.load()
        fleet.write_text("hosts = 3\n")
        with pytest.raises(IolabError, match=r"\[hosts\] is a table"):
            power.load()
        os.environ["IOLAB_FLEET_CONFIG"] = str(tmp_path / "missing.toml")
        with pytest.raises(IolabError, match="cannot read the fleet config"):
            power.load()
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def test_a_host_config_with_named_devices_and_provides(tmp_path: Path) -> None:
    from iolab.errors import IolabError, RefusedError
    from iolab.fleet.config import load
    from iolab.fleet.worker import host_devices

    path = tmp_path / "host.toml"
    path.write_text('provides = ["dm-multipath", "nvme"]\n[devices]\nscratch = "/dev/null"\n')
    config = load(str(path), name="h1")
    assert config.devices == ("/dev/null",) and config.device_names == {"scratch": "/dev/null"}
    assert config.provides == ("dm-multipath", "nvme")
    text = 'target: {devices: ["{dev:scratch}"]}\n'
    assert host_devices(text, config) == 'target: {devices: ["/dev/null"]}\n'
    with pytest.raises(RefusedError, match="host h1 has no device named other"):
        host_devices(text.replace("scratch", "other"), config)
    path.write_text("provides = [1]\n")
    with pytest.raises(IolabError, match="provides is a list of names"):
        load(str(path))
    path.write_text('[devices]\nscratch = "sda"\n')
    with pytest.raises(IolabError, match="devices is a list"):
        load(str(path))


def test_what_a_store_is_waited_for() -> None:
    """A server down, starting or not made yet is waited for; a refusal waiting cannot
    mend (a certificate, a password, a role) is not."""
    from iolab.store.wait import transient

    for words in (
        'connection failed: connection to server at "10.0.0.1", port 5432 failed: '
        "Connection refused",
        "FATAL:  the database system is starting up",
        "server closed the connection unexpectedly",
        'FATAL:  database "iolab" does not exist',
    ):
        assert transient(words), words
    for words in (
        "connection failed: SSL error: certificate verify failed",
        'FATAL:  password authentication failed for user "iolab"',
        'FATAL:  role "x" does not exist',
        "not an iolab store (it holds other tables: t)",
    ):
        assert not transient(words), words


@pytest.mark.lab
def test_cancel_and_watch_a_local_run(tmp_path: Path) -> None:
    """A local run cancelled from another terminal: its process is interrupted, restores
    the machine (nothing left for `iolab cleanup`) and the run ends cancelled, which
    `watch` and `results` show and `--resume` refuses; `watch` followed it until then."""
    import os
    import subprocess
    import sys

    plan = tmp_path / "plan.yaml"
    plan.write_text(
        LOCAL_PLAN.replace("repeat: 2", "repeat: 40").replace(
            "rw=write", "rw=write\n    rate=1m\n    runtime=1\n    time_based=1"
        )
    )
    env = dict(os.environ, IOLAB_DB=str(tmp_path / "s.db"), IOLAB_JOURNAL_DIR=str(tmp_path / "j"))
    run = subprocess.Popen(
        [sys.executable, "-m", "iolab", "run", str(plan), "-q"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watch: subprocess.Popen[str] | None = None
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if (tmp_path / "s.db").exists():
                with open_store(env["IOLAB_DB"]) as store:
                    if store.runs() and store.runs()[0].n_samples >= 2:
                        break
            time.sleep(0.3)
        watch = subprocess.Popen(
            [sys.executable, "-m", "iolab", "watch", "1", "--interval", "0.2"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert watch.stdout is not None
        first = watch.stdout.readline()  # it is following the run
        code, out, err = _iolab("cancel", "1", env=env)
        assert code == 0, err
        assert "run 1 cancelled:" in out and "SIGTERM" in out
        _out, run_err = run.communicate(timeout=60)
        assert run.returncode == 5, run_err
        assert "run 1 cancelled (iolab cancel), machine restored" in run_err
        watched, _ = watch.communicate(timeout=30)
        assert watch.returncode == 0
        lines = [first, *watched.splitlines()]
        assert lines[0].startswith("run 1 (lab) running:") and "/40 samples" in lines[0]
        assert lines[-1].startswith("run 1 (lab) cancelled:")
    finally:
        for proc in (run, watch):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    with open_store(env["IOLAB_DB"]) as store:
        info = store.run(1)
        tried = leases.attempts(store, 1)
    assert info.status == "cancelled" and 2 <= info.n_samples < 40
    assert all(a.state in leases.TERMINAL for a in tried)
    code, out, _ = _iolab("results", env=env)
    assert code == 0 and "cancelled" in out, out
    code, _, err = _iolab("run", "--resume", "1", env=env)
    assert code == 2 and "run 1 was cancelled" in err and err.count("\n") == 1, err
    code, out, _ = _iolab("cleanup", env=env)
    assert code == 0 and "nothing" in out.lower(), out  # the run restored the machine itself
