"""The fleet over TLS, with a throwaway CA made by openssl: Debian's redis-server on a TLS
port only (`rediss://`) and the PostgreSQL cluster with `ssl = on`, reached with
`sslmode=verify-full`.  A worker and a controller run a plan through both; a store whose
certificate is signed by another CA, or names another host, is refused in one line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fleet_env import Fleet, _free_port, _uid

pytestmark = [
    pytest.mark.lab,
    pytest.mark.postgres,
    # one fleet at a time (namespaces, a PostgreSQL cluster, redis, three workers): the fleet
    # modules take turns on one pytest-xdist worker, as they did when the suite ran serially
    pytest.mark.xdist_group("fleet"),
    pytest.mark.skipif(
        os.geteuid() != 0
        or shutil.which("redis-server") is None
        or shutil.which("openssl") is None,
        reason="needs root, redis-server and openssl",
    ),
]

PLAN = """\
name: fleet-tls
target: {size: 32M}
filesystem: {type: ext4}
workload:
  fio: |
    [w]
    filename={mnt}/f
    size=1M
    rw=write
    ioengine=psync
repeat: 2
kpis: [write.iops]
prepare: {drop_caches: false}
"""


def openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


def make_ca(where: Path, name: str) -> tuple[Path, Path]:
    key, cert = where / f"{name}.key", where / f"{name}.pem"
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
            str(cert), "-days", "2", "-subj", f"/CN={name}")  # fmt: skip
    return key, cert


def make_server(where: Path, ca: tuple[Path, Path], san: str) -> tuple[Path, Path]:
    key, csr, cert = where / "server.key", where / "server.csr", where / "server.crt"
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr),
            "-subj", "/CN=iolab-test-server")  # fmt: skip
    ext = where / "san.ext"
    ext.write_text(f"subjectAltName = {san}\n")
    openssl("x509", "-req", "-in", str(csr), "-CA", str(ca[1]), "-CAkey", str(ca[0]),
            "-CAcreateserial", "-out", str(cert), "-days", "2", "-extfile", str(ext))  # fmt: skip
    return key, cert


@pytest.fixture(scope="module")
def tls() -> Iterator[tuple[Fleet, Path, int]]:
    fleet = Fleet.make(0)
    redis: subprocess.Popen[bytes] | None = None
    try:
        certs = fleet.root / "certs"
        certs.mkdir()
        ca = make_ca(certs, "ca")
        key, cert = make_server(certs, ca, "IP:127.0.0.1")
        make_ca(certs, "other-ca")
        data = fleet.root / "pg" / "data"
        for src, dst in ((key, "server.key"), (cert, "server.crt")):
            shutil.copy(src, data / dst)
            os.chown(data / dst, _uid("postgres"), -1)
            os.chmod(data / dst, 0o600)
        with (data / "postgresql.conf").open("a") as fh:
            fh.write("ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n")
        fleet.stop_postgres()
        fleet.start_postgres()
        fleet.stop_redis()
        port = _free_port()
        redis = subprocess.Popen(
            [
                "redis-server",
                "--port",
                "0",
                "--tls-port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--tls-cert-file",
                str(cert),
                "--tls-key-file",
                str(key),
                "--tls-ca-cert-file",
                str(ca[1]),
                "--tls-auth-clients",
                "no",
                "--save",
                "",
                "--protected-mode",
                "no",
                "--dir",
                str(fleet.root),
            ],
            stdout=(fleet.root / "redis-tls.log").open("ab"),
            stderr=subprocess.STDOUT,
        )
        time.sleep(1)
        assert redis.poll() is None, (fleet.root / "redis-tls.log").read_text()
        yield fleet, certs, port
    finally:
        if redis is not None and redis.poll() is None:
            redis.terminate()
            redis.wait(timeout=20)
        fleet.close()
    assert fleet.leftovers() == []


def urls(
    fleet: Fleet, certs: Path, port: int, ca: str = "ca", host: str = "127.0.0.1"
) -> dict[str, str]:
    return {
        "IOLAB_BROKER": f"rediss://127.0.0.1:{port}/0?ssl_cert_reqs=required"
        f"&ssl_ca_certs={certs / 'ca.pem'}",
        "IOLAB_DB": f"postgresql+psycopg://iolab@{host}:{fleet.pg_port}/iolab_fleet"
        f"?sslmode=verify-full&sslrootcert={certs / (ca + '.pem')}",
    }


def test_a_run_over_tls(tls: tuple[Fleet, Path, int], tmp_path: Path) -> None:
    fleet, certs, port = tls
    env = dict(fleet.env(), **urls(fleet, certs, port), IOLAB_DB_WAIT_S="0")
    env["IOLAB_JOURNAL_DIR"] = str(tmp_path / "worker-journal")
    log = tmp_path / "worker.log"
    worker = subprocess.Popen(
        [sys.executable, "-m", "iolab", "worker", "--name", "tls-h0", "--class", "tls"],
        env=env,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
    )
    try:
        plan = tmp_path / "plan.yaml"
        plan.write_text(PLAN)
        env["IOLAB_JOURNAL_DIR"] = str(tmp_path / "controller-journal")
        done = subprocess.run(
            [sys.executable, "-m", "iolab", "run", str(plan), "--fleet", "tls", "-q"],
            env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr + log.read_text()
        assert "Connected to rediss://" in log.read_text()
        listed = subprocess.run(
            [sys.executable, "-m", "iolab", "results"], env=env, capture_output=True,
            text=True, timeout=60,
        )  # fmt: skip
        assert listed.returncode == 0 and "finished" in listed.stdout, listed.stderr
    finally:
        worker.terminate()
        worker.wait(timeout=120)


@pytest.mark.parametrize(("ca", "host"), [("other-ca", "127.0.0.1"), ("ca", "localhost")])
def test_a_store_that_fails_verification_is_refused(
    tls: tuple[Fleet, Path, int], ca: str, host: str
) -> None:
    """Signed by another CA, or not naming the host connected to: one line, exit 2, no
    waiting (waiting cannot mend it)."""
    fleet, certs, port = tls
    env = dict(fleet.env(), **urls(fleet, certs, port, ca, host))
    done = subprocess.run(
        [sys.executable, "-m", "iolab", "results"], env=env, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "certificate" in done.stderr and "not reachable yet" not in done.stderr
