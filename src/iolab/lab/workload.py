"""Executing one workload (fio, xfs_io, dd or any command) and reading its result.

The workload runs in its own session and process group, so the lab can stop it and every
process it forked at once (Ctrl-C, SIGTERM, timeout); it is also told to die with iolab
(PR_SET_PDEATHSIG) and its group is journaled, so `iolab cleanup` kills it after a kill -9.
Output goes to files in the sample's private directory, never through pipes that could fill.

fio runs with `--output-format=json+` and is read by iolab.ingest.fio_json (histogram bins
included); xfs_io and dd by their ingest readers; a command by the plan's regex rule.  Any
failure — non-zero exit, an error fio reports for a job, output without a result — becomes
a `failure` text, never a number.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from iolab.errors import IngestError, NoIOError
from iolab.lab import commands
from iolab.lab.journal import Journal
from iolab.model.result import Result
from iolab.plan.model import WorkloadSpec
from iolab.procs import process_start

PR_SET_PDEATHSIG = 1


@dataclass
class Execution:
    """What one workload execution produced."""

    result: Result | None
    failure: str | None
    elapsed_s: float
    user_s: float = 0.0
    sys_s: float = 0.0
    stdout: str = ""
    stderr: str = ""
    extra: dict[str, float] = field(default_factory=dict)
    ran_without_io: bool = False  # a step not measured that did no I/O, as it may

    @property
    def ok(self) -> bool:
        return self.failure is None and (self.result is not None or self.ran_without_io)


def _die_with_parent() -> None:
    """In the child: get SIGKILL when iolab dies, even by kill -9."""
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _gated(argv: list[str]) -> list[str]:
    """`argv` behind a gate: a shell that execs it (same pid, same process group, stdin
    /dev/null) only once a line arrives on the shell's stdin.  iolab journals the child's
    process group first, then opens the gate: a kill -9 between the spawn and that entry
    would otherwise leave a workload nobody knows of (fio's job processes outlive their
    parent and keep the mount busy for their whole runtime).  Killed before the gate opens,
    the shell dies with iolab (the parent-death signal; the gate's end of file too), and the
    workload never starts."""
    return ["/bin/sh", "-c", 'read -r _ && exec "$@" </dev/null', "sh", *argv]


def _stop_group(pgid: int) -> None:
    """SIGTERM the group, then SIGKILL what is still there after a moment."""
    for sig, grace in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 0.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)


def spawn(
    journal: Journal,
    argv: list[str],
    workdir: Path,
    *,
    name: str,
    timeout_s: float,
    cpus: tuple[int, ...] | None = None,
) -> tuple[int, float, float, float, bool]:
    """Run argv in its own process group; returns (exit status, elapsed, user s, sys s,
    timed out).  stdout/stderr go to workdir/<name>.out / .err."""
    commands.require(argv[0])
    if cpus:
        argv = [commands.require("taskset"), "-c", ",".join(map(str, cpus)), *argv]
    out_path, err_path = workdir / f"{name}.out", workdir / f"{name}.err"
    gate_read, gate_write = os.pipe()
    try:
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            started = time.monotonic()
            proc = subprocess.Popen(
                _gated(argv),
                stdin=gate_read,
                stdout=out,
                stderr=err,
                cwd=workdir,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        start = process_start(proc.pid)
        entry = journal.record("killpg", pgid=str(proc.pid), start=str(start or 0))
        os.write(gate_write, b"go\n")  # journaled: the workload may start
    finally:
        os.close(gate_read)
        os.close(gate_write)
    timed_out = threading.Event()

    def on_timeout() -> None:
        timed_out.set()
        _stop_group(proc.pid)

    timer = threading.Timer(timeout_s, on_timeout)
    timer.daemon = True
    timer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    except BaseException:
        _stop_group(proc.pid)
        with contextlib.suppress(ChildProcessError):
            os.wait4(proc.pid, 0)
        raise
    finally:
        timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.monotonic() - started
    # workers that outlive the main process (should not happen) go with the group
    journal.undo(entry)
    return proc.returncode, elapsed, usage.ru_utime, usage.ru_stime, timed_out.is_set()


def _tail(text: str) -> str:
    """The line that says what went wrong: tools print the cause first, consequences after."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else ""


def execute(
    journal: Journal,
    workload: WorkloadSpec,
    workdir: Path,
    *,
    name: str = "workload",
    timeout_s: float = 3600.0,
    cpus: tuple[int, ...] | None = None,
    measured: bool = True,
) -> Execution:
    """Run a rendered workload (placeholders filled) and read its result.  A step that is
    not `measured` (a fill or warm-up) may do no I/O — fio's `create_only=1` pre-pass lays
    files out and reads nothing — so only its exit status and fio's job errors fail it."""
    if workload.kind == "fio":
        job = workdir / f"{name}.fio"
        job.write_text(workload.fio_text or "")
        output = workdir / f"{name}.json"
        argv = ["fio", "--output-format=json+", f"--output={output}", str(job)]
    else:
        argv = list(workload.argv)
        if not argv:
            return Execution(None, f"{workload.kind} workload without a command", 0.0)
    code, elapsed, user_s, sys_s, timed_out = spawn(
        journal, argv, workdir, name=name, timeout_s=timeout_s, cpus=cpus
    )
    stdout = (workdir / f"{name}.out").read_text(errors="replace")
    stderr = (workdir / f"{name}.err").read_text(errors="replace")
    execution = Execution(None, None, elapsed, user_s, sys_s, stdout, stderr)
    program = Path(argv[0]).name
    if timed_out:
        execution.failure = f"{program} killed after the {timeout_s:g} s timeout"
        return execution
    try:
        execution.result = _read_result(workload, workdir, name, stdout, stderr)
    except NoIOError as exc:
        if measured:
            execution.failure = exc.reason
        else:
            execution.ran_without_io = True
    except IngestError as exc:
        execution.failure = exc.reason
    if code != 0:
        why = _tail(stderr) or _tail(stdout) or "no message"
        if execution.failure is None:
            execution.failure = f"{program} exited with status {code}: {why}"
        execution.result = None
    return execution


def _read_result(
    workload: WorkloadSpec, workdir: Path, name: str, stdout: str, stderr: str
) -> Result:
    source = f"{workload.kind}:{name}"
    if workload.kind == "fio":
        from iolab.ingest import fio_json

        path = workdir / f"{name}.json"
        text = path.read_text(errors="replace") if path.exists() else ""
        if not fio_json.looks_like(text):
            raise IngestError(source, _tail(stderr) or "fio wrote no JSON result")
        results = fio_json.parse(text, source)
        return results[-1]
    if workload.kind in ("xfs_io", "dd"):
        from iolab.ingest.detect import reader_for

        find = reader_for(workload.kind)
        text = stdout if workload.kind == "xfs_io" else stderr + "\n" + stdout
        found = find(text.splitlines(), source)
        if not found:
            raise IngestError(source, _tail(stderr) or f"no {workload.kind} result in its output")
        last: Result = found[-1][1]
        return last  # several summaries (xfs_io -c twice): the last is the measurement
    return _command_result(workload, stdout, source)


def _command_result(workload: WorkloadSpec, stdout: str, source: str) -> Result:
    rule = workload.metric
    if rule is None:
        raise IngestError(source, "command workload without a metric rule")
    matches = list(re.finditer(rule.pattern, stdout, re.MULTILINE))
    if not matches:
        raise IngestError(source, f"no match for /{rule.pattern}/ in the command's output")
    raw = matches[-1].group(1)
    try:
        value = float(raw) * rule.scale
    except ValueError:
        raise IngestError(source, f"/{rule.pattern}/ captured {raw!r}, not a number") from None
    return Result(tool="command", format="command", source=source, metrics={rule.name: value})
