"""A fleet for the tests, made of real parts: Debian's redis-server and a PostgreSQL cluster of
its own (both on loopback and on the namespaces' veth addresses only), and test hosts that are
network namespaces, each with a veth pair (10.231.N.1 here, 10.231.N.2 inside), its own
hostname (`unshare --uts`) and an `iolab worker` process reaching Redis and PostgreSQL over
its link.

Why a PostgreSQL of its own and not `make test`'s: that one listens on 127.0.0.1 only, which a
namespace cannot reach, and the fault tests restart this one.  Everything is removed on
`close()` (namespaces, veths, workers, redis, the cluster), and `leftovers()` says what
would still be there.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

PG_BIN = (
    sorted(Path("/usr/lib/postgresql").glob("*/bin"))[-1]
    if Path("/usr/lib/postgresql").exists()
    else Path("/nonexistent")
)
HEARTBEAT_S = "1"
SUBNET_LOCK = Path("/run/lock/iolab-test-fleet-subnets.lock")


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, check=check, capture_output=True, text=True, timeout=60)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _subnet_free(n: int) -> bool:
    shown = _run("ip", "-o", "addr", "show").stdout
    return f"10.231.{n}." not in shown


@dataclass
class Host:
    index: int
    netns: str
    veth: str
    subnet: int
    name: str
    journal: Path
    process: subprocess.Popen[bytes] | None = None
    log: Path | None = None

    @property
    def outer(self) -> str:
        return f"10.231.{self.subnet}.1"

    @property
    def inner(self) -> str:
        return f"10.231.{self.subnet}.2"


@dataclass
class Fleet:
    root: Path
    hosts: list[Host] = field(default_factory=list)
    redis_port: int = 0
    pg_port: int = 0
    redis: subprocess.Popen[bytes] | None = None
    tag: str = ""

    # -- URLs -----------------------------------------------------------------------------

    @property
    def broker(self) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/0"

    @property
    def db(self) -> str:
        return f"postgresql+psycopg://iolab@127.0.0.1:{self.pg_port}/iolab_fleet"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            IOLAB_DB=self.db,
            IOLAB_BROKER=self.broker,
            IOLAB_FLEET_HEARTBEAT_S=HEARTBEAT_S,
            IOLAB_JOURNAL_DIR=str(self.root / "controller-journal"),
        )
        env.pop("NO_COLOR", None)
        return env

    # -- set up ---------------------------------------------------------------------------

    @classmethod
    def make(cls, n_hosts: int = 3) -> Fleet:
        fleet = cls(Path(tempfile.mkdtemp(prefix="iolab-fleet-")), tag=str(os.getpid() % 100000))
        try:
            fleet._namespaces(n_hosts)
            fleet._postgres()
            fleet.start_redis()
        except BaseException:
            fleet.close()
            raise
        return fleet

    def _namespaces(self, n: int) -> None:
        # the check for a free subnet and the address that takes it, under one lock: the
        # fleets of parallel test processes (pytest-xdist workers) never pick the same one
        SUBNET_LOCK.parent.mkdir(parents=True, exist_ok=True)
        with SUBNET_LOCK.open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            self._namespaces_locked(n)

    def _namespaces_locked(self, n: int) -> None:
        subnet = 10 + (os.getpid() % 50) * 4
        for i in range(n):
            while not _subnet_free(subnet):
                subnet += 1
            host = Host(
                i,
                f"iolabf{self.tag}-{i}",
                f"ilf{self.tag}h{i}",
                subnet,
                f"fleet-h{i}",
                self.root / f"journal-{i}",
            )
            self.hosts.append(host)
            peer = f"ilf{self.tag}n{i}"
            _run("ip", "netns", "add", host.netns)
            _run("ip", "link", "add", host.veth, "type", "veth", "peer", "name", peer)
            _run("ip", "link", "set", peer, "netns", host.netns)
            _run("ip", "addr", "add", f"{host.outer}/30", "dev", host.veth)
            _run("ip", "link", "set", host.veth, "up")
            inside = ("ip", "netns", "exec", host.netns)
            _run(*inside, "ip", "addr", "add", f"{host.inner}/30", "dev", peer)
            _run(*inside, "ip", "link", "set", peer, "up")
            _run(*inside, "ip", "link", "set", "lo", "up")
            subnet += 1

    def _pg(self, *args: str) -> subprocess.CompletedProcess[str]:
        return _run("runuser", "-u", "postgres", "--", *args)

    def _postgres(self) -> None:
        data = self.root / "pg"
        data.mkdir()
        os.chown(self.root, _uid("postgres"), -1)
        os.chown(data, _uid("postgres"), -1)
        self._pg(
            str(PG_BIN / "initdb"),
            "-D",
            str(data / "data"),
            "-U",
            "iolab",
            "--auth=trust",
            "-E",
            "UTF8",
        )
        hba = data / "data" / "pg_hba.conf"
        with hba.open("a") as fh:
            for host in self.hosts:
                fh.write(f"host all all {host.inner}/32 trust\n")
        self.pg_port = _free_port()
        self.start_postgres()
        self._pg(
            str(PG_BIN / "createdb"),
            "-h",
            "127.0.0.1",
            "-p",
            str(self.pg_port),
            "-U",
            "iolab",
            "iolab_fleet",
        )

    def start_postgres(self) -> None:
        listen = ",".join(["127.0.0.1", *(h.outer for h in self.hosts)])
        data = self.root / "pg" / "data"
        self._pg(
            str(PG_BIN / "pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(self.root / "pg" / "log"),
            "-w",
            "-o",
            f"-c listen_addresses={listen} -p {self.pg_port} -k {self.root / 'pg'} -c fsync=off",
            "start",
        )

    def reset_db(self) -> None:
        """An empty store again (a lab's first day): the database dropped and made anew."""
        psql = (str(PG_BIN / "psql"), "-h", "127.0.0.1", "-p", str(self.pg_port), "-U", "iolab")
        self._pg(*psql, "-d", "postgres", "-c", "DROP DATABASE IF EXISTS iolab_fleet WITH (FORCE)")
        self._pg(*psql, "-d", "postgres", "-c", "CREATE DATABASE iolab_fleet")

    def stop_postgres(self) -> None:
        data = self.root / "pg" / "data"
        if data.exists():
            self._pg(str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")

    def start_redis(self) -> None:
        if not self.redis_port:
            self.redis_port = _free_port()
        bind = " ".join(["127.0.0.1", *(h.outer for h in self.hosts)])
        self.redis = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.redis_port),
                "--bind",
                *bind.split(),
                "--protected-mode",
                "no",
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--dir",
                str(self.root),
                "--daemonize",
                "no",
            ],
            stdout=(self.root / "redis.log").open("ab"),
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.redis_port), timeout=0.5),
            ):
                return
            time.sleep(0.1)
        raise RuntimeError("redis-server did not start")

    def stop_redis(self) -> None:
        if self.redis is not None and self.redis.poll() is None:
            self.redis.terminate()
            self.redis.wait(timeout=20)
        self.redis = None

    # -- workers --------------------------------------------------------------------------

    def start_worker(self, host: Host, *extra: str, config: str | None = None) -> None:
        """`iolab worker` in the host's namespace; `config`: the text of its host.toml."""
        if host.process is not None and host.process.poll() is None:
            return
        host.journal.mkdir(exist_ok=True)
        if config is not None:
            path = self.root / f"host-{host.index}.toml"
            path.write_text(config)
            extra = (*extra, "--config", str(path))
        host.log = self.root / f"worker-{host.index}.log"
        worker = (
            f"hostname {host.name} && exec {sys.executable} -m iolab worker "
            f"--broker redis://{host.outer}:{self.redis_port}/0 "
            f"--db postgresql+psycopg://iolab@{host.outer}:{self.pg_port}/iolab_fleet "
            f"--class lab {' '.join(extra)}"
        )
        env = dict(os.environ)
        env.update(IOLAB_FLEET_HEARTBEAT_S=HEARTBEAT_S, IOLAB_JOURNAL_DIR=str(host.journal))
        env.pop("IOLAB_DB", None)
        host.process = subprocess.Popen(
            ["ip", "netns", "exec", host.netns, "unshare", "--uts", "sh", "-c", worker],
            env=env,
            stdout=host.log.open("ab"),
            stderr=subprocess.STDOUT,
        )

    def kill_worker(self, host: Host, sig: int = signal.SIGKILL) -> None:
        if host.process is not None and host.process.poll() is None:
            host.process.send_signal(sig)
            host.process.wait(timeout=60)
        host.process = None
        self.cleanup_host(host)

    def cleanup_host(self, host: Host) -> None:
        """What a killed worker left (loop devices, mounts): its own journal undoes it."""
        if host.journal.exists():
            env = dict(os.environ, IOLAB_JOURNAL_DIR=str(host.journal))
            subprocess.run(
                [sys.executable, "-m", "iolab", "cleanup"],
                env=env,
                capture_output=True,
                timeout=120,
            )

    def link(self, host: Host, up: bool) -> None:
        _run("ip", "link", "set", host.veth, "up" if up else "down")

    # -- tear down ------------------------------------------------------------------------

    def close(self) -> None:
        for host in self.hosts:
            with contextlib.suppress(Exception):
                self.kill_worker(host, signal.SIGKILL)
        with contextlib.suppress(Exception):
            self.stop_redis()
        with contextlib.suppress(Exception):
            self._pg(
                str(PG_BIN / "pg_ctl"),
                "-D",
                str(self.root / "pg" / "data"),
                "-m",
                "immediate",
                "-w",
                "stop",
            )
        for host in self.hosts:
            _run("ip", "link", "del", host.veth, check=False)
            _run("ip", "netns", "del", host.netns, check=False)
        subprocess.run(["rm", "-rf", str(self.root)], check=False)

    def leftovers(self) -> list[str]:
        """Anything of this fleet still there (empty when `close` did its job)."""
        found = []
        namespaces = _run("ip", "netns", "list").stdout
        links = _run("ip", "-o", "link").stdout
        for host in self.hosts:
            if host.netns in namespaces:
                found.append(f"netns {host.netns}")
            if f" {host.veth}" in links or f"{host.veth}@" in links:
                found.append(f"link {host.veth}")
            if host.process is not None and host.process.poll() is None:
                found.append(f"worker {host.name}")
        if self.redis is not None and self.redis.poll() is None:
            found.append("redis-server")
        if self.root.exists():
            found.append(str(self.root))
        return found


def _uid(user: str) -> int:
    import pwd

    return pwd.getpwnam(user).pw_uid
