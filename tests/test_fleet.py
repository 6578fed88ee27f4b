"""The fleet end to end, with real parts: Debian's redis-server, a PostgreSQL server, three
`iolab worker` processes each in a network namespace of its own (own address and hostname),
real fio on ext4 on loop devices — and the faults: a worker killed with -9, its link cut,
redis-server and PostgreSQL restarted, the controller killed with -9 and resumed, a host that
never comes back.  After each: every planned (case, block) stored exactly once, each block
on one host, every attempt in a terminal state."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fleet_env import Fleet, Host
from iolab.model.sample import RunInfo
from iolab.store import leases, open_store
from iolab.store.leases import Attempt

pytestmark = [
    pytest.mark.lab,
    pytest.mark.postgres,
    # one fleet at a time (namespaces, a PostgreSQL cluster, redis, three workers): the fleet
    # modules take turns on one pytest-xdist worker, as they did when the suite ran serially
    pytest.mark.xdist_group("fleet"),
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("redis-server") is None or shutil.which("ip") is None,
        reason="needs root, redis-server and iproute2",
    ),
]

PLAN = """\
name: fleet-test
target: {{size: 32M}}
filesystem: {{type: ext4, mkfs_options: -m 1, mount_options: noatime}}
workload:
  fio: |
    [w]
    filename={{mnt}}/f
    size=2M
    bs=4k
    rw=randwrite
    ioengine=psync
    rate=2m
    runtime={runtime}
    time_based=1
variants:
  fast: {{fio: {{rate: 4m}}}}
  slow: {{fio: {{rate: 1m}}}}
repeat: {repeat}
kpis: [write.iops]
prepare: {{drop_caches: false}}
"""

DEVICE_PLAN = """\
name: fleet-device
target: {{devices: [{device}]}}
filesystem: {{type: ext4}}
workload:
  fio: |
    [w]
    filename={{mnt}}/f
    size=1M
    rw=write
repeat: 1
kpis: [write.iops]
"""


@pytest.fixture(scope="module")
def fleet() -> Iterator[Fleet]:
    made = Fleet.make(3)
    try:
        open_store(made.db).close()  # the schema, before three workers race to create it
        for host in made.hosts:
            made.start_worker(host)
        wait_for(lambda: len(live_hosts(made)) == 3, 60, "three workers up")
        yield made
    finally:
        made.close()
    assert made.leftovers() == []


@pytest.fixture
def hosts(fleet: Fleet) -> Fleet:
    """Every worker running again before a test (a fault test may have stopped one)."""
    for host in fleet.hosts:
        fleet.link(host, True)
        if host.process is None or host.process.poll() is not None:
            fleet.start_worker(host)
    with open_store(fleet.db) as store:
        for host in fleet.hosts:
            leases.set_drained(store, host.name, False)  # lifts a quarantine too
    try:
        wait_for(lambda: len(live_hosts(fleet)) == 3, 60, "three workers up")
    except AssertionError:
        with open_store(fleet.db) as store:
            rows = leases.hosts(store)
        logs = "\n".join(h.log.read_text()[-1500:] for h in fleet.hosts if h.log is not None)
        raise AssertionError(f"three workers not up: {rows}\n{logs}") from None
    return fleet


def live_hosts(fleet: Fleet) -> list[str]:
    with open_store(fleet.db) as store:
        now = leases.server_now(store)
        return [
            h.name
            for h in leases.hosts(store, "lab")
            if h.state in ("idle", "busy")
            and h.heartbeat_at is not None
            and (now - h.heartbeat_at).total_seconds() < 3
        ]


def wait_for(check: Callable[[], object], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def write_plan(tmp_path: Path, *, runtime: str = "1", repeat: int = 6) -> Path:
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN.format(runtime=runtime, repeat=repeat))
    return path


def iolab(fleet: Fleet, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "iolab", *args],
        env=fleet.env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def controller(fleet: Fleet, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "iolab", *args],
        env=fleet.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def newest_run(fleet: Fleet) -> int:
    with open_store(fleet.db) as store:
        return store.runs()[-1].id


def new_run(fleet: Fleet, known: set[int]) -> int:
    """The run a controller just started: running, and not one of `known` (a run an earlier
    test's controller left behind must not be taken for it)."""
    found: list[int] = []

    def started() -> bool:
        found[:] = [r.id for r in _runs(fleet) if r.id not in known and r.status == "running"]
        return bool(found)

    wait_for(started, 120, "the run")  # a controller starting on a loaded machine
    return found[-1]


def attempts(fleet: Fleet, run_id: int) -> list[Attempt]:
    with open_store(fleet.db) as store:
        return leases.attempts(store, run_id)


def running_on(fleet: Fleet, run_id: int) -> Attempt | None:
    running = [a for a in attempts(fleet, run_id) if a.state == "running"]
    return running[0] if running else None


def host_named(fleet: Fleet, name: str | None) -> Host:
    return next(h for h in fleet.hosts if h.name == name)


def check_complete(fleet: Fleet, run_id: int, blocks: int, cases: int = 2) -> list[Attempt]:
    """Exactly the planned samples, none twice, each block from one host, every attempt
    ended, and one finished attempt per block; the attempts."""
    with open_store(fleet.db) as store:
        run = store.run(run_id)
        samples = store.samples(run_id, status=None, with_jobs=False, with_histograms=False)
        tried = leases.attempts(store, run_id)
    assert run.status == "finished", run.status
    keys = Counter((s.case_key, s.block) for s in samples)
    assert len(samples) == blocks * cases and max(keys.values()) == 1, keys
    assert {b for _, b in keys} == set(range(1, blocks + 1))
    by_block: dict[int | None, set[str | None]] = {}
    for s in samples:
        by_block.setdefault(s.block, set()).add(s.host)
    assert all(len(h) == 1 and None not in h for h in by_block.values()), by_block
    assert all(a.state in leases.TERMINAL for a in tried), tried
    finished = Counter(a.block for a in tried if a.state == "finished")
    assert finished == Counter(range(1, blocks + 1)), finished
    return tried


# -- the fleet runs blocks ----------------------------------------------------------------


def test_run_on_three_hosts(hosts: Fleet, tmp_path: Path) -> None:
    plan = write_plan(tmp_path, repeat=6)
    done = iolab(hosts, "run", str(plan), "--fleet", "lab", "--hosts", "3", "-q")
    assert done.returncode == 0, done.stderr
    run_id = newest_run(hosts)
    assert f"run {run_id} finished: 12/12 samples stored" in done.stdout
    check_complete(hosts, run_id, 6)
    listed = iolab(hosts, "results", "--json").stdout
    assert "redis://" not in listed and "IOLAB_BROKER" not in listed  # no credentials
    shown = json.loads(iolab(hosts, "results", "--run", str(run_id), "--json").stdout)
    assert len({s["host"] for s in shown}) >= 2
    assert {s["host"] for s in shown} <= {h.name for h in hosts.hosts}
    one = shown[0]["host"]
    picked = iolab(hosts, "export", f"run:{run_id}/host={one}")
    assert picked.returncode == 0, picked.stderr
    status = json.loads(iolab(hosts, "fleet", "status", "--format", "json").stdout)
    names = {h["name"]: h for h in status["hosts"]}
    assert set(names) == {h.name for h in hosts.hosts}
    for h in names.values():
        assert h["heartbeat_age_s"] < 5 and h["kernel"] == os.uname().release
        assert h["state"] in ("idle", "busy") and len(h["boot_id"]) == 36
    assert status["queues"] is not None and status["in_flight"] == []


def test_ab_on_three_hosts_reaches_its_verdict(hosts: Fleet, tmp_path: Path) -> None:
    plan = write_plan(tmp_path, repeat=2)
    done = iolab(
        hosts,
        "ab",
        str(plan),
        "--fleet",
        "lab",
        "--hosts",
        "3",
        "--max-blocks",
        "30",
        "--format",
        "json",
        "-q",
    )
    assert done.returncode in (0, 10), done.stderr
    run_id = newest_run(hosts)
    with open_store(hosts.db) as store:
        run = store.run(run_id)
        samples = store.samples(run_id, status=None, with_jobs=False, with_histograms=False)
        tried = leases.attempts(store, run_id)
    assert run.meta["ab_result"]["stopped"] == "every KPI has a verdict", run.meta
    assert len({s.host for s in samples}) >= 2
    per_block: dict[int | None, set[str | None]] = {}
    for s in samples:
        per_block.setdefault(s.block, set()).add(s.host)
    assert all(len(h) == 1 for h in per_block.values())
    assert all(a.state in leases.TERMINAL for a in tried)
    keys = Counter((s.case_key, s.block) for s in samples)
    assert max(keys.values()) == 1
    decided_on = max(k["blocks"] for k in run.meta["ab_result"]["states"])
    assert all(a.block > decided_on for a in tried if a.after_decision)
    # what was in flight at the verdict: revoked if not yet started, else stored and marked
    assert all(a.after_decision or a.state == "revoked" for a in tried if a.block > decided_on)
    report = json.loads(done.stdout)
    assert report  # the comparison the verdict came with
    (group,) = report["groups"]
    (strata,) = group["hosts"]
    assert {e["host"] for e in strata["effects"]} == {s.host for s in samples}
    compared = iolab(hosts, "compare", str(run_id))
    assert compared.returncode in (0, 10, 11), compared.stderr
    assert "per host" in compared.stdout
    for name in {s.host for s in samples}:
        assert str(name) in compared.stdout  # the per-host effects


def test_a_device_not_designated_is_refused(hosts: Fleet, tmp_path: Path) -> None:
    image = tmp_path / "disk.img"
    image.write_bytes(b"\0" * (16 << 20))
    loop = subprocess.run(
        ["losetup", "--find", "--show", str(image)], capture_output=True, text=True, check=True
    ).stdout.strip()
    try:
        before = image.read_bytes()
        plan = tmp_path / "device.yaml"
        plan.write_text(DEVICE_PLAN.format(device=loop))
        known = [r.id for r in _runs(hosts)]
        done = iolab(hosts, "run", str(plan), "--fleet", "lab", "--destroy-data", "-q")
        assert done.returncode == 3, done.stderr
        assert "no host of class lab can run this plan" in done.stderr
        assert "not designated" in done.stderr and done.stderr.count("\n") == 1
        assert [r.id for r in _runs(hosts)] == known  # judged from the facts: no run made
        # whoever can write the store can change the facts, not what a host lets a plan
        # touch: each host refuses under its own host config, and the run ends once all did
        with open_store(hosts.db) as store, store._session(write=True) as conn:
            from iolab.store.schema import fleet_hosts

            conn.execute(fleet_hosts.update().values(devices=[loop]))
            conn.commit()
        done = iolab(hosts, "run", str(plan), "--fleet", "lab", "--destroy-data", "-q")
        assert done.returncode == 3, done.stderr
        assert "no host of class lab can run it" in done.stderr and "refused" in done.stderr
        tried = attempts(hosts, newest_run(hosts))
        assert {a.state for a in tried} == {"refused"} and len(tried) == 3, tried
        assert all("not designated" in str(a.reason) for a in tried)
        assert len({a.host for a in tried}) == 3  # each host asked once
        assert image.read_bytes() == before  # nothing touched
    finally:
        subprocess.run(["losetup", "-d", loop], check=False)
        for host in hosts.hosts:  # their facts registered again
            hosts.kill_worker(host, signal.SIGTERM)


# -- faults -------------------------------------------------------------------------------


def test_worker_killed_mid_block(hosts: Fleet, tmp_path: Path) -> None:
    plan = write_plan(tmp_path, runtime="2", repeat=6)
    ctl = controller(hosts, "run", str(plan), "--fleet", "lab", "--hosts", "3", "-q")
    wait_for(
        lambda: any(r.kind == "lab" and r.status == "running" for r in _runs(hosts)), 120, "the run"
    )
    run_id = newest_run(hosts)
    wait_for(lambda: running_on(hosts, run_id), 60, "a block running")
    victim = running_on(hosts, run_id)
    assert victim is not None
    hosts.kill_worker(host_named(hosts, victim.host), signal.SIGKILL)
    _out, err = ctl.communicate(timeout=240)
    assert ctl.returncode == 0, err
    tried = check_complete(hosts, run_id, 6)
    dead = next(a for a in tried if a.id == victim.id)
    assert dead.state == "lost", dead


def test_redis_restarted(hosts: Fleet, tmp_path: Path) -> None:
    plan = write_plan(tmp_path, runtime="2", repeat=6)
    known = {r.id for r in _runs(hosts)}
    ctl = controller(hosts, "run", str(plan), "--fleet", "lab", "--hosts", "3", "-q")
    run_id = new_run(hosts, known)
    wait_for(lambda: running_on(hosts, run_id), 60, "a block running")
    hosts.stop_redis()
    time.sleep(2)
    hosts.start_redis()
    _out, err = ctl.communicate(timeout=240)
    assert ctl.returncode == 0, err
    check_complete(hosts, run_id, 6)


def test_controller_killed_then_resumed(hosts: Fleet, tmp_path: Path) -> None:
    plan = write_plan(tmp_path, runtime="2", repeat=6)
    known = {r.id for r in _runs(hosts)}
    ctl = controller(hosts, "run", str(plan), "--fleet", "lab", "--hosts", "3", "-q")
    run_id = new_run(hosts, known)
    wait_for(
        lambda: any(a.state == "finished" for a in attempts(hosts, run_id)), 60, "a block finished"
    )
    ctl.send_signal(signal.SIGKILL)
    ctl.wait(timeout=30)
    done = iolab(hosts, "run", "--resume", str(run_id), "--fleet", "lab", "--hosts", "3", "-q")
    assert done.returncode == 0, done.stderr
    check_complete(hosts, run_id, 6)


def test_postgres_restarted(hosts: Fleet, tmp_path: Path) -> None:
    plan = write_plan(tmp_path, runtime="2", repeat=6)
    known = {r.id for r in _runs(hosts)}
    ctl = controller(hosts, "run", str(plan), "--fleet", "lab", "--hosts", "3", "-q")
    run_id = new_run(hosts, known)
    wait_for(lambda: running_on(hosts, run_id), 60, "a block running")
    hosts.stop_postgres()
    time.sleep(1)
    hosts.start_postgres()
    _out, err = ctl.communicate(timeout=240)
    assert ctl.returncode == 0, err
    check_complete(hosts, run_id, 6)


def test_link_down_then_up(hosts: Fleet, tmp_path: Path) -> None:
    plan = write_plan(tmp_path, runtime="2", repeat=6)
    known = {r.id for r in _runs(hosts)}
    ctl = controller(hosts, "run", str(plan), "--fleet", "lab", "--hosts", "3", "-q")
    run_id = new_run(hosts, known)
    wait_for(lambda: running_on(hosts, run_id), 60, "a block running")
    victim = running_on(hosts, run_id)
    assert victim is not None
    host = host_named(hosts, victim.host)
    hosts.link(host, False)
    time.sleep(6)  # past 3 heartbeats: the lease expires, the block goes elsewhere
    hosts.link(host, True)
    _out, err = ctl.communicate(timeout=240)
    assert ctl.returncode == 0, err
    tried = check_complete(hosts, run_id, 6)
    assert next(a for a in tried if a.id == victim.id).state == "lost"


def test_a_host_that_never_comes_back_is_quarantined(hosts: Fleet, tmp_path: Path) -> None:
    plan = write_plan(tmp_path, runtime="2", repeat=9)
    known = {r.id for r in _runs(hosts)}
    ctl = controller(hosts, "run", str(plan), "--fleet", "lab", "--hosts", "3", "-q")
    run_id = new_run(hosts, known)
    wait_for(lambda: running_on(hosts, run_id), 60, "a block running")
    victim = running_on(hosts, run_id)
    assert victim is not None
    host = host_named(hosts, victim.host)
    hosts.link(host, False)  # gone for good (until the next test's fixture)
    _out, err = ctl.communicate(timeout=240)
    assert ctl.returncode == 0, err
    check_complete(hosts, run_id, 9)
    assert _state(hosts, host.name) == "quarantined"
    hosts.link(host, True)
    hosts.kill_worker(host, signal.SIGKILL)


def _runs(fleet: Fleet) -> list[RunInfo]:
    with open_store(fleet.db) as store:
        return store.runs()


def _state(fleet: Fleet, name: str) -> str:
    with open_store(fleet.db) as store:
        return next(h.state for h in leases.hosts(store) if h.name == name)


def test_a_drained_host_takes_no_block(hosts: Fleet, tmp_path: Path) -> None:
    drained = hosts.hosts[0].name
    done = iolab(hosts, "fleet", "drain", drained)
    assert done.returncode == 0 and f"host {drained} drained" in done.stdout, done.stderr
    missing = iolab(hosts, "fleet", "drain", "no-such-host")
    assert missing.returncode == 2 and "no host no-such-host" in missing.stderr
    plan = write_plan(tmp_path, repeat=4)
    done = iolab(hosts, "run", str(plan), "--fleet", "lab", "--hosts", "3", "-q")
    assert done.returncode == 0, done.stderr
    run_id = newest_run(hosts)
    check_complete(hosts, run_id, 4)
    with open_store(hosts.db) as store:
        used = {s.host for s in store.samples(run_id)}
    assert drained not in used
    assert iolab(hosts, "fleet", "undrain", drained).returncode == 0


def test_a_fleet_needs_a_postgresql_store(hosts: Fleet, tmp_path: Path) -> None:
    plan = write_plan(tmp_path, repeat=1)
    env_db = str(tmp_path / "local.db")
    done = iolab(hosts, "--db", env_db, "run", str(plan), "--fleet", "lab", "-q")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "PostgreSQL" in done.stderr
    assert not Path(env_db).exists()  # refused before any store was made


def test_a_pickled_message_is_not_accepted(hosts: Fleet, tmp_path: Path) -> None:
    """A worker accepts JSON only: a pickled task (code, in effect) is dropped unrun."""
    from celery import Celery

    from iolab.fleet.app import TASK, class_queue
    from iolab.fleet.job import Job

    with open_store(hosts.db) as store:
        run_id = store.create_run("lab", plan_text="x", plan_hash="0" * 64)
        attempt = leases.new_attempt(store, run_id, 1, host_class="lab")
    job = Job(run_id, 1, 1, "x", "0" * 64, "x", 1, None)
    sender = Celery("attacker", broker=hosts.broker, set_as_current=False)
    sender.conf.update(task_serializer="pickle", accept_content=["pickle", "json"])
    sender.send_task(TASK, kwargs={"job": job.to_json()}, queue=class_queue("lab"))
    time.sleep(4)
    with open_store(hosts.db) as store:
        assert leases.state_of(store, run_id, 1, 1) == "queued"  # nobody claimed it
        leases.end(store, attempt.id, "revoked", "test over", only_from=("queued",))
    logs = "".join(h.log.read_text() for h in hosts.hosts if h.log is not None)
    assert "pickle" in logs  # Celery said why it refused the message


def test_ab_controller_killed_then_resumed(hosts: Fleet, tmp_path: Path) -> None:
    plan = tmp_path / "ab.yaml"
    # a 5% effect: several blocks to a verdict, so the controller dies mid-way
    plan.write_text(
        PLAN.format(runtime="1", repeat=2)
        .replace("rate: 4m", "rate: 2m")
        .replace("rate: 1m", "rate: 1900k")
    )
    ctl = controller(
        hosts, "ab", str(plan), "--fleet", "lab", "--hosts", "3", "--max-blocks", "12", "-q"
    )
    wait_for(
        lambda: any(r.kind == "ab" and r.status == "running" for r in _runs(hosts)),
        30,
        "the ab run",
    )
    run_id = newest_run(hosts)
    wait_for(
        lambda: sum(a.state == "finished" for a in attempts(hosts, run_id)) >= 2,
        90,
        "two blocks finished",
    )
    ctl.send_signal(signal.SIGKILL)
    ctl.wait(timeout=30)
    done = iolab(hosts, "ab", "--resume", str(run_id), "--fleet", "lab", "--hosts", "3", "-q")
    assert done.returncode in (0, 10), done.stderr
    with open_store(hosts.db) as store:
        run = store.run(run_id)
        samples = store.samples(run_id, status=None, with_jobs=False, with_histograms=False)
        tried = leases.attempts(store, run_id)
    assert run.status == "finished"
    keys = Counter((s.case_key, s.block) for s in samples)
    assert max(keys.values()) == 1
    per_block: dict[int | None, set[str | None]] = {}
    for s in samples:
        per_block.setdefault(s.block, set()).add(s.host)
    assert all(len(h) == 1 for h in per_block.values())
    assert all(a.state in leases.TERMINAL for a in tried)
    finished = Counter(a.block for a in tried if a.state == "finished")
    assert max(finished.values()) == 1
    used = max(k["blocks"] for k in run.meta["ab_result"]["states"])
    assert set(range(1, used + 1)) <= set(finished)  # the verdict saw blocks 1..k, all there


# -- operations: cancel, watch, forget, versions ------------------------------------------


def test_cancel_a_fleet_run(hosts: Fleet, tmp_path: Path) -> None:
    """`iolab cancel RUN` from another terminal: nothing new starts, the blocks in flight
    stop at their next sample, the hosts are idle again, the controller exits 5 and the run
    ends cancelled (shown by `watch` and `results`; `--resume` refuses it)."""
    plan = write_plan(tmp_path, runtime="2", repeat=12)
    known = {r.id for r in _runs(hosts)}
    ctl = controller(hosts, "run", str(plan), "--fleet", "lab", "--hosts", "3", "-q")
    run_id = new_run(hosts, known)
    wait_for(lambda: running_on(hosts, run_id), 60, "a block running")
    done = iolab(hosts, "cancel", str(run_id), timeout=180)
    assert done.returncode == 0, done.stderr
    assert f"run {run_id} cancelled:" in done.stdout and done.stdout.count("\n") == 1
    _out, err = ctl.communicate(timeout=120)
    assert ctl.returncode == 5, err
    assert f"run {run_id} cancelled (iolab cancel), machine restored" in err
    with open_store(hosts.db) as store:
        assert store.run(run_id).status == "cancelled"
        stored = len(store.samples(run_id, status=None, with_jobs=False, with_histograms=False))
        rows = leases.hosts(store, "lab")
    tried = attempts(hosts, run_id)
    assert all(a.state in leases.TERMINAL for a in tried), tried
    assert any(a.reason == "cancelled" for a in tried)
    assert stored < 24  # it stopped before the plan's end
    assert all(h.current_job is None for h in rows), rows  # every host let go of it
    again = iolab(hosts, "cancel", str(run_id))
    assert again.returncode == 2 and "nothing to cancel" in again.stderr
    watched = iolab(hosts, "watch", str(run_id))
    assert watched.stdout.startswith(f"run {run_id} (lab) cancelled:"), watched.stdout
    listed = iolab(hosts, "results", "--run", str(run_id))
    assert "cancelled" in listed.stdout, listed.stdout
    resumed = iolab(hosts, "run", "--resume", str(run_id), "--fleet", "lab", "-q")
    assert resumed.returncode == 2 and f"run {run_id} was cancelled" in resumed.stderr
    # the hosts were restored: the next run uses them as usual
    check_next = iolab(
        hosts, "run", str(write_plan(tmp_path, repeat=3)), "--fleet", "lab", "--hosts", "3", "-q"
    )
    assert check_next.returncode == 0, check_next.stderr


def test_watch_follows_a_fleet_run(hosts: Fleet, tmp_path: Path) -> None:
    plan = write_plan(tmp_path, runtime="1", repeat=6)
    known = {r.id for r in _runs(hosts)}
    ctl = controller(hosts, "run", str(plan), "--fleet", "lab", "--hosts", "3", "-q")
    run_id = new_run(hosts, known)
    watch = subprocess.run(
        [
            sys.executable,
            "-m",
            "iolab",
            "watch",
            str(run_id),
            "--format",
            "json",
            "--interval",
            "0.3",
        ],
        env=hosts.env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    _out, err = ctl.communicate(timeout=60)
    assert ctl.returncode == 0, err
    assert watch.returncode == 0, watch.stderr
    seen = [json.loads(line) for line in watch.stdout.splitlines()]
    assert len(seen) >= 3  # it showed progress, not only the end
    counts = [s["samples"] for s in seen]
    assert counts == sorted(counts) and counts[-1] == 12
    assert seen[-1]["status"] == "finished" and seen[-1]["planned"] == 12
    assert any(s["hosts"] for s in seen)  # blocks shown running on their hosts
    assert all(s["status"] == "running" for s in seen[:-1])
    once = iolab(hosts, "watch", str(run_id))
    assert once.returncode == 0 and once.stdout.count("\n") == 1
    assert f"run {run_id} (lab) finished: 12/12 samples" in once.stdout
    missing = iolab(hosts, "watch", "99999")
    assert missing.returncode == 2 and "no run 99999" in missing.stderr


def test_forget_a_host(hosts: Fleet, tmp_path: Path) -> None:
    gone = hosts.hosts[0]
    alive = iolab(hosts, "fleet", "forget", gone.name)
    assert alive.returncode == 2 and "is alive" in alive.stderr, alive.stderr
    hosts.kill_worker(gone, signal.SIGTERM)
    wait_for(lambda: gone.name not in live_hosts(hosts), 30, "the host silent")
    time.sleep(3.5)  # past three heartbeats
    done = iolab(hosts, "fleet", "forget", gone.name)
    assert done.returncode == 0 and f"host {gone.name} forgotten" in done.stdout, done.stderr
    status = json.loads(iolab(hosts, "fleet", "status", "--format", "json").stdout)
    assert gone.name not in {h["name"] for h in status["hosts"]}
    again = iolab(hosts, "fleet", "forget", gone.name)
    assert again.returncode == 2 and f"no host {gone.name}" in again.stderr


def test_status_shows_versions_and_a_job_of_another_version_is_refused(hosts: Fleet) -> None:
    from iolab import __version__
    from iolab.fleet.app import TASK, class_queue, make_app
    from iolab.fleet.job import Job

    status = json.loads(iolab(hosts, "fleet", "status", "--format", "json").stdout)
    assert {h["version"] for h in status["hosts"]} == {__version__}
    table = iolab(hosts, "fleet", "status")
    assert "iolab" in table.stdout.splitlines()[0] and __version__ in table.stdout
    with open_store(hosts.db) as store:
        run_id = store.create_run("lab", plan_text="x", plan_hash="0" * 64)
        attempt = leases.new_attempt(store, run_id, 1, host_class="lab")
    payload = {**Job(run_id, 1, 1, "x", "0" * 64, "x", 1, None).to_json(), "v": 99}
    app = make_app(hosts.broker, visibility_timeout_s=60)
    app.send_task(TASK, kwargs={"job": payload}, queue=class_queue("lab"))
    marker = "job version 99 is not this worker's"

    def refused() -> bool:
        return any(h.log is not None and marker in h.log.read_text() for h in hosts.hosts)

    wait_for(refused, 30, "the refusal")
    lines = [
        line
        for h in hosts.hosts
        if h.log is not None
        for line in h.log.read_text().splitlines()
        if marker in line and "refused a job" in line
    ]
    assert len(lines) == 1 and "upgrade the older one" in lines[0]
    # the worker logs the refusal, then records it (the log line can be read first)
    wait_for(lambda: attempts(hosts, run_id)[0].state != "queued", 30, "the refusal stored")
    (ended,) = attempts(hosts, run_id)  # refused with why: the controller can say so
    assert ended.id == attempt.id and ended.state == "refused"
    assert marker in str(ended.reason)


# -- trust: the controller runs only its own config's commands ------------------------------


def test_the_power_cycle_comes_from_the_controllers_config(hosts: Fleet, tmp_path: Path) -> None:
    """A host whose lease was lost is power-cycled with the command fleet.toml gives for
    it on the controller — the only command a controller runs for a host."""
    marker = tmp_path / "cycled"
    config = tmp_path / "fleet.toml"
    config.write_text(
        "".join(
            f'[hosts.{h.name}]\npower_cycle = ["/bin/sh", "-c", "echo {h.name} >> {marker}"]\n'
            for h in hosts.hosts
        )
    )
    plan = write_plan(tmp_path, runtime="2", repeat=6)
    known = {r.id for r in _runs(hosts)}
    env = dict(hosts.env(), IOLAB_FLEET_CONFIG=str(config))
    ctl = subprocess.Popen(
        [sys.executable, "-m", "iolab", "run", str(plan), "--fleet", "lab", "--hosts", "3", "-q"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    run_id = new_run(hosts, known)
    wait_for(lambda: running_on(hosts, run_id), 60, "a block running")
    victim = running_on(hosts, run_id)
    assert victim is not None
    host = host_named(hosts, victim.host)
    hosts.link(host, False)
    time.sleep(6)
    hosts.link(host, True)
    _out, err = ctl.communicate(timeout=240)
    assert ctl.returncode == 0, err
    check_complete(hosts, run_id, 6)
    assert host.name in marker.read_text().split()


# -- hosts say what they have --------------------------------------------------------------

COMMAND_PLAN = """\
name: fleet-command
target: {size: 16M}
filesystem: none
workload:
  command:
    argv: ["sh", "-c", "echo ops 1000"]
    metric: {name: write.iops, regex: 'ops ([0-9]+)'}
repeat: 3
kpis: [write.iops]
prepare: {drop_caches: false}
"""


def test_devices_by_name_provides_and_a_refusal_sent_elsewhere(
    hosts: Fleet, tmp_path: Path
) -> None:
    """Three hosts that differ: h0 provides `fleet-thing` and runs `command:` workloads,
    h1 has a device named `scratch`, h2 has neither.  The controller sends each plan only
    where it can run (and says where before the run), a block refused by a host goes to
    another, and a plan no host can run ends in one line before any block is sent."""
    image = tmp_path / "scratch.img"
    image.write_bytes(b"")
    os.truncate(image, 64 << 20)
    loop = subprocess.run(
        ["losetup", "--find", "--show", str(image)], capture_output=True, text=True, check=True
    ).stdout.strip()
    h0, h1, h2 = hosts.hosts
    configs = {
        h0.index: 'provides = ["fleet-thing"]\nallow_commands = true\n',
        h1.index: f'[devices]\nscratch = "{loop}"\n',
        h2.index: "",
    }
    try:
        for host in hosts.hosts:
            hosts.kill_worker(host, signal.SIGTERM)
            hosts.start_worker(host, config=configs[host.index])
        wait_for(lambda: len(live_hosts(hosts)) == 3, 60, "three workers up")

        provides = tmp_path / "provides.yaml"
        provides.write_text(
            PLAN.format(runtime="1", repeat=2) + "requires: {fleet-thing: a test name}\n"
        )
        done = iolab(hosts, "run", str(provides), "--fleet", "lab", "--hosts", "3")
        assert done.returncode == 0, done.stderr
        said = done.stderr.find(f"can run this plan: {h0.name}; not {h1.name}")
        made = done.stderr.find(f"run {newest_run(hosts)}: fleet-test")
        assert 0 <= said < made, done.stderr  # before the run exists
        assert on_hosts(hosts, newest_run(hosts)) == {h0.name}

        named = tmp_path / "named.yaml"
        named.write_text(DEVICE_PLAN.format(device='"{dev:scratch}"'))
        done = iolab(hosts, "run", str(named), "--fleet", "lab", "--hosts", "3", "-q")
        assert done.returncode == 0, done.stderr
        assert on_hosts(hosts, newest_run(hosts)) == {h1.name}

        command = tmp_path / "command.yaml"
        command.write_text(COMMAND_PLAN)
        done = iolab(hosts, "run", str(command), "--fleet", "lab", "--hosts", "3", "-q")
        assert done.returncode == 0, done.stderr
        run_id = newest_run(hosts)
        assert on_hosts(hosts, run_id) == {h0.name}
        tried = attempts(hosts, run_id)
        assert {a.host for a in tried if a.state == "refused"} <= {h1.name, h2.name}
        assert Counter(a.block for a in tried if a.state == "finished") == Counter([1, 2, 3])

        nowhere = tmp_path / "nowhere.yaml"
        nowhere.write_text(PLAN.format(runtime="1", repeat=1) + "requires: {unheard-of: x}\n")
        known = {r.id for r in _runs(hosts)}
        for command_line in (["run"], ["ab", "--max-blocks", "2"]):
            done = iolab(hosts, *command_line, str(nowhere), "--fleet", "lab", "--hosts", "3")
            assert done.returncode == 3 and done.stderr.count("\n") == 1, done.stderr
            assert "no host of class lab can run this plan" in done.stderr
            assert f"{h2.name}: does not provide unheard-of" in done.stderr
            assert {r.id for r in _runs(hosts)} == known  # said before the run exists
    finally:
        for host in hosts.hosts:
            hosts.kill_worker(host, signal.SIGTERM)  # the next test's hosts are plain again
        subprocess.run(["losetup", "-d", loop], check=False)


def on_hosts(fleet: Fleet, run_id: int) -> set[str | None]:
    with open_store(fleet.db) as store:
        return {s.host for s in store.samples(run_id, status=None)}
