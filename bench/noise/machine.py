"""The machine's state around a benchmark: what else was running matters as much as the figure."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path


def _first(path: str, prefix: str) -> str:
    for line in Path(path).read_text().splitlines():
        if line.startswith(prefix):
            return line.split(":", 1)[1].strip()
    return "?"


def cpu_pressure() -> str:
    """`some avg60` of /proc/pressure/cpu: the share of time runnable tasks waited for a CPU."""
    try:
        first = Path("/proc/pressure/cpu").read_text().splitlines()[0]
    except OSError:
        return "n/a"
    fields = dict(f.split("=") for f in first.split()[1:])
    return f"{fields.get('avg60', '?')}%"


def busy_processes(limit: int = 5) -> list[str]:
    """The processes using the most CPU (ps's lifetime average), for the record."""
    out = subprocess.run(
        ["ps", "-eo", "pcpu,comm", "--sort=-pcpu", "--no-headers"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return [" ".join(line.split()) for line in out.splitlines()[:limit]]


def snapshot() -> dict[str, str]:
    fio = subprocess.run(["fio", "--version"], capture_output=True, text=True, check=False)
    return {
        "host": platform.node(),
        "kernel": platform.release(),
        "cpu": _first("/proc/cpuinfo", "model name"),
        "cpus": str(os.cpu_count()),
        "memory": _first("/proc/meminfo", "MemTotal"),
        "fio": fio.stdout.strip(),
        "loadavg": Path("/proc/loadavg").read_text().strip(),
        "cpu_pressure_avg60": cpu_pressure(),
        "busiest": "; ".join(busy_processes()),
    }
