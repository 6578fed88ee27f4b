"""Every undo action the change journal can name, and how each is carried out.

The journal (iolab.lab.journal) writes down an action's name and its arguments (all strings)
before the change is made, and calls the action back here at the end of the run or in
`iolab cleanup` after a kill -9, without knowing which part of the lab made the change.  The
device modules (md, multipath, null_blk, kernel modules) record their changes through the
`ChangeJournal` protocol and never import the journal; this table is the one place that knows
both the names and the code that undoes them.

    write   path, value      write `value` into `path` (sysctl, queue setting, tracefs file)
    umount  path             unmount `path` if something is mounted there
    rmdir   path             remove the directory if it exists (mount point, trace instance)
    rmtree  path             remove a scratch directory and its content (only `iolab-*` names)
    unlink  path             remove the file if it exists (loop image)
    loop    image            detach every loop device backed by `image`
    release key, pid, start  drop the holder (pid, start) of a host-wide setting; the last
                             holder writes back its original value (iolab.lab.settings)
    killpg  pgid, start      SIGKILL the process group `pgid` whose leader started at `start`
                             (clock ticks since boot, /proc/PID/stat field 22); members that
                             started earlier are not touched, so a reused id is left alone
    mdstop  uuid, label, members  stop the md array(s) carrying `uuid` (iolab chose it) and
                             wipe the listed members' superblocks of that array (iolab.lab.md)
    dmremove name, uuid      remove dm map `name` if it carries `uuid` (iolab.lab.multipath)
    dmmessage name, uuid, message  send `message` to map `name` if it carries `uuid`
    nullb   path             power off and remove an `iolab-*` null_blk configfs directory
    rmmod   module           unload a module iolab loaded, if nothing uses it any more

Undo actions are idempotent: undoing a change that was never made (the process died between
the journal line and the change) does nothing harmful.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from iolab.errors import LabError
from iolab.lab import md, modules, multipath, nullblk, settings
from iolab.lab.commands import loop_devices_of, mounted_at
from iolab.procs import process_stats

UndoAction = Callable[[dict[str, str]], None]


def _undo_write(args: dict[str, str]) -> None:
    path = Path(args["path"])
    if not path.exists():
        return  # the device or the tracefs instance is gone, and the setting with it
    try:
        path.write_text(args["value"])
    except OSError as exc:
        raise LabError(f"cannot restore {path} to {args['value']!r}: {exc.strerror}") from None


def _undo_umount(args: dict[str, str]) -> None:
    path = args["path"]
    for attempt in range(10):
        if not mounted_at(path):
            return
        proc = subprocess.run(["umount", path], capture_output=True, text=True, check=False)
        if proc.returncode == 0:
            continue
        if attempt == 9:
            raise LabError(f"cannot unmount {path}: {proc.stderr.strip()}")
        time.sleep(0.3)  # a workload process may still be exiting


def _undo_rmdir(args: dict[str, str]) -> None:
    path = Path(args["path"])
    if not path.exists():
        return
    try:
        path.rmdir()
    except OSError as exc:
        raise LabError(f"cannot remove directory {path}: {exc.strerror}") from None


def _undo_rmtree(args: dict[str, str]) -> None:
    path = Path(args["path"])
    if not path.name.startswith("iolab-"):
        raise LabError(f"not removing {path}: not an iolab scratch directory")
    shutil.rmtree(path, ignore_errors=True)


def _undo_unlink(args: dict[str, str]) -> None:
    with contextlib.suppress(FileNotFoundError):
        Path(args["path"]).unlink()


def _undo_loop(args: dict[str, str]) -> None:
    for device in loop_devices_of(args["image"]):
        for attempt in range(10):
            proc = subprocess.run(
                ["losetup", "-d", device], capture_output=True, text=True, check=False
            )
            if proc.returncode == 0:
                break
            if attempt == 9:
                raise LabError(f"cannot detach {device}: {proc.stderr.strip()}")
            time.sleep(0.3)


def _group_members(pgid: int, start: int) -> list[int]:
    # zombies and dead entries are only waiting to be reaped by their parent
    return [
        p.pid
        for p in process_stats()
        if p.state not in ("Z", "X") and p.pgid == pgid and p.start >= start
    ]


def _undo_killpg(args: dict[str, str]) -> None:
    pgid, start = int(args["pgid"]), int(args["start"])
    deadline = time.monotonic() + 5.0
    while True:
        members = _group_members(pgid, start)
        if not members:
            return
        for pid in members:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > deadline:
            raise LabError(f"processes of group {pgid} do not exit: {members}")
        time.sleep(0.05)


def _undo_release(args: dict[str, str]) -> None:
    start = None if args["start"] in ("", "None") else int(args["start"])
    settings.release(args["key"], int(args["pid"]), start)


def _undo_rmmod(args: dict[str, str]) -> None:
    if args["module"] == "null_blk" and nullblk.ours_exist():
        return  # somebody's null_blk devices are configured: the module stays
    modules.unload_if_unused(args["module"])


UNDO_ACTIONS: dict[str, UndoAction] = {
    "write": _undo_write,
    "umount": _undo_umount,
    "rmdir": _undo_rmdir,
    "rmtree": _undo_rmtree,
    "unlink": _undo_unlink,
    "loop": _undo_loop,
    "killpg": _undo_killpg,
    "release": _undo_release,
    "mdstop": md.undo_mdstop,
    "dmremove": multipath.undo_dmremove,
    "dmmessage": multipath.undo_dmmessage,
    "nullb": nullblk.undo_nullb,
    "rmmod": _undo_rmmod,
}


def undo_entry(kind: str, args: dict[str, str]) -> None:
    """Undo one journaled change (a LabError when it cannot be undone)."""
    action = UNDO_ACTIONS.get(kind)
    if action is None:
        raise LabError(f"journal entry of unknown kind {kind!r}: cannot undo {args}")
    action(args)
