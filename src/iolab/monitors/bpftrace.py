"""Tracepoint histograms aggregated in the kernel by bpftrace.

bpftrace counts each probe's field into a map (`@name[value] = count()`); nothing crosses to
user space until the end, when SIGINT makes it print the maps as JSON.  `start` returns only
once every probe is attached: bpftrace prints "Attaching N probes" *before* attaching and runs
BEGIN before the tracepoints are attached, so neither says the probes are live.  A sentinel
probe on getppid(2), filtered to this process, prints a line; bpftrace reads its output only
after its attach loop, so seeing that line proves the attach is complete.  We call getppid
until the line arrives.

`stop` asks for the maps before it asks bpftrace to exit: a second sentinel, getpgid(2) of a
pid that cannot exist, prints every map and then a line.  bpftrace itself detaches its probes
*before* it prints the maps at exit, and each detach waits for an RCU grace period in the
kernel; on a loaded machine that once took more than 30 s, and the histograms were lost with
the process.  The window of the histograms is therefore attach to stop, whatever the exit
costs.

When tracefs is not mounted (bpftrace needs it to resolve tracepoints), bpftrace is started in
a private mount namespace where tracefs is mounted for it alone: the machine's mount table is
not touched.  The process gets SIGKILL if iolab dies (PR_SET_PDEATHSIG) and is journaled as a
process group, so `iolab cleanup` also removes it.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import IO

from iolab.errors import LabError
from iolab.model.result import Histogram
from iolab.monitors.base import ChangeJournal
from iolab.monitors.procfs import tracefs_mounts
from iolab.monitors.tracepoints import Probe
from iolab.procs import process_start

READY = "iolab-ready"
FLUSHED = "iolab-flushed"
# getpgid(2) of this pid prints the maps: above the kernel's pid limit (2**22), so the call
# fails with ESRCH and no other caller asks for it
FLUSH_PID = 0x7FFFFFF0
# a constant script: mount tracefs inside the new namespace, then become bpftrace
_IN_PRIVATE_NS = 'mount -t tracefs nodev /sys/kernel/tracing && exec "$@"'
_PR_SET_PDEATHSIG = 1
_NOISE = ("RLIMIT_MEMLOCK",)  # bpftrace complains about it where memlock is not needed


def bpftrace_path() -> str | None:
    return shutil.which("bpftrace")


def program(probes: list[Probe], dev_ts: list[int], pid: int) -> str:
    """The bpftrace program: one counting probe per histogram, then the two sentinels."""
    cond = " || ".join(f"args->dev == {d}" for d in dev_ts) or "1"
    parts = [
        f"tracepoint:{p.system}:{p.event} /{cond}/ {{ @{p.hist}[args->{p.field}] = count(); }}"
        for p in probes
    ]
    parts.append(
        f'tracepoint:syscalls:sys_enter_getppid /pid == {pid}/ {{ printf("{READY}\\n"); }}'
    )
    prints = " ".join(f"print(@{p.hist});" for p in probes)
    parts.append(
        f"tracepoint:syscalls:sys_enter_getpgid /pid == {pid} && args->pid == {FLUSH_PID}/ "
        f'{{ {prints} printf("{FLUSHED}\\n"); }}'
    )
    return "\n".join(parts)


def parse_maps(lines: list[str], probes: list[Probe]) -> dict[str, Histogram]:
    """Histograms from bpftrace's JSON output lines (`{"type": "map", "data": {...}}`)."""
    wanted = {f"@{p.hist}": p.histogram for p in probes}
    out: dict[str, Histogram] = {p.histogram: {} for p in probes}
    for line in lines:
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(obj, dict) or obj.get("type") != "map":
            continue
        for map_name, content in obj.get("data", {}).items():
            if map_name in wanted and isinstance(content, dict):
                out[wanted[map_name]] = {float(k): int(v) for k, v in content.items()}
    return out


def _child_setup() -> None:
    """In the child: default SIGINT (a shell may have ignored it, and an ignored SIGINT
    survives exec) and SIGKILL when iolab dies, even by kill -9."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class BpftraceSession:
    """One bpftrace process counting the probes of one sample."""

    def __init__(
        self,
        probes: list[Probe],
        dev_ts: list[int],
        journal: ChangeJournal,
        workdir: Path,
        attach_timeout_s: float = 60.0,
        flush_timeout_s: float = 30.0,
        exit_timeout_s: float = 30.0,
    ) -> None:
        self.probes = probes
        self.dev_ts = dev_ts
        self.journal = journal
        self.workdir = workdir
        self.attach_timeout_s = attach_timeout_s
        self.flush_timeout_s = flush_timeout_s
        self.exit_timeout_s = exit_timeout_s
        self.attach_s: float | None = None  # how long attaching took (measured)
        self._proc: subprocess.Popen[str] | None = None
        self._entry: int | None = None
        self._lines: list[str] = []
        self._ready = threading.Event()
        self._flushed = threading.Event()
        self._flushed_lines: list[str] = []  # the maps as printed at stop
        self._reader: threading.Thread | None = None
        self._err_path = workdir / "bpftrace.err"

    def _argv(self) -> list[str]:
        exe = bpftrace_path()
        if exe is None:
            raise LabError("bpftrace is not installed")
        prog = program(self.probes, self.dev_ts, os.getpid())
        argv = [exe, "-f", "json", "-e", prog]
        if tracefs_mounts():
            return argv
        unshare = shutil.which("unshare")
        if unshare is None:
            raise LabError("tracefs is not mounted and unshare(1) is missing to mount it privately")
        return [
            unshare,
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            _IN_PRIVATE_NS,
            "sh",
            *argv,
        ]

    def _read(self, proc: subprocess.Popen[str], stream: IO[str]) -> None:
        """Collect stdout; at its end reap the process at once, so that a bpftrace killed by
        someone else (the journal's undo) does not linger as a zombie of its group."""
        for line in stream:
            if READY in line and '"printf"' in line:
                self._ready.set()
                continue
            if FLUSHED in line and '"printf"' in line and not self._flushed.is_set():
                self._flushed_lines = list(self._lines)
                self._flushed.set()
                continue
            self._lines.append(line)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)

    def start(self) -> None:
        argv = self._argv()
        env = dict(os.environ, BPFTRACE_MAP_KEYS_MAX="65536")
        t0 = time.monotonic()
        try:
            with open(self._err_path, "w") as err:
                proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=err,
                    text=True,
                    env=env,
                    start_new_session=True,
                    preexec_fn=_child_setup,
                )
        except OSError as exc:
            raise LabError(f"cannot start bpftrace: {exc.strerror or exc}") from None
        self._proc = proc
        deadline = t0 + self.attach_timeout_s
        try:
            self._entry = self.journal.record(
                "killpg", pgid=str(proc.pid), start=str(process_start(proc.pid) or 0)
            )
            assert proc.stdout is not None
            self._reader = threading.Thread(
                target=self._read, args=(proc, proc.stdout), name="iolab-bpftrace", daemon=True
            )
            self._reader.start()
            while not self._ready.is_set():
                if proc.poll() is not None:
                    raise LabError(f"bpftrace failed to start: {self._error_line()}")
                if time.monotonic() > deadline:
                    raise LabError(
                        f"bpftrace did not attach its probes within {self.attach_timeout_s:g} s"
                    )
                os.getppid()  # fires the sentinel probe once it is attached
                self._ready.wait(0.01)
        except BaseException:
            self._release()
            raise
        self.attach_s = time.monotonic() - t0

    def _error_line(self) -> str:
        with contextlib.suppress(OSError):
            lines = [
                ln.strip()
                for ln in self._err_path.read_text(errors="replace").splitlines()
                if ln.strip() and not any(n in ln for n in _NOISE)
            ]
            if lines:
                return lines[0]
        return f"exit status {self._proc.returncode if self._proc else '?'}"

    def _release(self) -> None:
        """Make sure the process is gone and reaped; mark its journal entry undone."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        if self._reader is not None:
            self._reader.join(timeout=10)
            self._reader = None
        if proc is not None and proc.stdout is not None:
            proc.stdout.close()
        if self._entry is not None and proc is not None and proc.poll() is not None:
            self.journal.undone(self._entry)
            self._entry = None
        self._proc = None

    def _flush(self, proc: subprocess.Popen[str]) -> bool:
        """Have the flush sentinel print the maps; True once they have all arrived."""
        deadline = time.monotonic() + self.flush_timeout_s
        while proc.poll() is None and time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                os.getpgid(FLUSH_PID)  # fails (ESRCH); the probe fires on entry
            if self._flushed.wait(1.0):
                return True
        return self._flushed.is_set()

    def stop(self) -> tuple[dict[str, Histogram], list[str]]:
        """The maps as of now (the flush sentinel), then SIGINT; returns the histograms.

        Without the flush (bpftrace died, or never printed them) the maps bpftrace prints as
        it exits on SIGINT are used, if they come within `exit_timeout_s`."""
        proc = self._proc
        if proc is None:
            raise LabError("bpftrace: stop without start")
        warnings: list[str] = []
        try:
            flushed = self._flush(proc)
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=self.exit_timeout_s)
            except subprocess.TimeoutExpired:
                if not flushed:
                    warnings.append("bpftrace did not exit on SIGINT; killed, histograms lost")
            if self._reader is not None:
                self._reader.join(timeout=10)
                self._reader = None
        finally:
            self._release()
        if flushed:
            return parse_maps(self._flushed_lines, self.probes), warnings
        if proc.returncode not in (0, -signal.SIGINT) and not warnings:
            warnings.append(f"bpftrace ended with status {proc.returncode}: {self._error_line()}")
        return parse_maps(self._lines, self.probes), warnings
