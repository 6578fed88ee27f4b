"""Switch this host to a kernel, and judge the boot that follows.

No task spans a reboot.  `prepare` writes what is expected (release, command line additions,
the boot id it leaves) to a state file, synced, and loads the kernel; `fire` then starts the
boot outside the worker's task: whatever happens next, the host knows after its next start
what it was meant to be running.  `verdict`, run by the worker that starts after the boot,
compares the running boot with it:

- `pending`     — still the boot that asked (the switch has not happened yet);
- `ok`          — a new boot id, the release asked for, every added word on the command line;
- `wrong_kernel` — a new boot, but another release or command line (or the host's `check`
  hook failed): the sample must not be measured or stored.

The command line given to the new kernel is the host's own (the running one without what an
earlier switch added) followed by `iolab.extra=N` and the N words the plan adds, so switches
never accumulate additions and the additions are visible in /proc/cmdline.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Literal

from iolab.errors import IolabError, LabError
from iolab.kernels import boot, hooks

MARK = "iolab.extra"
Verdict = Literal["none", "pending", "ok", "wrong_kernel"]


def state_path() -> Path:
    """$IOLAB_KERNEL_STATE, else /var/lib/iolab/kernel-switch.json."""
    return Path(os.environ.get("IOLAB_KERNEL_STATE") or "/var/lib/iolab/kernel-switch.json")


def fired_path() -> Path:
    """Where the boot command's start is stamped (beside the request)."""
    return state_path().with_suffix(".fired")


def _fired_at() -> float:
    try:
        return float(fired_path().read_text().strip())
    except (OSError, ValueError):
        return 0.0


@dataclass(frozen=True)
class Request:
    kernel: str
    additions: tuple[str, ...]
    cmdline: str
    from_boot_id: str
    from_release: str
    requested_at: float
    token: str  # which sample asked (e.g. "run 7 block 3 position 1")
    answered_by: str = ""  # the boot id judged `ok` for it: a later boot answers nothing
    install_s: float = 0.0  # how long fetching and installing the kernel took, before it
    # when the boot command (`systemctl kexec`, or the boot hook) started, wall clock: left
    # by `fire` beside the request and read back when the boot is judged (0: unknown)
    fired_at: float = 0.0


@dataclass(frozen=True)
class Judged:
    verdict: Verdict
    reason: str
    request: Request | None
    boot: boot.BootInfo

    def provenance(self) -> dict[str, object]:
        """What a sample measured in this boot records about it."""
        out: dict[str, object] = {f"boot_{k}": v for k, v in self.boot.as_dict().items()}
        if self.request is not None:
            out["boot_requested"] = self.request.kernel
            out["boot_additions"] = " ".join(self.request.additions)
            out["boot_from"] = self.request.from_boot_id
        out["boot_verdict"] = self.verdict
        return out


def base_words(cmdline: str) -> list[str]:
    """The running command line without what an earlier switch added."""
    words = cmdline.split()
    for i, word in enumerate(words):
        if word == MARK or word.startswith(MARK + "="):
            return words[:i]
    return words


def new_cmdline(running: str, kernel: str, additions: Sequence[str]) -> str:
    words = [
        f"BOOT_IMAGE={hooks.BOOT_DIR}/vmlinuz-{kernel}" if w.startswith("BOOT_IMAGE=") else w
        for w in base_words(running)
    ]
    if additions:
        words += [f"{MARK}={len(additions)}", *additions]
    return " ".join(words)


def _run(argv: list[str], what: str, timeout: float = 600) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise LabError(f"{what} hook: {argv[0]} not found") from None
    except subprocess.TimeoutExpired:
        raise LabError(f"{what} hook: {argv[0]} did not end within {timeout:.0f} s") from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
        raise LabError(f"{what} hook {argv[0]} failed (exit {proc.returncode}): {tail[0]}")
    return proc.stdout


def prepare(
    kernel: str,
    additions: Sequence[str] = (),
    *,
    host_hooks: Mapping[str, Sequence[str]] | None = None,
    token: str = "",
    fetch: Callable[[str], Sequence[Path]] | None = None,
    kexec: str = "systemd",
) -> tuple[Request, list[list[str]]]:
    """Everything of a switch that can fail while the task still runs: install the kernel
    if it is missing (the `install` hook; for a built kernel its files are first fetched by
    `fetch(release)`, and installed only while the release is missing), record the request
    (synced), and — for the built-in kexec — load the kernel (`kexec -l`).  Returns the
    request and what `fire` must still run (the boot hook, or the jump: `systemctl kexec`,
    or with `kexec="direct"` `sync` and `kexec -e`)."""
    table = host_hooks or {}
    began = time.monotonic()
    now = boot.current()
    target = hooks.Target(kernel, new_cmdline(now.cmdline, kernel, additions), tuple(additions))
    install = table.get("install")
    built = install is not None and hooks.uses_artifacts(install)
    missing = not Path(target.vmlinuz).exists()
    if built and missing:
        # a built kernel (git-range bisect): its files come from the store, installed once
        if fetch is None:
            raise LabError(f"kernel {kernel}: the install hook wants built files; none known")
        files = tuple(str(p) for p in fetch(kernel))
        target = replace(target, artifacts=files)
    if missing and "boot" not in table:
        if install is None:
            raise LabError(f"kernel {kernel}: {target.vmlinuz} is missing and no install hook")
        _run(hooks.expand(install, target), "install")
        if not Path(target.vmlinuz).exists():
            raise LabError(f"kernel {kernel}: the install hook left no {target.vmlinuz}")
    elif install is not None and not (built and not missing):
        _run(hooks.expand(install, target), "install")
    req = Request(
        kernel=kernel,
        additions=tuple(additions),
        cmdline=target.cmdline,
        from_boot_id=now.boot_id,
        from_release=now.release,
        requested_at=time.time(),
        token=token,
        install_s=round(time.monotonic() - began, 3),
    )
    commands = hooks.boot_commands(table, target, kexec)
    if "boot" not in table:
        load, *commands = commands
        _run(load, "boot (kexec -l)")
    fired_path().unlink(missing_ok=True)  # an earlier switch's stamp is not this one's
    _write(req)
    return req, commands


END_WAIT_S = 2.0  # how long the boot waits for the process it ended to be gone


def fire(
    commands: Sequence[Sequence[str]],
    delay_s: float = 1.0,
    stamp: Path | None = None,
    end: int | None = None,
) -> None:
    """Start the boot outside this process, after `delay_s` (time for the task to end and
    its message to be acknowledged): through `systemd-run` when systemd runs the machine
    (the boot then belongs to no unit that stops on the way), else a session of its own.
    A shell runs them, not a second Python: under emulation a Python's start is seconds of
    the switch.  `stamp` gets the wall-clock time the commands start (the switch's cost is
    also counted from there: `systemctl kexec` on); a stamp that cannot be written, or that
    a brutal jump loses, only leaves that figure out.

    `end` is a process killed (SIGKILL) before the commands, and waited for (at most
    `END_WAIT_S`): a worker's, before a direct jump that stops no service.  Its exit closes
    its connections while the network is up; left open, the controller's side of each
    (a PostgreSQL backend, a forwarder) would outlive the boot, one more per switch."""
    import shlex
    import shutil

    script = f"sleep {delay_s:g}; "
    if stamp is not None:
        script += f"date +%s.%N > {shlex.quote(str(stamp))} 2>/dev/null; "
    if end is not None:
        tries = int(END_WAIT_S / 0.05)
        script += (
            f"kill -KILL {end:d} 2>/dev/null; i=0; "
            f"while kill -0 {end:d} 2>/dev/null && [ $i -lt {tries} ]; "
            "do sleep 0.05; i=$((i+1)); done; "
        )
    script += " && ".join(shlex.join(c) for c in commands)
    argv = ["/bin/sh", "-c", script]
    if shutil.which("systemd-run") and Path("/run/systemd/system").is_dir():
        argv = [
            "systemd-run",
            "--quiet",
            "--collect",
            "--unit",
            f"iolab-boot-{os.getpid()}",
            "--description",
            "iolab: boot the next kernel",
            *argv,
        ]
    subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def answered(req: Request, boot_id: str) -> None:
    """Record that boot `boot_id` was the one made for `req` (judged ok), so that a later
    boot — after a power cut mid-sample — is never taken for it."""
    if req.answered_by != boot_id:
        _write(replace(req, answered_by=boot_id))


def clear() -> None:
    """Forget the request: its boot has been used (a sample measured in it)."""
    state_path().unlink(missing_ok=True)
    fired_path().unlink(missing_ok=True)


def running_additions(cmdline: str) -> tuple[str, ...]:
    """The words an earlier switch added to this boot's command line (after iolab.extra=N)."""
    words = cmdline.split()
    for i, word in enumerate(words):
        if word.startswith(MARK + "="):
            try:
                n = int(word.split("=", 1)[1])
            except ValueError:
                return ()
            return tuple(words[i + 1 : i + 1 + n])
    return ()


def _write(req: Request) -> None:
    path = state_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with tmp.open("w") as fh:
        json.dump(asdict(req), fh)
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def pending() -> Request | None:
    try:
        data = json.loads(state_path().read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise IolabError(f"{state_path()}: unreadable switch state: {exc}") from None
    data["additions"] = tuple(data["additions"])
    return Request(**data)


def verdict(
    host_hooks: Mapping[str, Sequence[str]] | None = None, *, settle: bool = True
) -> Judged:
    """Judge the running boot against the recorded request; `settle` clears the request
    once judged (ok or wrong_kernel), so the next start has nothing pending."""
    req = pending()
    now = boot.current()
    if req is None:
        return Judged("none", "no kernel switch was requested", None, now)
    if now.boot_id == req.from_boot_id:
        return Judged("pending", f"still the boot that asked for {req.kernel}", req, now)
    if req.answered_by and req.answered_by != now.boot_id:
        # the boot made for it came and went (a power cut, a crash): this one is not it
        return Judged("none", f"the boot made for {req.kernel} has ended", None, now)
    problems = []
    if now.release != req.kernel:
        problems.append(f"running {now.release}, asked for {req.kernel}")
    missing = [w for w in req.additions if w not in now.cmdline.split()]
    if missing:
        problems.append(f"command line lacks {' '.join(missing)}")
    check = (host_hooks or {}).get("check")
    if check and not problems:
        target = hooks.Target(req.kernel, req.cmdline, req.additions)
        try:
            _run(hooks.expand(check, target), "check", timeout=120)
        except LabError as exc:
            problems.append(exc.message)
    judged = Judged(
        "wrong_kernel" if problems else "ok",
        "; ".join(problems) or f"booted {req.kernel} (new boot {now.boot_id})",
        replace(req, fired_at=req.fired_at or _fired_at()),
        now,
    )
    if settle:
        clear()
    return judged
