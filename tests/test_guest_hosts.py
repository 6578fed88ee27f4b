"""`iolab guest up/list/down`: a guest as a fleet host reaching the controller's Redis and
PostgreSQL through QEMU's restricted user network, and nothing else.

The guest's service here is a probe given with --service-command, not `iolab worker` (the
long guest tier runs workers in guests): it talks to the forwarded Redis (three successive
connections) and PostgreSQL, tries an address outside, and the test reads what it wrote from
this side.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from guest_fixtures import KERNEL_A, guest_image
from iolab.guest import hosts, run
from iolab.procs import process_alive

IOLAB = [sys.executable, "-m", "iolab"]


def iolab(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*IOLAB, *args], capture_output=True, text=True, timeout=timeout, check=False
    )


# --- no QEMU: URLs, names, the run protocol's parsing --------------------------------------


def test_urls_are_rewritten_to_the_forwarded_gateway() -> None:
    f = hosts.forward_url("redis://:s3cret@127.0.0.1:6380/0", "--broker")
    assert (f.url, f.port) == ("redis://:s3cret@10.0.2.100:6380/0", 6380)
    f = hosts.forward_url("postgresql+psycopg://iolab@localhost/iolab", "--db")
    assert (f.url, f.port) == ("postgresql+psycopg://iolab@10.0.2.100:5432/iolab", 5432)


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("redis://10.1.2.3:6379/0", "only this machine's loopback"),
        ("postgresql+psycopg://u@db.example.org/x", "only this machine's loopback"),
        ("postgresql:///x?host=/run/postgresql", "Unix socket"),
        ("http://127.0.0.1/", "expected redis"),
    ],
)
def test_urls_that_would_leave_the_machine_are_refused(url: str, fragment: str) -> None:
    proc = iolab(
        "guest", "up", "t1", "--kernels", KERNEL_A, "--broker", url, "--db", url, timeout=60
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], proc.stderr


def test_bad_names_and_unknown_guests() -> None:
    proc = iolab("guest", "down", "../etc", timeout=60)
    assert proc.returncode == 2 and "letters, digits" in proc.stderr
    proc = iolab("guest", "down", "no-such-guest-" + secrets.token_hex(3), timeout=60)
    assert proc.returncode == 2 and proc.stderr.startswith("iolab: no guest named")


def test_boot_markers_need_the_runs_nonce() -> None:
    text = (
        "IOLAB-BOOT-abc 6.1.0-50-cloud-amd64 id-1\n"
        "hello\n"
        "IOLAB-EXIT-fff 0\n"  # another nonce: the script's own output
        "IOLAB-BOOT-abc 6.1.0-50-cloud-amd64 id-1\n"  # a restarted service, same boot
        "IOLAB-STAY-abc\n"
        "IOLAB-BOOT-abc 6.1.0-47-cloud-amd64 id-2\n"
        "bye\n"
        "IOLAB-EXIT-abc 3\n"
        "after power-off\n"
    )
    boots, status = run.parse_output(text, "abc")
    assert status == 3
    assert [(b.release, b.boot_id) for b in boots] == [
        ("6.1.0-50-cloud-amd64", "id-1"),
        ("6.1.0-47-cloud-amd64", "id-2"),
    ]
    assert boots[0].output == "hello\nIOLAB-EXIT-fff 0\n"
    assert boots[1].output == "bye\n"


# --- a real guest ---------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server is missing: run `make deps`")
    port = _free_port()
    argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
    proc = subprocess.Popen(
        [*argv, "--appendonly", "no", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _redis(url: str, *args: str) -> bytes:
    host, _, port = url.split("//")[1].split("/")[0].rpartition(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        cmd = f"*{len(args)}\r\n" + "".join(f"${len(a)}\r\n{a}\r\n" for a in args)
        s.sendall(cmd.encode())
        return s.recv(4096)


PROBE = """\
import os, socket, psycopg
from urllib.parse import urlsplit

b = urlsplit(os.environ["IOLAB_BROKER"])
name = os.environ["IOLAB_GUEST_NAME"]
boot = open("/proc/sys/kernel/random/boot_id").read().strip()


def redis(*args):
    with socket.create_connection((b.hostname, b.port), timeout=20) as s:
        cmd = f"*{len(args)}\\r\\n" + "".join(f"${len(a)}\\r\\n{a}\\r\\n" for a in args)
        s.sendall(cmd.encode())
        return s.recv(1024)


pongs = sum(redis("PING") == b"+PONG\\r\\n" for _ in range(3))
redis("SET", "guest-probe:" + name, f"{boot} {pongs}")
url = os.environ["IOLAB_DB"].replace("postgresql+psycopg://", "postgresql://")
with psycopg.connect(url) as c:
    c.execute("create table if not exists TABLE (name text, boot_id text, release text)")
    c.execute("insert into TABLE values (%s, %s, %s)", (name, boot, os.uname().release))
# a connection that must fail: the restricted network reaches nothing but the forwards
try:
    socket.create_connection(("10.0.2.2", 22), timeout=5)
    print("probe: 10.0.2.2:22 reachable")
except OSError:
    print("probe: outside unreachable")
print("probe ok", flush=True)
"""


@pytest.mark.lab
@pytest.mark.slow
@pytest.mark.postgres
def test_guest_up_reaches_the_controllers_redis_and_postgresql(
    tmp_path: Path, redis_url: str
) -> None:
    pg_url = os.environ.get("IOLAB_TEST_PG_URL")
    if not pg_url:
        pytest.skip("no PostgreSQL (make test starts one)")
    guest_image()
    import psycopg

    table = "guest_probe_" + secrets.token_hex(4)
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE.replace("TABLE", table))
    name = "t-" + secrets.token_hex(3)
    try:
        proc = iolab(
            "guest", "up", name, "--kernels", KERNEL_A, "--broker", redis_url, "--db", pg_url,
            "--class", "guests", "--file", str(probe), "--service-command",
            "/opt/iolab/venv/bin/python /run/iolab-cmd/probe.py && exec sleep infinity",
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert f"{name}: up on {KERNEL_A}" in proc.stdout
        plain = pg_url.replace("postgresql+psycopg://", "postgresql://")
        rows: list[tuple[str, str, str]] = []
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not rows:
            with psycopg.connect(plain) as conn:
                exists = conn.execute("select to_regclass(%s)", (table,)).fetchone()
                if exists and exists[0]:
                    rows = conn.execute(f"select name, boot_id, release from {table}").fetchall()
            time.sleep(2)
        assert rows, (hosts.state_root() / name / "service.log").read_text()
        (got_name, boot_id, release), *more = rows
        assert (got_name, release) == (name, KERNEL_A) and not more
        assert _redis(redis_url, "GET", f"guest-probe:{name}").endswith(f"{boot_id} 3\r\n".encode())
        log = (hosts.state_root() / name / "service.log").read_text()
        assert "probe: outside unreachable" in log and "probe ok" in log
        listed = iolab("guest", "list", timeout=60)
        line = next(ln for ln in listed.stdout.splitlines() if ln.startswith(name))
        assert "running" in line and KERNEL_A in line and "guests" in line
        pid = next(h.pid for h in hosts.listing() if h.name == name)
    finally:
        down = iolab("guest", "down", name, timeout=120)
    assert down.returncode == 0, down.stderr
    assert not (hosts.state_root() / name).exists()
    assert not process_alive(pid)
    with psycopg.connect(plain) as conn:
        conn.execute(f"drop table {table}")


def test_a_vm_spec_comes_back_from_its_json_whole(tmp_path: Path) -> None:
    import json

    from iolab.errors import LabError
    from iolab.guest import vm

    spec = vm.VmSpec(
        kernel=tmp_path / "vmlinuz",
        initrd=tmp_path / "initrd",
        cmdline="root=/dev/vda rw",
        disks=(vm.Disk(tmp_path / "root.qcow2", "qcow2"), vm.Disk(tmp_path / "s", readonly=True)),
        out=tmp_path / "out",
        console=tmp_path / "console",
        pidfile=tmp_path / "qemu.pid",
        memory_mib=512,
        cpus=2,
        forwards=(6379, 5432),
        reboot_exits=False,
        extra=("-s",),
    )
    again = vm.VmSpec.from_json(json.loads(json.dumps(spec.to_json())))
    assert again == spec and again.argv() == spec.argv()
    argv = spec.argv()
    assert argv[argv.index("-smp") + 1] == "2"
    older = spec.to_json()  # a guest started before --cpus existed: one CPU, as it had
    del older["cpus"]
    assert vm.VmSpec.from_json(older).cpus == 1
    broken = spec.to_json()
    del broken["pidfile"]
    with pytest.raises(LabError, match="incomplete"):
        vm.VmSpec.from_json(broken)


def test_the_guest_finds_its_disks_and_port_without_waiting_for_udev(tmp_path: Path) -> None:
    """Under emulation udev's coldplug names the disks and the virtio port seconds after they
    exist, and the worker's Python start would wait for it: the units mount the command disk
    and the iolab source by probing the virtio disks, and the service finds its port in
    sysfs (its driver loaded first), then starts the worker.  The guest tests boot through
    these scripts; here, that they parse and wait for no udev link first."""
    from iolab.guest import files
    from iolab.guest.hosts import service_script
    from iolab.guest.run import BOOT_SCRIPT

    script = service_script("n0nce", "exec iolab worker")
    assert "by-label" not in script and "by-label" not in BOOT_SCRIPT
    assert script.index(files.PORT) < script.index("IOLAB-BOOT-n0nce")
    assert script.index("IOLAB-BOOT-n0nce") < script.index("exec iolab worker")
    assert files.PORT in BOOT_SCRIPT and "/opt/iolab/src" not in files.FILES["/etc/fstab"][1]
    mount, port = files.FILES[files.MOUNT][1], files.FILES[files.PORT][1]
    assert "/sys/block/vd*/serial" in mount and "IOLABSRC) src=" in mount
    assert "modprobe -q virtio_console" in port and "/sys/class/virtio-ports" in port
    for unit in ("iolab-guest-run.service", "iolab-guest-service.service"):
        assert f"ExecStartPre={files.MOUNT}\n" in files.FILES[f"/etc/systemd/system/{unit}"][1]
    for name, text, shell in (("service", script, "bash"), ("boot", BOOT_SCRIPT, "bash"),
                              ("mount", mount, "sh"), ("port", port, "sh")):  # fmt: skip
        path = tmp_path / name
        path.write_text(text)
        assert subprocess.run([shell, "-n", str(path)], check=False).returncode == 0, name
