"""`iolab guest up/down/list`: guests that stay up as fleet hosts.

A guest host is a QEMU process (detached, in a session of its own) and a directory,
`<state>/<name>/`, holding its qcow2 overlay, its command disk, its console, the service's
output and `state.json` (pid and start time, so a reused pid is never taken for it).  Its
network is QEMU's restricted user network: it reaches only the broker and store ports of
the controller's loopback, forwarded to 10.0.2.100 inside.  `down` kills the process and
removes the directory; nothing else on the machine was changed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import SplitResult, urlsplit, urlunsplit

from iolab.errors import IolabError, LabError
from iolab.guest import disks, files, vm
from iolab.guest.image import Image
from iolab.guest.run import BOOT_MARK, parse_boots
from iolab.procs import process_alive, process_start

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
_LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
DEFAULT_PORTS = {"redis": 6379, "rediss": 6379, "postgresql": 5432}
CONFIG_IN_GUEST = "/run/iolab-cmd/host.toml"


def state_root() -> Path:
    """Where guest hosts live: $IOLAB_GUEST_STATE, else /var/lib/iolab/guests."""
    return Path(os.environ.get("IOLAB_GUEST_STATE") or "/var/lib/iolab/guests")


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise IolabError(f"guest name {name!r}: letters, digits, '.', '_' and '-' only")
    return name


@dataclass(frozen=True)
class Forwarded:
    """A controller URL as the guest must use it, and the loopback port it needs."""

    url: str
    port: int


def forward_url(url: str, what: str) -> Forwarded:
    """`url` (the controller's, on loopback) rewritten to reach it from inside the guest."""
    parts = urlsplit(url)
    scheme = parts.scheme.split("+")[0]
    if scheme not in DEFAULT_PORTS:
        raise IolabError(f"{what} {url!r}: expected redis://HOST:PORT/N or postgresql://…")
    host = parts.hostname or ""
    if not host or "host=" in parts.query:
        raise IolabError(f"{what}: a Unix socket cannot be forwarded into a guest; use TCP")
    if host not in _LOOPBACK and not host.startswith("127."):
        raise IolabError(
            f"{what}: a guest reaches only this machine's loopback (127.0.0.1), not {host!r}"
        )
    try:
        port = parts.port or DEFAULT_PORTS[scheme]
    except ValueError:
        raise IolabError(f"{what} {url!r}: the port is not a number") from None
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = (userinfo + "@" if userinfo else "") + f"{vm.GUEST_GATEWAY}:{port}"
    guest = urlunsplit(SplitResult(parts.scheme, netloc, parts.path, parts.query, ""))
    return Forwarded(guest, port)


@dataclass(frozen=True)
class GuestHost:
    """What `guest list` shows of one guest host."""

    name: str
    host_class: str
    pid: int
    alive: bool
    kernels: tuple[str, ...]
    booted: str  # the kernel of the guest's latest boot, from its own report ('' before)
    boot_id: str
    boots: int
    ports: tuple[int, ...]
    started_at: float
    path: Path


def _env_line(key: str, value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'{key}="{escaped}"\n'


def _host_toml(
    name: str, host_class: str, hooks: dict[str, list[str]] | None = None, kexec: str = "direct"
) -> str:
    """The guest's host config: no boot hook (the built-in kexec; `direct` unless asked: the
    guest's root is a throw-away overlay).  Its power cycle is the controller's (`iolab guest
    power-cycle NAME`, iolab.fleet.power), not the guest's."""
    table = dict(hooks or {})
    lines = [
        f'name = "{name}"',
        f'class = "{host_class}"',
        "allow_commands = false",
        f'kexec = "{kexec}"',
    ]
    hb = os.environ.get("IOLAB_FLEET_HEARTBEAT_S")
    if hb:
        lines.append(f"heartbeat_s = {float(hb)!r}")
    lines += ["", "[hooks]"]
    lines += [f"{k} = {json.dumps(list(v))}" for k, v in sorted(table.items())]
    return "\n".join(lines) + "\n"


def service_script(nonce: str, command: str) -> str:
    """The guest's service: reports its boot, then runs `command`, output to the host.  The
    unit's ExecStartPre has mounted the iolab source (`guest.files`, iolab-guest-mount).
    Everything before `command` is bash's own when the port is there (`read`, no `uname`,
    `cat`, `mountpoint` or port script): it sits between the service's start and the
    worker's, and each process start is a fraction of a second under TCG."""
    return (
        "#!/bin/bash\n"
        f"{files.PORT_IN_SYSFS}"
        "port=$dev\n"
        f'[ -c "$port" ] || port=$({files.PORT}) || port=/dev/virtio-ports/iolab.out\n'
        'exec >>"$port" 2>&1\n'
        "src=\n"
        'while read -r _ at _; do [ "$at" = /opt/iolab/src ] && src=1; done </proc/self/mounts\n'
        '[ -n "$src" ] || echo "iolab: the iolab source disk is not mounted"\n'
        "read -r release </proc/sys/kernel/osrelease\n"
        "read -r boot_id </proc/sys/kernel/random/boot_id\n"
        f'echo "{BOOT_MARK}-{nonce} $release $boot_id"\n'
        f"{command}\n"
    )


def default_command(name: str, host_class: str) -> str:
    """The fleet worker, as its own systemd unit would run it (it undoes what a killed
    iolab left first, in its own process)."""
    worker = ["iolab", "worker", "--name", name, "--class", host_class]
    return "exec " + shlex.join([*worker, "--config", CONFIG_IN_GUEST])


def up(
    name: str,
    image: Image,
    kernel: str,
    *,
    broker: str,
    db: str,
    host_class: str = "default",
    command: str | None = None,
    files: dict[str, bytes] | None = None,
    memory_mib: int = 1024,
    cpus: int = 1,
    icount_shift: int | None = None,
    wait_s: float = 300.0,
    hooks: dict[str, list[str]] | None = None,
    kexec: str = "direct",
) -> GuestHost:
    """Start guest `name` on `kernel` as a fleet host; returns once it reported its boot
    (within `wait_s`; 0: at once).  The service is `iolab worker` unless `command` is given."""
    check_name(name)
    fwd = [forward_url(broker, "--broker"), forward_url(db, "--db")]
    root = state_root()
    path = root / name
    current = _read(path) if path.exists() else None
    if current is not None and current.alive:
        raise IolabError(f"guest {name} is already up (pid {current.pid}); `iolab guest down`")
    if path.exists():
        shutil.rmtree(path)  # a guest that died (or a machine that rebooted): start afresh
    path.mkdir(parents=True, mode=0o700)
    vmlinuz, initrd = image.kernel(kernel)
    nonce = secrets.token_hex(6)
    try:
        env = (
            _env_line("IOLAB_BROKER", fwd[0].url)
            + _env_line("IOLAB_DB", fwd[1].url)
            + _env_line("IOLAB_GUEST_NAME", name)
            + _env_line("IOLAB_GUEST_CLASS", host_class)
            + "".join(
                _env_line(k, os.environ[k])
                for k in ("IOLAB_FLEET_HEARTBEAT_S",)
                if os.environ.get(k)
            )
        )
        payload = {
            "nonce": nonce.encode(),
            "env": env.encode(),
            "host.toml": _host_toml(name, host_class, hooks, kexec).encode(),
            "service": service_script(nonce, command or default_command(name, host_class)).encode(),
            **(files or {}),
        }
        spec = vm.VmSpec(
            kernel=vmlinuz,
            initrd=initrd,
            cmdline=f"root=/dev/vda rw console=ttyS0 panic=5 iolab.mode=service iolab.host={name}",
            disks=disks.guest_disks(image.root, path, payload),
            out=path / "service.log",
            console=path / "console.log",
            pidfile=path / "qemu.pid",
            memory_mib=memory_mib,
            cpus=cpus,
            icount_shift=icount_shift,
            forwards=tuple(sorted({f.port for f in fwd})),
            reboot_exits=False,
        )
        proc = vm.start(spec, path / "qemu.log", detached=True)
        state = {
            "spec": spec.to_json(),
            "name": name,
            "class": host_class,
            "pid": proc.pid,
            "start": process_start(proc.pid),
            "kernels": list(image.recipe.kernels),
            "image": image.recipe.key,
            "nonce": nonce,
            "ports": list(spec.forwards),
            "started_at": time.time(),
        }
        (path / "state.json").write_text(json.dumps(state) + "\n")
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        raise
    return _wait_booted(name, proc.pid, wait_s)


def power_cycle(name: str) -> GuestHost:
    """Pull the plug and switch it on again: QEMU killed (a power cut: nothing in the guest
    is told), then started anew on the same overlay, which boots its first kernel as a
    machine's firmware would; the console and the service's output until the cut are kept
    as `console.before-cycle-N.log` and `service.before-cycle-N.log`.  What the controller's
    `power_cycle` hook runs for a guest."""
    check_name(name)
    path = state_root() / name
    try:
        state = json.loads((path / "state.json").read_text())
    except (OSError, ValueError):
        raise IolabError(f"no guest named {name}") from None
    _kill(int(state["pid"]))
    spec = vm.VmSpec.from_json(state["spec"])
    cycles = int(state.get("power_cycles", 0)) + 1
    # QEMU starts its console and port files anew: the old ones hold what the guest and its
    # worker did before the cut (a hang's last lines), kept beside them until `guest down`
    for kept, file in (("console", spec.console), ("service", spec.out)):
        with contextlib.suppress(OSError):
            file.replace(path / f"{kept}.before-cycle-{cycles}.log")
    proc = vm.start(spec, path / "qemu.log", detached=True)
    state.update(pid=proc.pid, start=process_start(proc.pid))
    state["power_cycles"] = cycles
    tmp = path / "state.json.tmp"
    tmp.write_text(json.dumps(state) + "\n")
    tmp.replace(path / "state.json")
    host = _read(path)
    assert host is not None
    return host


def _kill(pid: int) -> None:
    """SIGTERM then SIGKILL QEMU's session (its socat helpers go with it)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, sig)
        for _ in range(50):
            if not process_alive(pid):
                return
            time.sleep(0.1)


def _wait_booted(name: str, pid: int, wait_s: float) -> GuestHost:
    deadline = time.monotonic() + wait_s
    while True:
        host = _read(state_root() / name)
        if host is None:
            raise LabError(f"guest {name}: its state vanished while starting")
        if host.boots or wait_s <= 0:
            return host
        if not host.alive:
            said = vm.last_words(host.path / "qemu.log")
            tail = (f": {said}" if said else "") + _console_tail(host.path)
            down(name)
            raise LabError(f"guest {name}: QEMU ended before the guest booted{tail}")
        stopped = vm.halted(host.path / "qemu.log")
        if stopped is not None:
            tail = _console_tail(host.path)
            down(name)
            raise LabError(f"guest {name}: stopped by QEMU before it booted: {stopped}{tail}")
        if time.monotonic() > deadline:
            tail = _console_tail(host.path)
            down(name)
            raise LabError(f"guest {name} did not boot within {wait_s:.0f} s{tail}")
        time.sleep(1.0)


def _console_tail(path: Path, n: int = 6) -> str:
    console = path / "console.log"
    if not console.exists():
        return ""
    lines = [ln.strip() for ln in console.read_text(errors="replace").splitlines() if ln.strip()]
    return "; console: " + " | ".join(ln[:160] for ln in lines[-n:])


def _read(path: Path) -> GuestHost | None:
    try:
        state = json.loads((path / "state.json").read_text())
    except (OSError, ValueError):
        return None
    pid = int(state["pid"])
    alive = process_alive(pid, state.get("start"))
    out = path / "service.log"
    text = out.read_text(errors="replace") if out.exists() else ""
    boots = parse_boots(text, str(state["nonce"]))
    last = boots[-1] if boots else None
    return GuestHost(
        name=str(state["name"]),
        host_class=str(state["class"]),
        pid=pid,
        alive=alive,
        kernels=tuple(state["kernels"]),
        booted=last.release if last else "",
        boot_id=last.boot_id if last else "",
        boots=len(boots),
        ports=tuple(state["ports"]),
        started_at=float(state["started_at"]),
        path=path,
    )


def listing() -> list[GuestHost]:
    root = state_root()
    if not root.is_dir():
        return []
    hosts = [_read(p) for p in sorted(root.iterdir()) if p.is_dir()]
    return [h for h in hosts if h is not None]


def down(name: str) -> bool:
    """Stop guest `name` and remove everything it made; False when there was no such guest."""
    check_name(name)
    path = state_root() / name
    if not path.exists():
        return False
    host = _read(path)
    if host is not None and host.alive:
        _kill(host.pid)  # QEMU leads its own session: its socat helpers go with it
    shutil.rmtree(path)
    return True
