#!/usr/bin/env python3
"""Builds the two constructed seed threads from real tool outputs (out/, made by generate.sh).

The original threads ("make iversion the default: the impact is negligible" and "nodelalloc
writeback is 20x slower, here is a patch") were not found in the archives the search tools
reach; these are faithful reconstructions of what issue 18 quotes of them — the commands,
the mount variants, the "- w/o:" / "- w/" captions, the quoting — with outputs that are real
runs of those commands on this machine (not the threads' figures; one kernel, so the "patch"
cases are two runs of the same code).  SOURCES.md says which file is which.

Usage: python3 tests/data/threads/make_threads.py   (from anywhere; output checked in)
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"


def out(name: str) -> list[str]:
    return (OUT / name).read_text().splitlines()


def quoted(lines: list[str], depth: int = 1) -> list[str]:
    prefix = "> " * depth
    return [(prefix + line).rstrip() if line else prefix.rstrip() for line in lines]


def iversion() -> str:
    alice = [
        "I measured it on a RAM-backed loop device, ext4, four writer processes,",
        "mounted each way in turn:",
        "",
        "mount -o iversion /dev/loop0 /mnt",
        "mount -o noiversion /dev/loop0 /mnt",
        "",
        "fio --name=iversion-test --directory=/mnt/test --rw=randwrite --bs=4k \\",
        "    --size=64M --ioengine=psync --numjobs=4 --runtime=3 --time_based \\",
        "    --group_reporting",
        "",
        "With -o iversion:",
        "",
        *out("iversion-on.txt"),
        "",
        "With -o noiversion:",
        "",
        *out("iversion-off.txt"),
        "",
        "The impact is negligible, so let's make iversion the default.",
    ]
    bob = [
        "On Wed, 18 Nov 2026 at 10:02, Alice Example <alice@example.org> wrote:",
        *quoted(alice),
        "",
        "One run each on a RAM disk says little; the write IOPS differ more than",
        "I would call negligible.  Can you repeat it a few times?",
    ]
    carol = [
        "On Thu, 19 Nov 2026 at 08:40, Bob Example <bob@example.org> wrote:",
        *quoted(bob),
        "",
        "Agreed with Bob, two samples cannot show 'negligible'.",
    ]
    # the whole thread as an archive's thread view prints it: each message under its headers
    messages = [
        ("Alice Example <alice@example.org>", "[PATCH] ext4: make iversion the default",
         "Wed, 18 Nov 2026 10:02:00 +0000", alice),
        ("Bob Example <bob@example.org>", "Re: [PATCH] ext4: make iversion the default",
         "Thu, 19 Nov 2026 08:40:00 +0000", bob),
        ("Carol Example <carol@example.org>", "Re: [PATCH] ext4: make iversion the default",
         "Thu, 19 Nov 2026 09:15:00 +0000", carol),
    ]  # fmt: skip
    text: list[str] = []
    for sender, subject, date, body in messages:
        text += [f"From: {sender}", f"Subject: {subject}", f"Date: {date}", "", *body, "", ""]
    return "\n".join(text)


def nodelalloc() -> str:
    body = [
        "From: Dave Example <dave@example.org>",
        "Subject: [PATCH] ext4: fix nodelalloc writeback being 20x slower",
        "Date: Fri, 20 Nov 2026 14:21:00 +0000",
        "",
        "With dioread_nolock,nodelalloc every page of a buffered write gets its",
        "own unwritten extent and writeback then writes one block per request,",
        "so a large sequential write is about 20x slower than with delalloc.",
        "Here is a patch that lets the extents merge again.",
        "",
        "Reproducer:",
        "",
        "  mount -o dioread_nolock,nodelalloc /dev/vdb /mnt",
        '  xfs_io -f -c "pwrite -W 0 1G" /mnt/testfile',
        "",
        "- w/o:",
        *out("nodelalloc-1.txt"),
        "- w/",
        *out("nodelalloc-2.txt"),
        "",
        "Signed-off-by: Dave Example <dave@example.org>",
    ]
    return "\n".join(body) + "\n"


def main() -> None:
    (HERE / "iversion.txt").write_text(iversion())
    (HERE / "nodelalloc.txt").write_text(nodelalloc())


if __name__ == "__main__":
    main()
