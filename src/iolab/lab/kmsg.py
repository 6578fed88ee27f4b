"""The kernel's log since a point in time: the reason a mount was refused, an I/O error.

Reads /dev/kmsg from the position it had when the watch started, so only the lines of this
sample are seen (not older noise, not another sample's).
"""

from __future__ import annotations

import contextlib
import errno
import os


class KernelLog:
    def __init__(self) -> None:
        self._fd: int | None = None
        with contextlib.suppress(OSError):
            self._fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
            os.lseek(self._fd, 0, os.SEEK_END)

    def new_lines(self) -> list[str]:
        """Messages logged since the watch started (or since the last call)."""
        if self._fd is None:
            return []
        out = []
        while True:
            try:
                record = os.read(self._fd, 8192)
            except OSError as exc:
                if exc.errno == errno.EPIPE:  # overwritten before we read it: skip ahead
                    continue
                break  # EAGAIN: nothing more
            if not record:
                break
            text = record.decode("utf-8", errors="replace")
            _, _, message = text.partition(";")
            message = message.split("\n", 1)[0].strip()
            if message:
                out.append(message)
        return out

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> KernelLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def relevant(lines: list[str], devices: list[str]) -> list[str]:
    """Lines that name one of the devices (loop3, sdb) — or all lines when none does."""
    hits = [line for line in lines if any(dev in line for dev in devices)]
    return hits or lines
