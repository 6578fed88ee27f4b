"""Tracepoint histograms (pages per ext4_writepages call, handles per jbd2 transaction,
issued request sizes) as bins of the sample, with `.count` and `.mean` summary metrics.

Backend "auto" uses bpftrace where it is installed (aggregation in the kernel, nothing per
event in user space) and falls back to a tracefs instance when bpftrace is missing or fails
to start; the fallback is reported as a warning of the sample.
"""

from __future__ import annotations

import os
from typing import Literal, Protocol

from iolab.errors import LabError
from iolab.model.result import Histogram
from iolab.monitors.base import MonitorContext, Reading
from iolab.monitors.bpftrace import BpftraceSession, bpftrace_path
from iolab.monitors.procfs import block_device_exists, kernel_dev_t
from iolab.monitors.tracefs import TracefsSession, tracefs_available
from iolab.monitors.tracepoints import probes_for, summarize

Backend = Literal["auto", "bpftrace", "tracefs"]
BACKENDS: tuple[Backend, ...] = ("auto", "bpftrace", "tracefs")


class _Session(Protocol):
    def start(self) -> None: ...

    def stop(self) -> tuple[dict[str, Histogram], list[str]]: ...


class HistMonitor:
    """Exact-bin histograms of tracepoint fields, limited to the target's devices."""

    name = "hist"

    def __init__(self, backend: Backend = "auto") -> None:
        self.backend = backend
        self.used: str | None = None  # the backend of the last start
        self.attach_s: float | None = None  # bpftrace's attach time of the last start
        self._session: _Session | None = None
        self._warnings: list[str] = []

    def unavailable(self, ctx: MonitorContext) -> str | None:
        if os.geteuid() != 0:
            return "needs root to trace"
        missing = [d for d in ctx.devices if not block_device_exists(d)]
        if not ctx.devices or missing:
            return f"no such block device: {', '.join(missing) or '(none)'}"
        if self.backend == "bpftrace" and bpftrace_path() is None:
            return "bpftrace is not installed"
        if self.backend != "bpftrace" and bpftrace_path() is None:
            return tracefs_available()
        return None

    def start(self, ctx: MonitorContext) -> None:
        probes = probes_for(ctx)
        dev_ts = [kernel_dev_t(d) for d in ctx.devices]
        self._warnings = []
        self.attach_s = None
        if self.backend != "tracefs" and bpftrace_path() is not None:
            session = BpftraceSession(probes, dev_ts, ctx.journal, ctx.workdir)
            try:
                session.start()
            except LabError as exc:
                if self.backend == "bpftrace":
                    raise
                self._warnings.append(f"{exc.message}; using tracefs instead")
            else:
                self._session, self.used, self.attach_s = session, "bpftrace", session.attach_s
                return
        tracefs = TracefsSession(probes, dev_ts, ctx.journal)
        try:
            tracefs.start()
        except OSError as exc:
            raise LabError(f"tracefs: {exc.strerror or exc}") from None
        self._session, self.used = tracefs, "tracefs"

    def stop(self, ctx: MonitorContext) -> Reading:
        session, self._session = self._session, None
        if session is None:
            raise LabError("stop without start")
        try:
            hists, warnings = session.stop()
        except OSError as exc:
            raise LabError(f"{self.used}: {exc.strerror or exc}") from None
        reading = Reading(warnings=self._warnings + warnings)
        for name, bins in hists.items():
            reading.metrics.update(summarize(name, bins))
            if bins:
                reading.histograms[name] = bins
        return reading
