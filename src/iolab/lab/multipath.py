"""dm-multipath maps iolab makes: N request-based paths to one backing device.

The paths are one loop image attached N times (each loop device is a blk-mq request queue
of its own, as request-based multipath requires; dm-linear paths would be bio-based and the
kernel refuses to stack a request-based map on them).  The map is created with
`dmsetup create NAME --uuid IOLAB-...`; both are journaled (undo `dmremove`) before, and the
undo removes a map only when the map of that name carries that UUID — a map iolab did not make
is never removed or sent a message.  Maps managed by multipathd carry `mpath-` UUIDs, so
multipathd leaves this one alone too.

Table: `0 SECTORS multipath 0 0 1 1 SELECTOR 0 N 0 MAJ:MIN ...` — no features, no hardware
handler, one priority group holding every path, the selector without arguments, no per-path
arguments (round-robin's repeat_count and service-time's throughput take their defaults).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from iolab.errors import LabError
from iolab.lab import commands
from iolab.monitors.base import ChangeJournal

SELECTOR_MODULES = {
    "round-robin": "dm_round_robin",
    "queue-length": "dm_queue_length",
    "service-time": "dm_service_time",
}


@dataclass(frozen=True)
class Map:
    name: str  # dm name (dmsetup), e.g. iolab-12-3456-0
    uuid: str  # IOLAB-...
    kernel: str  # dm-3
    paths: tuple[str, ...]  # "7:3" per path, in table order

    @property
    def path(self) -> str:
        return f"/dev/mapper/{self.name}"


def devno(device: str) -> str:
    st = os.stat(device)
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"


def sectors(device: str) -> int:
    name = Path(os.path.realpath(f"/sys/dev/block/{devno(device)}")).name
    return int(Path(f"/sys/class/block/{name}/size").read_text().strip())


def table(size_sectors: int, selector: str, paths: list[str]) -> str:
    return f"0 {size_sectors} multipath 0 0 1 1 {selector} 0 {len(paths)} 0 {' '.join(paths)}"


def map_uuid(name: str) -> str | None:
    """The UUID of map `name`, None when there is no such map."""
    text = commands.output(["dmsetup", "info", "-c", "--noheadings", "-o", "uuid", name])
    return None if text is None else text.strip()


def create(journal: ChangeJournal, name: str, devices: list[str], selector: str) -> Map:
    """The multipath map over `devices` (journaled first)."""
    commands.require("dmsetup")
    uuid = f"IOLAB-{name}"
    paths = [devno(d) for d in devices]
    journal.record("dmremove", name=name, uuid=uuid)
    text = table(sectors(devices[0]), selector, paths)
    commands.run(["dmsetup", "create", name, "--uuid", uuid, "--table", text])
    info = commands.run(["dmsetup", "info", "-c", "--noheadings", "-o", "major,minor", name])
    major, _, minor = info.stdout.strip().partition(":")
    kernel = Path(os.path.realpath(f"/sys/dev/block/{major.strip()}:{minor.strip()}")).name
    return Map(name, uuid, kernel, tuple(paths))


def message(name: str, text: str) -> None:
    """`dmsetup message NAME 0 TEXT` to a map of ours."""
    commands.run(["dmsetup", "message", name, "0", *text.split()])


@dataclass(frozen=True)
class PathState:
    devno: str
    active: bool
    fail_count: int


_PATH = re.compile(r"(\d+:\d+) ([AF]) (\d+)")


def parse_status(text: str) -> list[PathState]:
    """Path states from a multipath status line (`... 7:1 A 0 7:2 F 1 ...`: device, Active or
    Failed, fail count; then the selector's own per-path fields, which are numbers)."""
    return [PathState(m.group(1), m.group(2) == "A", int(m.group(3))) for m in _PATH.finditer(text)]


def status_text(name: str) -> str:
    return (commands.output(["dmsetup", "status", name]) or "").strip()


def status(name: str) -> list[PathState]:
    return parse_status(status_text(name))


def undo_dmremove(args: dict[str, str]) -> None:
    """Remove map `name` only when it carries the journaled UUID (retrying while it is busy)."""
    import shutil

    if shutil.which("dmsetup") is None:
        return
    name, wanted = args["name"], args["uuid"]
    for attempt in range(20):
        found = map_uuid(name)
        if found is None or found != wanted:
            return  # gone, or somebody else's map of that name: not ours to remove
        proc = subprocess.run(
            ["dmsetup", "remove", name],
            capture_output=True,
            text=True,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        if proc.returncode == 0:
            return
        if attempt == 19:
            why = (proc.stderr.strip().splitlines() or ["dmsetup remove failed"])[-1]
            raise LabError(f"cannot remove dm map {name}: {why}")
        time.sleep(0.3)


def undo_dmmessage(args: dict[str, str]) -> None:
    """Send a message (reinstate_path) to map `name` if it is still ours."""
    import shutil

    if shutil.which("dmsetup") is None:
        return
    if map_uuid(args["name"]) != args["uuid"]:
        return
    subprocess.run(
        ["dmsetup", "message", args["name"], "0", *args["message"].split()],
        capture_output=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
