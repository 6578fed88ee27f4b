"""Parse many result files in a second process while the caller stores what is parsed.

An import of thousands of fio JSON files spends about a third of its time parsing and
making rows, the rest inserting them; with two cores the two overlap (bench/import_speed.py).
The worker sends each chunk of files as the rows the store inserts (store.convert.
ImportBatch), in file order, over a pipe that the caller reads in its own thread between
inserts — a thread receiving in the background would take the GIL from the inserts each
time SQLite releases it (measured: that cost more than parsing in-process).  The worker
parses the next chunk while the caller stores the last one.  The first file that cannot be
read raises its IngestError in the caller — the same one line as when it parses the files
itself — and the files after it are not parsed.

Only for files: standard input stays with the process that reads it, and a handful of files
is parsed quicker in-process than a second process starts (`worth_it`).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from multiprocessing.connection import Connection
from queue import SimpleQueue
from typing import Any

from iolab.errors import IolabError
from iolab.ingest.detect import parse_source
from iolab.store.convert import ImportBatch, import_batch

MIN_FILES = 200  # fewer are parsed in-process: ~40 ms of parsing, about what a fork costs
FIRST_CHUNK = 50  # files: known good (or not) early, before the caller opens the store
CHUNK = 500  # files per message at most: about what the store inserts at a time


def worth_it(paths: Sequence[str]) -> bool:
    """Is a second process worth starting for these sources?"""
    return len(paths) >= MIN_FILES and "-" not in paths and len(os.sched_getaffinity(0)) > 1


def chunks(paths: Sequence[str]) -> list[Sequence[str]]:
    """`paths` cut into the chunks the worker sends: FIRST_CHUNK files, then twice as many
    each time up to CHUNK — the importer waits for the first ones only while they are small."""
    cut: list[Sequence[str]] = []
    start, size = 0, FIRST_CHUNK
    while start < len(paths):
        cut.append(paths[start : start + size])
        start, size = start + size, min(2 * size, CHUNK)
    return cut


@contextmanager
def parsed_in_background(paths: Sequence[str]) -> Iterator[Iterator[ImportBatch]]:
    """The results of `paths` as rows, in order, parsed by a second process while the
    batches are consumed (`CHUNK` files a batch, the first one smaller).

    The process is stopped on leaving the block: it has finished when every batch was
    consumed, and is terminated when the caller stopped early (an error)."""
    import multiprocessing

    # fork: the child has the parsers loaded already and the paths in its memory
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    worker = context.Process(target=_work, args=(paths, sender), daemon=True)
    worker.start()
    sender.close()  # the worker holds the only writing end: its exit is our EOF
    batches = _Receiver(receiver, worker.pid)
    try:
        yield iter(batches)
    finally:
        receiver.close()
        if not batches.finished:
            worker.terminate()  # it only reads files: nothing of its own to clean up
        worker.join()


class _Receiver:
    """The worker's batches, read in the caller's thread; `finished` once it said done."""

    def __init__(self, receiver: Connection, pid: int | None) -> None:
        self.receiver = receiver
        self.pid = pid
        self.finished = False

    def __iter__(self) -> Iterator[ImportBatch]:
        while True:
            try:
                kind, payload = self.receiver.recv()
            except EOFError:
                raise IolabError(
                    f"the process parsing the files (pid {self.pid}) stopped unexpectedly; "
                    "nothing stored"
                ) from None
            if kind == "batch":
                yield payload
            elif kind == "error":
                raise payload
            elif kind == "crash":
                raise RuntimeError(f"parsing in a second process failed: {payload}")
            else:
                self.finished = True
                return


def _work(paths: Sequence[str], sender: Connection) -> None:
    """The worker: each chunk's batch, then ("done", None); or the first error.  A thread
    sends what is ready, so parsing runs ahead of the importer instead of waiting for it to
    read each message (a pipe holds 64 KiB, a batch a few MB)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the importer, which stops us
    outbox: SimpleQueue[tuple[str, Any] | None] = SimpleQueue()
    postman = threading.Thread(target=_send_all, args=(outbox, sender))
    postman.start()
    message: tuple[str, Any] = ("done", None)
    try:
        for chunk in chunks(paths):
            try:
                message = ("batch", import_batch(r for path in chunk for r in parse_source(path)))
            except IolabError as exc:
                message = ("error", exc)
            except Exception as exc:  # a bug: its name and text reach the importer
                message = ("crash", f"{type(exc).__name__}: {exc}")
            outbox.put(message)
            if message[0] != "batch":
                break
        else:
            outbox.put(("done", None))
    finally:
        outbox.put(None)
        postman.join()
        sender.close()


def _send_all(outbox: SimpleQueue[tuple[str, Any] | None], sender: Connection) -> None:
    while (message := outbox.get()) is not None:
        try:
            sender.send(message)
        except OSError:  # BrokenPipeError: the importer stopped reading (it failed first)
            return
