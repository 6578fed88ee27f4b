"""Cold starts that cannot race: five `iolab worker`s (each in a network namespace of its
own) and two more processes opening the store (`iolab results`, the same open path as a
controller) started at the same moment, on an empty PostgreSQL store, on a store one
migration behind, and on a store whose server is not up yet.  Every process must come up:
the schema is made or upgraded once, under the migration lock, and the others wait for it
(no `duplicate key value violates unique constraint "pg_type_typname_nsp_index"`).

Each round is repeated (ROUNDS, $IOLAB_COLDSTART_ROUNDS) — a race shows as a flake, so one
pass proves little; docs/fleet.md "Measured" gives the count of a longer loop."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from fleet_env import Fleet, Host
from iolab.store import leases, open_store
from iolab.store.migrate import stored_revisions
from iolab.store.revision import known_heads

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
ROUNDS = int(os.environ.get("IOLAB_COLDSTART_ROUNDS", "2"))
WORKERS = 5
READERS = 2


@pytest.fixture(scope="module")
def fleet() -> Iterator[Fleet]:
    made = Fleet.make(WORKERS)
    try:
        yield made
    finally:
        made.close()
    assert made.leftovers() == []


def start_all(fleet: Fleet) -> list[subprocess.Popen[str]]:
    """The workers and the readers, started together (no process waits for another)."""
    readers = [
        subprocess.Popen(
            [sys.executable, "-m", "iolab", "--db", fleet.db, "results"],
            env=fleet.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(READERS)
    ]
    for host in fleet.hosts:
        fleet.start_worker(host)
    return readers


def all_up(fleet: Fleet, readers: list[subprocess.Popen[str]], seconds: float = 180) -> None:
    """Both readers exit 0 and every worker registers and heartbeats; else say why."""
    errors = []
    for reader in readers:
        _out, err = reader.communicate(timeout=seconds)
        if reader.returncode != 0:
            errors.append(f"results exited {reader.returncode}: {err}")
    deadline = time.monotonic() + seconds
    names = {h.name for h in fleet.hosts}
    seen: set[str] = set()
    while time.monotonic() < deadline and seen != names:
        with open_store(fleet.db) as store:
            now = leases.server_now(store)
            seen = {
                h.name
                for h in leases.hosts(store)
                if h.heartbeat_at is not None and (now - h.heartbeat_at).total_seconds() < 3
            }
        dead = [
            h.name for h in fleet.hosts if h.process is not None and h.process.poll() is not None
        ]
        if dead:
            break
        time.sleep(0.3)
    logs = {h.name: h.log.read_text()[-2000:] if h.log else "" for h in fleet.hosts}
    dead = exited(fleet)
    if dead:
        errors.append(f"workers exited: {dead}: " + " | ".join(logs[n] for n in dead))
    if seen != names:
        errors.append(f"registered: {sorted(seen)}, not {sorted(names)}")
    raced = [n for n, text in logs.items() if "duplicate key" in text]
    assert not errors and not raced, "\n".join(errors) + str(raced)
    with open_store(fleet.db) as store:
        assert set(stored_revisions(store.engine)) == known_heads()


def exited(fleet: Fleet) -> list[str]:
    return [h.name for h in fleet.hosts if h.process is not None and h.process.poll() is not None]


def stop_all(fleet: Fleet) -> None:
    for host in fleet.hosts:
        if host.process is not None and host.process.poll() is None:
            host.process.send_signal(signal.SIGKILL)
            host.process.wait(timeout=60)
        host.process = None


def one_migration_behind(fleet: Fleet) -> None:
    """The store as the previous iolab left it: its newest migration undone."""
    from alembic import command

    from iolab.store.engine import WRITE_OPTION
    from iolab.store.migrate import alembic_config

    with open_store(fleet.db) as store:
        cfg = alembic_config()
        with store.engine.execution_options(**{WRITE_OPTION: True}).begin() as conn:
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, "-1")
        assert set(stored_revisions(store.engine)) != known_heads()


def test_cold_start_on_an_empty_store(fleet: Fleet) -> None:
    for _ in range(ROUNDS):
        fleet.reset_db()
        readers = start_all(fleet)
        try:
            all_up(fleet, readers)
        finally:
            stop_all(fleet)


def test_cold_start_on_a_store_one_migration_behind(fleet: Fleet) -> None:
    for _ in range(ROUNDS):
        fleet.reset_db()
        open_store(fleet.db).close()
        one_migration_behind(fleet)
        readers = start_all(fleet)
        try:
            all_up(fleet, readers)
        finally:
            stop_all(fleet)


def test_cold_start_before_the_server_is_up(fleet: Fleet) -> None:
    """Everything starts while PostgreSQL is down (a power cut's return): each process
    says it waits, once per pause, and comes up when the server does."""
    fleet.reset_db()
    marks = {h.name: len(h.log.read_text()) if h.log else 0 for h in fleet.hosts}
    fleet.stop_postgres()
    try:
        readers = start_all(fleet)

        def waiting() -> list[str]:
            return [h.name for h in fleet.hosts if "not reachable yet" in since(h, marks)]

        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(waiting()) < len(fleet.hosts):
            assert not exited(fleet), "a worker gave up instead of waiting"
            time.sleep(0.5)
        assert len(waiting()) == len(fleet.hosts), f"only {waiting()} said they wait"
        assert all(r.poll() is None for r in readers), "a reader gave up instead of waiting"
    finally:
        fleet.start_postgres()
    try:
        all_up(fleet, readers)
    finally:
        stop_all(fleet)
    for host in fleet.hosts:  # one line per pause, each pause longer than the one before
        pauses = [
            float(line.split("trying again in ")[1].split(" s")[0])
            for line in since(host, marks).splitlines()
            if "not reachable yet" in line
        ]
        assert pauses and pauses == sorted(pauses), pauses


def since(host: Host, marks: dict[str, int]) -> str:
    """What the host's worker logged since `marks` was taken."""
    return host.log.read_text()[marks[host.name] :] if host.log else ""
