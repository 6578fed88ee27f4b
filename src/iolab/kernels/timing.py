"""Where a kernel switch's time goes, read from the host's own clocks after the boot.

A switch runs from the worker's request (`switch.prepare`, wall clock `requested_at`) to the
next sample's start.  The new boot knows the rest on its monotonic boot clock
(`CLOCK_BOOTTIME`, zero at the kernel's start): systemd's own stamps (userspace started,
multi-user.target reached, as `systemd-analyze` prints them), the start of the process that
became the worker (a service script that `exec`s it: one pid), the worker's `main` (after
Python's start and iolab's imports) and the moment Celery was ready to consume, and the task
that asked for the sample.  `stamps` gathers them into each booted sample's provenance
(`boot.switch`); `parts` turns them into durations (the bench prints them).  Every stamp is
optional: a host without systemd, or a clock that cannot be read, leaves it out.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

_MARKS: dict[str, float] = {}


def since_boot() -> float:
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def mark(name: str) -> None:
    """Note, once per process, when `name` happened (seconds since the kernel's start)."""
    _MARKS.setdefault(name, since_boot())


_SYSTEMD_MARKS: dict[str, float] = {}


def _systemd(unit: str | None, **props: str) -> dict[str, float]:
    """systemd monotonic timestamp properties in seconds since boot (0 or unknown: left
    out), all of one unit (or of the manager) from one `systemctl show`."""
    argv = ["systemctl", "show", *([unit] if unit else [])]
    argv += [f"--property={p}" for p in props.values()]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return {}
    return parse_show(out.stdout, props)


def parse_show(text: str, props: dict[str, str]) -> dict[str, float]:
    """`systemctl show`'s `Name=value` lines: the `props` (key -> property) that hold a
    monotonic timestamp in microseconds, in seconds (0 means never: left out)."""
    values = dict(line.partition("=")[::2] for line in text.splitlines())
    found: dict[str, float] = {}
    for key, prop in props.items():
        try:
            value = int(values.get(prop, "0") or "0")
        except ValueError:
            continue
        if value > 0:
            found[key] = value / 1e6
    return found


_SYSTEMD_LOCK = threading.Lock()
SYSTEMD_DIR = Path("/run/systemd/system")  # there when systemd runs the machine


def systemd_marks() -> dict[str, float]:
    """systemd's marks of this boot: `initrd_s`, `userspace_s`, `multi_user_s`.  Read once
    per process when multi-user had been reached (they cannot change after it): every
    `systemctl` is a process start, a fraction of a second under emulation, and it sits on
    the way to the sample the switch was for (`prefetch_systemd_marks` reads them sooner)."""
    with _SYSTEMD_LOCK:
        if "multi_user_s" not in _SYSTEMD_MARKS:
            _SYSTEMD_MARKS.update(
                _systemd(
                    None,
                    initrd_s="InitRDTimestampMonotonic",
                    userspace_s="UserspaceTimestampMonotonic",
                )
            )
            _SYSTEMD_MARKS.update(
                _systemd("multi-user.target", multi_user_s="ActiveEnterTimestampMonotonic")
            )
        return dict(_SYSTEMD_MARKS)


def prefetch_systemd_marks(wait_s: float = 120.0, every_s: float = 0.5) -> threading.Thread:
    """Read systemd's marks in a thread of their own, once multi-user is reached (within
    `wait_s`), so the first sample after a switch finds them read: the worker calls it
    when it is ready to take blocks, and the two `systemctl` starts then run beside the
    block's first steps instead of before its sample."""

    def read() -> None:
        if not SYSTEMD_DIR.is_dir():
            return  # systemd does not run this machine: there is nothing to read
        deadline = time.monotonic() + wait_s
        while "multi_user_s" not in systemd_marks() and time.monotonic() < deadline:
            time.sleep(every_s)

    thread = threading.Thread(target=read, name="iolab-systemd-marks", daemon=True)
    thread.start()
    return thread


def process_start() -> float | None:
    """When this process started, in seconds since boot (/proc/self/stat, field 22)."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def stamps(
    requested_at: float, install_s: float = 0.0, fired_at: float | None = None
) -> dict[str, float]:
    """The switch's stamps, taken when the worker is about to measure the sample it booted
    for: `requested_at`, `fired_at` (the boot command's start: `systemctl kexec` or the
    boot hook) and `boot_at` (wall clock), the rest in seconds since boot, and
    `install_s`, what fetching and installing the kernel took before the request (a built
    kernel's first boot: its files from the store, then `dpkg -i`).  `measure_s` is taken
    last, after systemd's marks are read: the sample starts once this returns."""
    marks = systemd_marks()
    now = since_boot()
    found: dict[str, float | None] = {
        "install_s": install_s,
        "requested_at": requested_at,
        "fired_at": fired_at,
        "boot_at": time.time() - now,
        **marks,
        "service_s": process_start(),
        "worker_main_s": _MARKS.get("worker_main"),
        "worker_ready_s": _MARKS.get("worker_ready"),
        "task_s": _MARKS.get("task", now),
        "checked_s": _MARKS.get("task_checked"),
        "measure_s": now,
    }
    return {k: round(v, 3) for k, v in found.items() if v is not None}


PARTS = (
    ("load and hand-over", "requested_at", "fired_at"),  # kexec -l, the task's end, 1 s
    ("shutdown and kexec", "fired_at", "boot_at"),
    ("shutdown and kexec", "requested_at", "boot_at"),  # without a fired_at: both in one
    ("kernel", "boot_at", "userspace_s"),
    ("systemd to multi-user", "userspace_s", "multi_user_s"),
    ("worker start", "service_s", "worker_main_s"),
    ("worker connects", "worker_main_s", "worker_ready_s"),
    ("controller sends the block", "worker_ready_s", "task_s"),
    ("task to sample", "task_s", "measure_s"),
    # within the task's way: its lease claimed, the plan read and checked on the host
    ("of which claim and checks", "task_s", "checked_s"),
)


def parts(
    switch: dict[str, float], sample_started_at: float | None = None, *, warmed: bool = False
) -> dict[str, float]:
    """Durations (seconds) of a switch's parts, from the stamps of `stamps` (a part whose
    two ends are not both known is left out); `total` runs from the request to the sample's
    start (its `started_at`, wall clock) when given — the install before the request is not
    in it, it is its own part — `from the boot command` from `systemctl kexec` (or the boot
    hook) to the same start, and `multi_user` is systemd's own figure.  A sample `warmed`
    (the plan's `warmups` ran before it) has its switch end where the lab began, at the
    warm-up: the warm-up is a part of its own, a cost of the design, not of the switch."""
    at = dict(switch)
    if "boot_at" in at:  # wall-clock stamps as seconds since boot, to subtract them
        for key in ("requested_at", "fired_at"):
            if key in at:
                at[key] -= at["boot_at"]
        at["boot_at"] = 0.0
    out: dict[str, float] = {}
    for name, a, b in PARTS:
        if a in at and b in at and name not in out:
            out[name] = round(at[b] - at[a], 1)
    end = sample_started_at
    if warmed and sample_started_at is not None and "boot_at" in switch and "measure_s" in at:
        end = switch["boot_at"] + at["measure_s"]
        out["warm-up (not measured)"] = round(sample_started_at - end, 1)
    if at.get("install_s"):
        out["fetch and install (dpkg -i)"] = round(at["install_s"], 1)
    if "multi_user_s" in at:
        out["multi_user"] = round(at["multi_user_s"], 1)
    if end is not None and "requested_at" in switch:
        out["total"] = round(end - switch["requested_at"], 1)
    if end is not None and "fired_at" in switch:
        out["from the boot command"] = round(end - switch["fired_at"], 1)
    return out
