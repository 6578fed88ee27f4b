"""One owner record per host-wide setting: concurrent runs never restore each other's values.

A sysctl is one value for the whole machine.  When each run journals "the value I saw" and
writes it back at its end, two overlapping runs leave the machine with the first run's
setting (the second saw it and restored it).  So host-wide settings go through a registry,
one JSON file under /run/iolab guarded by flock(2):

* the first process to change a setting records the value in force before it (the
  **original**) and becomes its holder; the registry entry and the journal's `release`
  entry are written before the setting is;
* a process that wants the same value joins as another holder (nothing is written);
* a process that wants a different value while a live process holds the setting waits —
  all of a sample's settings are taken at once or none, so two runs waiting on each other
  cannot deadlock — and fails the sample after `IOLAB_SETTINGS_WAIT` seconds (default 600)
  with a line naming the holder;
* releasing drops the holder; the last holder to go writes the original back.

Holders are (pid, process start time): an entry whose holders are all dead (kill -9) is
restored by the next process that touches it, or by `iolab cleanup` undoing the dead
process's `release` journal entry — whichever comes first; the other finds nothing to do.
vm.dirty_bytes/vm.dirty_ratio (and the background pair) are one setting in two units, so
they share one entry; its original names whichever of the pair was in force.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from iolab.errors import LabError
from iolab.procs import process_alive, process_start


class Journal(Protocol):
    """What taking a setting needs of the change journal (iolab.lab.journal.Journal, which
    in turn calls `release` to undo): write down the undo before the change."""

    def record(self, kind: str, **undo: str) -> int: ...


DIRS = (Path("/run/iolab"), Path("/var/lib/iolab"))
REGISTRY = "settings.json"
LOCK = "settings.lock"
POLL_S = 0.2


def registry_dir() -> Path:
    """/run/iolab (gone at reboot, like the settings it records), else /var/lib/iolab."""
    for candidate in DIRS:
        if candidate.parent.exists() and os.access(candidate.parent, os.W_OK):
            return candidate
    return DIRS[-1]


def wait_limit() -> float:
    try:
        return float(os.environ.get("IOLAB_SETTINGS_WAIT", "600"))
    except ValueError:
        return 600.0


@dataclass(frozen=True)
class Want:
    """A setting a sample needs: `key` groups files that are one setting (the dirty pair)."""

    key: str
    writes: tuple[tuple[str, str], ...]  # (path, value) to write, in order
    # (path, value) that puts back what is in force now: read under the lock, when the
    # first holder comes, never earlier (a waiting run would see another run's value)
    original: Callable[[], tuple[str, str]]

    @property
    def value(self) -> str:
        return ";".join(f"{path}={value}" for path, value in self.writes)


@contextlib.contextmanager
def _locked() -> Iterator[Path]:
    base = registry_dir()
    base.mkdir(parents=True, exist_ok=True)
    with open(base / LOCK, "a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield base / REGISTRY
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _alive(holder: Mapping[str, Any]) -> bool:
    return process_alive(int(holder["pid"]), holder.get("start"))


def _write(path: str, value: str) -> None:
    target = Path(path)
    if not target.exists():
        return  # the setting went away (module unloaded, device gone) and its value with it
    try:
        target.write_text(value)
    except OSError as exc:
        raise LabError(f"cannot restore {path} to {value!r}: {exc.strerror}") from None


def _prune(data: dict[str, Any]) -> None:
    """Drop dead holders; an entry nobody holds any more is put back to its original."""
    for key in list(data):
        entry = data[key]
        entry["holders"] = [h for h in entry.get("holders", []) if _alive(h)]
        if not entry["holders"]:
            _write(entry["restore_path"], entry["restore_value"])
            del data[key]


def _me() -> dict[str, Any]:
    pid = os.getpid()
    return {"pid": pid, "start": process_start(pid)}


def _same(holder: Mapping[str, Any], me: Mapping[str, Any]) -> bool:
    return bool(holder["pid"] == me["pid"] and holder.get("start") == me["start"])


def _try_take(journal: Journal, wants: list[Want]) -> str | None:
    """Take every wanted setting, or none: returns what blocks, else None."""
    me = _me()
    with _locked() as path:
        data = _load(path)
        _prune(data)
        for want in wants:
            entry = data.get(want.key)
            if entry is None or entry["value"] == want.value:
                continue
            others = [h for h in entry["holders"] if not _same(h, me)]
            if others:
                holder = others[0]
                return f"{want.key} is held at {entry['value']} by pid {holder['pid']}"
        for want in wants:
            entry = data.get(want.key)
            held = entry is not None and any(_same(h, me) for h in entry["holders"])
            if held and entry is not None and entry["value"] == want.value:
                continue  # this process holds it already (at this value)
            if entry is None:
                restore_path, restore_value = want.original()
                entry = {"restore_path": restore_path, "restore_value": restore_value}
            if entry.get("value") != want.value:
                entry = data[want.key] = {**entry, "value": want.value, "holders": []}
            entry["holders"].append(me)
            journal.record("release", key=want.key, pid=str(me["pid"]), start=str(me["start"]))
        _save(path, data)
        for want in wants:
            for file, value in want.writes:
                try:
                    Path(file).write_text(value)
                except FileNotFoundError:
                    raise LabError(f"{want.key}: no such setting here ({file})") from None
                except OSError as exc:
                    raise LabError(
                        f"{Path(file).name} = {value}: the kernel refused it ({exc.strerror})"
                    ) from None
    return None


def take(journal: Journal, wants: list[Want]) -> None:
    """Hold every wanted setting at its value for the caller's journal scope (see above)."""
    if not wants:
        return
    deadline = time.monotonic() + wait_limit()
    while True:
        blocked = _try_take(journal, wants)
        if blocked is None:
            return
        if time.monotonic() >= deadline:
            raise LabError(f"{blocked} (another iolab run) for longer than {wait_limit():g} s")
        time.sleep(POLL_S)


def release(key: str, pid: int, start: int | None) -> None:
    """Drop one holder (the journal's `release` undo); the last one restores the original."""
    with _locked() as path:
        data = _load(path)
        entry = data.get(key)
        if entry is not None:
            entry["holders"] = [
                h for h in entry["holders"] if not (h["pid"] == pid and h.get("start") == start)
            ]
        _prune(data)
        _save(path, data)


def held_original(path: str) -> str | None:
    """The value a live iolab process will put back into the setting file `path` when it
    lets go, or None when nobody holds it (what is in force then is the machine's own).
    For anyone who must know the machine's value while runs may overlap — e.g. a test that
    checks a run restored it — without reading another run's setting as the original."""
    with _locked() as registry:
        data = _load(registry)
    for entry in data.values():
        if entry.get("restore_path") == path and any(_alive(h) for h in entry.get("holders", [])):
            return str(entry["restore_value"])
    return None
