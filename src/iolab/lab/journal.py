"""The change journal: every change the lab makes to the machine, written down before it is made.

One file per iolab process, JSON lines, each line flushed and fsync'd before the change it
announces happens.  At the end of a run the changes are undone in reverse order; after a
kill -9, `iolab cleanup` reads the files whose owner process is gone and undoes what is left.

An entry names an *undo action* and its arguments (all strings), so that cleanup can undo it
without knowing who made the change.  The actions and their arguments are listed in
iolab.lab.undo; the journal only writes them down and calls them back.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iolab.errors import LabError
from iolab.lab.undo import UNDO_ACTIONS, undo_entry
from iolab.procs import process_alive, process_start

DEFAULT_DIRS = (Path("/run/iolab/journal"), Path("/var/lib/iolab/journal"))
SUFFIX = ".jsonl"


def journal_dir() -> Path:
    """Where journals live: $IOLAB_JOURNAL_DIR, else /run/iolab/journal (gone at reboot, as
    are the mounts and loop devices it describes), else /var/lib/iolab/journal."""
    env = os.environ.get("IOLAB_JOURNAL_DIR")
    if env:
        return Path(env)
    for candidate in DEFAULT_DIRS:
        if candidate.parent.exists() and os.access(candidate.parent, os.W_OK):
            return candidate
    return DEFAULT_DIRS[-1]


# --------------------------------------------------------------------------- the journal


@dataclass
class Entry:
    id: int
    kind: str
    args: dict[str, str]
    undone: bool = False


@dataclass
class Journal:
    """The journal of this process (implements iolab.monitors.base.ChangeJournal)."""

    path: Path
    entries: list[Entry] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @classmethod
    def open(cls, directory: Path | None = None, **meta: Any) -> Journal:
        directory = directory or journal_dir()
        directory.mkdir(parents=True, exist_ok=True)
        pid = os.getpid()
        start = process_start(pid)
        path = directory / f"iolab-{pid}-{start}{SUFFIX}"
        journal = cls(path)
        journal._append(
            {
                "op": "open",
                "pid": pid,
                "start": start,
                "time": time.time(),
                "argv": sys.argv,
                **meta,
            }
        )
        with contextlib.suppress(OSError):
            fd = os.open(directory, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        return journal

    def _append(self, obj: dict[str, Any]) -> None:
        line = json.dumps(obj, sort_keys=True) + "\n"
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())

    def note(self, **meta: Any) -> None:
        """Add facts about the owner (e.g. its run id) for whoever reads the journal later."""
        self._append({"op": "note", **meta})

    def record(self, kind: str, **undo: str) -> int:
        """Write down a change about to be made and how to undo it; returns its id."""
        if kind not in UNDO_ACTIONS:
            raise ValueError(f"unknown undo action {kind!r}")
        entry = Entry(len(self.entries) + 1, kind, {k: str(v) for k, v in undo.items()})
        self._append({"op": "change", "id": entry.id, "kind": kind, "undo": entry.args})
        self.entries.append(entry)
        return entry.id

    def undone(self, entry_id: int) -> None:
        """Mark a change as undone (its maker reverted it itself)."""
        self.entries[entry_id - 1].undone = True
        self._append({"op": "undone", "id": entry_id})

    def undo(self, entry_id: int) -> None:
        """Undo one change now (a LabError if it cannot be) and mark it undone."""
        entry = self.entries[entry_id - 1]
        if not entry.undone:
            undo_entry(entry.kind, entry.args)
            self.undone(entry_id)

    def mark(self) -> int:
        """A position to undo back to with `undo_since`."""
        return len(self.entries)

    def undo_since(self, mark: int) -> list[str]:
        """Undo, newest first, every change made after `mark`; returns what could not be undone."""
        failures = []
        for entry in reversed(self.entries[mark:]):
            if entry.undone:
                continue
            try:
                undo_entry(entry.kind, entry.args)
            except LabError as exc:
                failures.append(exc.message)
                continue
            self.undone(entry.id)
        self.errors.extend(failures)
        return failures

    def undo_all(self) -> list[str]:
        return self.undo_since(0)

    @contextlib.contextmanager
    def scope(self) -> Iterator[None]:
        """Changes made inside are undone on the way out, also on errors and interrupts."""
        mark = self.mark()
        try:
            yield
        finally:
            with signals_deferred():
                self.undo_since(mark)

    def close(self) -> None:
        """Undo what is left and remove the file when nothing remains to undo."""
        with signals_deferred():
            self.undo_all()
            if all(entry.undone for entry in self.entries):
                self._append({"op": "closed"})
                with contextlib.suppress(FileNotFoundError):
                    self.path.unlink()


# --------------------------------------------------------------------------- signals


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM while the machine is being restored: a second Ctrl-C must not leave
    a half-restored machine.  The signal takes effect when the block ends."""
    blocked = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
    except (ValueError, OSError):  # not the main thread / not supported
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


# --------------------------------------------------------------------------- cleanup


@dataclass
class LeftOver:
    """A journal file of a process that did not finish restoring the machine."""

    path: Path
    pid: int | None
    start: int | None
    meta: dict[str, Any]
    entries: list[Entry]

    @property
    def owner_alive(self) -> bool:
        return self.pid is not None and process_alive(self.pid, self.start)

    @property
    def pending(self) -> list[Entry]:
        return [entry for entry in self.entries if not entry.undone]


def read_journal(path: Path) -> LeftOver:
    pid: int | None = None
    start: int | None = None
    meta: dict[str, Any] = {}
    entries: dict[int, Entry] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line torn by a crash mid-write: its change was never made
        op = obj.get("op")
        if op == "open":
            pid, start = obj.get("pid"), obj.get("start")
            meta.update({k: v for k, v in obj.items() if k not in ("op", "pid", "start")})
        elif op == "note":
            meta.update({k: v for k, v in obj.items() if k != "op"})
        elif op == "change":
            entries[obj["id"]] = Entry(obj["id"], obj["kind"], dict(obj["undo"]))
        elif op == "undone" and obj.get("id") in entries:
            entries[obj["id"]].undone = True
    return LeftOver(path, pid, start, meta, [entries[k] for k in sorted(entries)])


def leftovers(directory: Path | None = None) -> list[LeftOver]:
    directory = directory or journal_dir()
    if not directory.is_dir():
        return []
    return [read_journal(p) for p in sorted(directory.glob(f"*{SUFFIX}"))]


def cleanup_leftover(left: LeftOver) -> list[str]:
    """Undo, newest first, what a dead process left behind; removes its journal when done."""
    failures = []
    with signals_deferred():
        for entry in reversed(left.pending):
            try:
                undo_entry(entry.kind, entry.args)
            except LabError as exc:
                failures.append(exc.message)
                continue
            entry.undone = True
            with open(left.path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"op": "undone", "id": entry.id}) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
        if not failures:
            left.path.unlink(missing_ok=True)
    return failures
