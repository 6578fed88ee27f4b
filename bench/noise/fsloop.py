"""A private ext4 loop image in /dev/shm for the noise benchmarks, and one fio sample on it.

This is the *naive* side of the comparison — what a shell loop does — so it deliberately does
not use iolab.lab.  Everything it makes is named `noisebench-<pid>-<tag>` and removed in
`finally`, so it never touches another engineer's loop devices or mounts.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

MKFS = ["mkfs.ext4", "-F", "-q", "-m", "1", "-b", "4096"]
MOUNT_OPTIONS = "noatime,nodiratime,data=ordered"

# Example (a)'s job (examples/ext4-fsync-vs-fdatasync.yaml, variant fsync) with its
# placeholders as format fields.
JOB_A = """[global]
directory={mnt}
filename=shared-1m
size=1M
ioengine=psync
rw=randwrite
bs=16k
numjobs=16
{thread}
group_reporting
time_based
runtime={runtime}
fsync=1
{extra}
[randwrite-16k]
"""


def _run(argv: list[str], tries: int = 1) -> str:
    """Run argv; retry: a bpftrace started elsewhere while we were mounted holds a copy of
    the mount in its own namespace, keeping the device busy until it exits."""
    for attempt in range(tries):
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        if proc.returncode == 0:
            return proc.stdout
        if attempt + 1 < tries:
            time.sleep(0.5)
    raise RuntimeError(f"{' '.join(argv)}: exit {proc.returncode}: {proc.stderr.strip()}")


@dataclass
class LoopFs:
    image: Path
    device: str
    mnt: Path
    size_mb: int
    mounted: bool = True

    def remkfs(self, extra: tuple[str, ...] = ()) -> None:
        """A fresh filesystem on the same loop device (what `prepare.mkfs: per-sample` does)."""
        _run(["umount", str(self.mnt)])
        self.mounted = False
        try:
            _run([*MKFS, *extra, self.device], tries=10)
        except RuntimeError:
            # Still held (see _run): detach it (the kernel frees it when released) and go on
            # with a new image and loop device: a fresh filesystem all the same.
            subprocess.run(["losetup", "-d", self.device], check=False)
            self.image.unlink(missing_ok=True)
            with open(self.image, "wb") as f:
                f.truncate(self.size_mb << 20)
            self.device = _run(["losetup", "--find", "--show", str(self.image)]).strip()
            _run([*MKFS, *extra, self.device], tries=10)
        _run(["mount", "-o", MOUNT_OPTIONS, self.device, str(self.mnt)])
        self.mounted = True


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(f"terminated by signal {signum}")


@contextmanager
def ext4_loop(tag: str, size_mb: int = 512) -> Iterator[LoopFs]:
    """Create, format and mount a tmpfs-backed loop image; undo all of it on the way out."""
    signal.signal(signal.SIGTERM, _terminate)  # so that `finally` below still runs
    name = f"noisebench-{os.getpid()}-{tag}"
    image = Path("/dev/shm") / f"{name}.img"
    mnt = Path("/tmp") / name
    device = ""
    fs: LoopFs | None = None
    try:
        with open(image, "wb") as f:
            f.truncate(size_mb << 20)
        device = _run(["losetup", "--find", "--show", str(image)]).strip()
        _run([*MKFS, device])
        mnt.mkdir(exist_ok=True)
        _run(["mount", "-o", MOUNT_OPTIONS, device, str(mnt)])
        fs = LoopFs(image, device, mnt, size_mb)
        yield fs
    finally:
        if fs is not None and fs.mounted:
            subprocess.run(["umount", str(mnt)], check=False)
        if fs is not None:
            device = fs.device
        if device:
            subprocess.run(["losetup", "-d", device], check=False)
        if mnt.exists():
            mnt.rmdir()
        image.unlink(missing_ok=True)


def drop_caches() -> None:
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


@dataclass
class FioSample:
    iops: float
    clat_mean_ns: float
    clat_p99_ns: float
    usr_cpu: float
    sys_cpu: float
    ctx: int
    started: float  # wall-clock time the sample started (epoch seconds)


def run_fio(job: str, cpus: str | None = None, nice: int = 0) -> FioSample:
    """Run one fio job text; the write side's KPIs from its JSON output."""
    with tempfile.TemporaryDirectory(prefix="noisebench-") as tmp:
        path = Path(tmp) / "job.fio"
        path.write_text(job)
        argv = ["fio", "--output-format=json", str(path)]
        if cpus is not None:
            argv = ["taskset", "-c", cpus, *argv]
        if nice:
            argv = ["nice", "-n", str(nice), *argv]
        started = time.time()
        out = _run(argv)
    doc = json.loads(out[out.index("{") :])
    j = doc["jobs"][0]
    w = j["write"]
    return FioSample(
        iops=float(w["iops"]),
        clat_mean_ns=float(w["clat_ns"]["mean"]),
        clat_p99_ns=float(w["clat_ns"].get("percentile", {}).get("99.000000", 0.0)),
        usr_cpu=float(j["usr_cpu"]),
        sys_cpu=float(j["sys_cpu"]),
        ctx=int(j["ctx"]),
        started=started,
    )


def job_a(mnt: Path, runtime: str = "2s", thread: bool = True, extra: str = "") -> str:
    return JOB_A.format(mnt=mnt, runtime=runtime, thread="thread" if thread else "", extra=extra)
