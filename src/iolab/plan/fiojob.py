"""fio job files: apply the plan's `fio:` option overrides, and let real fio check the result.

An override applies to every job: it replaces the option wherever a section sets it and is
set in [global] (a [global] section is added at the top when the file has none).  A null
override removes the option everywhere.  `check_job` runs `fio --parse-only`, which reads the
job file with fio's own option parser without doing I/O (about 10 ms).  What a fio accepted
is remembered on disk (`accepted_dir`) for that very binary: a worker checks its block's plan
again after every kernel switch, and under emulation each fio start is over half a second
of the switch.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

from iolab.errors import LabError
from iolab.plan.placeholders import device_index, fill_commit, names_in, render_text

_SECTION = re.compile(r"\s*\[([^\]]+)\]\s*$")


def option_key(line: str) -> str | None:
    """The option name a job-file line sets (`bs=4k` → `bs`, `direct` → `direct`), else None."""
    text = line.strip()
    if not text or text[0] in "#;" or _SECTION.match(text):
        return None
    return text.split("=", 1)[0].strip().lower()


def sections(text: str) -> list[str]:
    return [m.group(1).strip() for line in text.splitlines() if (m := _SECTION.match(line))]


def apply_overrides(text: str, overrides: Mapping[str, str | None]) -> str:
    """The job text with `overrides` (option → value, None = remove) applied to every job."""
    if not overrides:
        return text
    wanted = {key.lower(): value for key, value in overrides.items()}
    out: list[str] = []
    for line in text.splitlines():
        key = option_key(line)
        if key in wanted:
            continue  # dropped here; set once in [global] below
        out.append(line)
    settings = [_option(key, value) for key, value in wanted.items() if value is not None]
    if not settings:
        return "\n".join(out) + "\n"
    for i, line in enumerate(out):
        m = _SECTION.match(line)
        if m and m.group(1).strip() == "global":
            out[i + 1 : i + 1] = settings
            break
    else:
        out[0:0] = ["[global]", *settings]
    return "\n".join(out) + "\n"


def _option(key: str, value: str) -> str:
    return key if value == "" else f"{key}={value}"


def fio_available() -> bool:
    return shutil.which("fio") is not None


# A check takes 0.1 s on a host; in an emulated guest on a loaded machine, the first fio of a
# boot once took more than 30 s (docs/testing.md).  Only a fio that hangs waits this long.
CHECK_TIMEOUT_S = 300


def accepted_dir() -> Path:
    """Where the job texts a fio accepted are remembered across processes and boots, one
    empty file each: $IOLAB_FIO_CHECKS, else /var/cache/iolab/fio-checks."""
    return Path(os.environ.get("IOLAB_FIO_CHECKS") or "/var/cache/iolab/fio-checks")


def _accepted(fio: str, rendered: str) -> Path | None:
    """The file that says this fio binary accepted `rendered`: named by a hash of the binary
    (path, inode, size, modification time: an upgrade or a rebuild is another fio), the CPU
    count (fio checks CPU lists against it) and the text.  None when fio cannot be looked at.
    Only acceptances are kept: a rejected job is checked again each time."""
    try:
        st = os.stat(fio)
    except OSError:
        return None
    ident = f"{os.path.realpath(fio)}\0{st.st_ino}\0{st.st_size}\0{st.st_mtime_ns}"
    key = f"{ident}\0{os.cpu_count()}\0{rendered}".encode()
    return accepted_dir() / hashlib.sha256(key).hexdigest()


@lru_cache(maxsize=256)
def check_job(text: str) -> str | None:
    """fio's complaint about the job text (placeholders filled with dummy paths), or None.

    Returns None without checking when fio is not installed; the lab fails later then, and
    when this fio binary accepted the same text before (`accepted_dir`).  A LabError when fio
    does not answer within CHECK_TIMEOUT_S.
    """
    fio = shutil.which("fio")
    if fio is None:
        return None
    count = 1 + max((device_index(n) or 0) for n in [*names_in(text), "dev"])
    base = "/nonexistent/iolab-parse"  # the job goes in on stdin: nothing is created
    mounts = [f"{base}/mnt{i}" for i in range(count)]
    devices = [f"{base}/dev{i}" for i in range(count)]
    try:
        commit = fill_commit(text, f"{base}/src", "0" * 40)
        rendered = render_text(commit, mounts, devices, f"{base}/work")
    except KeyError as e:
        return f"unknown placeholder {{{e.args[0]}}}"
    accepted = _accepted(fio, rendered)
    if accepted is not None and accepted.exists():
        return None
    # a clock source named skips fio's start-up test of the CPU clock across CPUs (half
    # of a check's CPU, 65 ms here); parsing does not time anything
    try:
        proc = subprocess.run(
            [fio, "--clocksource=clock_gettime", "--parse-only", "-"],
            input=rendered,
            capture_output=True,
            text=True,
            timeout=CHECK_TIMEOUT_S,
            check=False,
            cwd="/",
        )
    except subprocess.TimeoutExpired:
        raise LabError(
            f"fio --parse-only did not answer within {CHECK_TIMEOUT_S} s (is this machine "
            "overloaded?)"
        ) from None
    if proc.returncode == 0:
        if accepted is not None:
            with contextlib.suppress(OSError):  # not remembered: checked again next time
                accepted.parent.mkdir(parents=True, exist_ok=True)
                accepted.touch()
        return None
    lines = [ln.strip() for ln in (proc.stderr + "\n" + proc.stdout).splitlines()]
    noise = ("dropped", "valid values")
    useful = [
        ln for ln in lines if ln and not ln.startswith(":") and not any(n in ln for n in noise)
    ]
    message = "; ".join(useful[:2]) or f"fio --parse-only exited with {proc.returncode}"
    return message.removeprefix("fio: ")


def offending_option(message: str) -> str | None:
    """`Bad option <fsyncc=1>` / `failed parsing rw=bogus` → the `key=value` text fio blamed."""
    m = re.search(r"<([^>]+)>|failed parsing (\S+)", message)
    if m is None:
        return None
    return m.group(1) or m.group(2)


def fio_seconds(text: str) -> float | None:
    """How long the fio job file runs by its own options: `ramp_time` + `runtime` of each job
    (its [global] options included), jobs one after another where `stonewall` or `wait_for`
    orders them, else side by side.  None when a job is bounded by its size rather than a
    time (no `runtime`), which only a run can tell."""
    from iolab.plan.values import duration_value

    global_opts: dict[str, str] = {}
    jobs: list[dict[str, str]] = []
    current: dict[str, str] | None = None
    for line in text.splitlines():
        m = _SECTION.match(line)
        if m:
            current = global_opts if m.group(1).strip() == "global" else {}
            if current is not global_opts:
                jobs.append(current)
            continue
        key = option_key(line)
        if key is not None and current is not None:
            current[key] = line.split("=", 1)[1].strip() if "=" in line else ""
    serial = False
    seconds: list[float] = []
    for job in jobs:
        opts = {**global_opts, **job}
        runtime = duration_value(opts["runtime"]) if opts.get("runtime") else None
        if runtime is None:
            return None
        ramp = duration_value(opts.get("ramp_time") or "0") or 0.0
        seconds.append(ramp + runtime)
        serial = serial or "stonewall" in job or "wait_for" in job
    if not seconds:
        return None
    return sum(seconds) if serial else max(seconds)
