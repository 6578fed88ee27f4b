"""Tracepoint histograms from the kernel's own tracing buffer (tracefs), without bpftrace.

Each session creates a private trace instance (instances/iolab-<pid>-<n>) so it neither sees
nor disturbs anybody else's tracing, enables the probes' events there with a kernel-side
filter on the target's dev_t, and drains the instance's trace_pipe in a thread while the
workload runs (so a long sample does not overflow the buffer).  Events the kernel had to drop
are counted from per_cpu/*/stats and reported as a warning.  At stop the events are disabled,
the pipe is drained and the instance removed.

Every change is journaled before it is made: the instance (undo: rmdir), and, when tracefs is
not mounted anywhere, a private mount point and the tracefs mount on it (undo: rmdir, umount).
The bins are counted in Python from the text records; this costs CPU on the machine under test
for every event, which is why bpftrace is preferred where it is installed.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import re
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from iolab.errors import LabError
from iolab.model.result import Histogram
from iolab.monitors.base import ChangeJournal
from iolab.monitors.procfs import filesystem_supported, tracefs_mounts
from iolab.monitors.tracepoints import Probe

BUFFER_KB = 4096  # per CPU, for the instance only
_instances = itertools.count(1)
_STAT = re.compile(r"^(overrun|dropped events):\s*(\d+)", re.M)


def tracefs_available() -> str | None:
    """Why the tracefs backend cannot run here (None when it can)."""
    if tracefs_mounts() or filesystem_supported("tracefs"):
        return None
    return "the kernel has no tracefs"


class TracefsSession:
    """One trace instance counting the probes of one sample."""

    def __init__(
        self, probes: list[Probe], dev_ts: list[int], journal: ChangeJournal, poll_s: float = 0.1
    ) -> None:
        self.probes = probes
        self.dev_ts = dev_ts
        self.journal = journal
        self.poll_s = poll_s
        self.instance: Path | None = None
        self._point: Path | None = None  # our own mount point, when we had to mount tracefs
        self._mounted = False
        self._entries: dict[str, int] = {}
        self._bins: dict[str, Histogram] = {p.histogram: {} for p in probes}
        self._fd: int | None = None
        self._rest = b""
        self._stop = threading.Event()
        self._reader: threading.Thread | None = None

    # ------------------------------------------------------------------ set-up
    def _root(self) -> Path:
        mounts = tracefs_mounts()
        if mounts:
            return mounts[0]
        point = Path(tempfile.gettempdir()) / f"iolab-tracefs-{os.getpid()}-{next(_instances)}"
        self._entries["mountpoint"] = self.journal.record("rmdir", path=str(point))
        point.mkdir(mode=0o700)
        self._point = point
        self._entries["mount"] = self.journal.record("umount", path=str(point))
        proc = subprocess.run(
            ["mount", "-t", "tracefs", "nodev", str(point)],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise LabError(f"cannot mount tracefs: {proc.stderr.strip()}")
        self._mounted = True
        return point

    def _write(self, path: Path, text: str) -> None:
        try:
            path.write_text(text)
        except OSError as exc:
            raise LabError(f"cannot write {text!r} to {path}: {exc.strerror}") from None

    def start(self) -> None:
        try:
            root = self._root()
            name = f"iolab-{os.getpid()}-{next(_instances)}"
            instance = root / "instances" / name
            self._entries["instance"] = self.journal.record("rmdir", path=str(instance))
            try:
                instance.mkdir()
            except OSError as exc:
                raise LabError(f"cannot create trace instance {instance}: {exc.strerror}") from None
            self.instance = instance
            self._write(instance / "buffer_size_kb", str(BUFFER_KB))
            cond = " || ".join(f"dev == {d}" for d in self.dev_ts) or "0"
            for p in self.probes:
                event = instance / "events" / p.system / p.event
                if not event.is_dir():
                    raise LabError(f"tracepoint {p.system}:{p.event} does not exist here")
                self._write(event / "filter", cond)
            self._fd = os.open(instance / "trace_pipe", os.O_RDONLY | os.O_NONBLOCK)
            for p in self.probes:
                self._write(instance / "events" / p.system / p.event / "enable", "1")
        except BaseException:
            self._teardown()
            raise
        self._stop.clear()
        self._reader = threading.Thread(target=self._drain_loop, name="iolab-tracefs", daemon=True)
        self._reader.start()

    # ------------------------------------------------------------------ reading
    def _drain(self) -> bool:
        """Read what the pipe holds now; False when it is empty."""
        assert self._fd is not None
        try:
            chunk = os.read(self._fd, 1 << 16)
        except BlockingIOError:
            return False
        except OSError as exc:
            if exc.errno == errno.EINTR:
                return True
            raise
        if not chunk:
            return False
        data = self._rest + chunk
        lines = data.split(b"\n")
        self._rest = lines.pop()
        for raw in lines:
            self._count(raw.decode("utf-8", "replace"))
        return True

    def _count(self, line: str) -> None:
        # each pattern starts with the literal " <event>: ", which re finds fast
        for probe in self.probes:
            m = probe.text.search(line)
            if m is None:
                continue
            if (int(m[1]) << 20 | int(m[2])) in self.dev_ts:
                bins = self._bins[probe.histogram]
                value = float(m[3])
                bins[value] = bins.get(value, 0) + 1
            return

    def _drain_loop(self) -> None:
        while not self._stop.is_set():
            if not self._drain():
                self._stop.wait(self.poll_s)

    # ------------------------------------------------------------------ tear-down
    def _lost(self) -> int:
        lost = 0
        if self.instance is None:
            return 0
        for stats in sorted((self.instance / "per_cpu").glob("cpu*/stats")):
            with contextlib.suppress(OSError):
                lost += sum(int(m[2]) for m in _STAT.finditer(stats.read_text()))
        return lost

    def _teardown(self) -> None:
        """Disable, close, remove the instance, unmount: each step undone and marked."""
        if self._reader is not None:
            self._stop.set()
            self._reader.join()
            self._reader = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if "instance" in self._entries:
            if self.instance is not None:
                for attempt in range(20):
                    try:
                        self.instance.rmdir()
                        break
                    except FileNotFoundError:
                        break
                    except OSError as exc:  # EBUSY while a reader still holds a file
                        if attempt == 19:
                            raise LabError(
                                f"cannot remove trace instance {self.instance}: {exc.strerror}"
                            ) from None
                        time.sleep(0.05)
            self.journal.undone(self._entries.pop("instance"))
        if "mount" in self._entries:
            if self._mounted and self._point is not None:
                proc = subprocess.run(
                    ["umount", str(self._point)], capture_output=True, text=True, check=False
                )
                if proc.returncode != 0:
                    raise LabError(f"cannot unmount {self._point}: {proc.stderr.strip()}")
                self._mounted = False
            self.journal.undone(self._entries.pop("mount"))
        if "mountpoint" in self._entries:
            if self._point is not None:
                with contextlib.suppress(FileNotFoundError):
                    self._point.rmdir()
                self._point = None
            self.journal.undone(self._entries.pop("mountpoint"))

    def stop(self) -> tuple[dict[str, Histogram], list[str]]:
        warnings: list[str] = []
        try:
            if self.instance is None:
                raise LabError("tracefs: stop without start")
            for p in self.probes:
                with contextlib.suppress(OSError):
                    (self.instance / "events" / p.system / p.event / "enable").write_text("0")
            if self._reader is not None:
                self._stop.set()
                self._reader.join()
                self._reader = None
            while self._drain():
                pass
            lost = self._lost()
            if lost:
                warnings.append(f"tracefs: the kernel dropped {lost} events; histograms are short")
        finally:
            self._teardown()
        return self._bins, warnings
