#!/usr/bin/env python3
"""Builds corpus/: how people paste fio and dd results, made from this repository's real outputs
(run once, output checked in).  Each file is one way a result reaches iolab:

- reflow-direction.txt: a quoted reply whose client re-flowed the job header so its year moved
  to the start of the direction line (`> 2026  write: IOPS=…`).
- group-only.txt: only fio's `Run status group` summaries, pasted under short notes
  (`RAID10:`), one of them without its `Run status group` header.
- captions.md: markdown — `##` headings above fenced blocks, titles underlined with `===` and
  `---`, a short `RAID10:` line — and back-to-back German dd runs (LANG=de_DE).

Usage: python3 tests/data/mail/make_corpus.py   (from anywhere)
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent
OUT = HERE / "corpus"


def fio(name: str) -> str:
    return (DATA / "fio-3.33" / "out" / f"{name}.txt").read_text()


def group_block(text: str, with_header: bool = True) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Run status group"))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].strip())
    return lines[start if with_header else start + 1 : end]


def reflow_direction() -> str:
    lines = fio("randwrite-3jobs-group").splitlines()
    out: list[str] = []
    carry = ""
    for line in lines:
        if "(groupid=" in line:
            head, year = line.rsplit(" ", 1)
            out.append(head)
            carry = year + " "
            continue
        out.append(carry + line if carry else line)
        carry = ""
    body = [
        "On Mon, 23 Nov 2026, Bob Example wrote:",
        "> Here is the run with the patch:",
        ">",
        *(f"> {line}" if line else ">" for line in out),
        "",
        "Thanks, that matches what I see.",
    ]
    return "\n".join(body) + "\n"


def group_only() -> str:
    body = [
        "Summaries only, the job blocks were too long for the list:",
        "",
        "RAID10:",
        *group_block(fio("randwrite-3jobs-group")),
        "",
        "RAID5:",
        *group_block(fio("seqread")),
        "",
        "RAID0:",
        *group_block(fio("two-groups"), with_header=False)[:1],
        "",
    ]
    return "\n".join(body)


def captions() -> str:
    dd_de = (DATA / "dd-locales" / "de-64k.txt").read_text()
    body = [
        "# Results",
        "",
        "## ext4, sequential read",
        "",
        "```",
        *fio("seqread").splitlines(),
        "```",
        "",
        "xfs random writes",
        "=================",
        "",
        "```text",
        *fio("randwrite-3jobs-group").splitlines(),
        "```",
        "",
        "Btrfs, two groups",
        "-----------------",
        "",
        *fio("two-groups").splitlines(),
        "",
        "RAID10:",
        "",
        "    $ LANG=de_DE.UTF-8 dd if=/dev/zero of=/dev/null bs=64k count=80",
        *(f"    {line}" for line in dd_de.splitlines()),
        *(f"    {line}" for line in dd_de.splitlines()),
        "",
    ]
    return "\n".join(body)


def main() -> None:
    OUT.mkdir(exist_ok=True)
    (OUT / "reflow-direction.txt").write_text(reflow_direction())
    (OUT / "group-only.txt").write_text(group_only())
    (OUT / "captions.md").write_text(captions())


if __name__ == "__main__":
    main()
