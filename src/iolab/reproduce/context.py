"""What the prose of a mail says about the comparison: the kernels named, a revert or a patch,
the filesystem, the disks' size, and what the target must be that a loop image is not.

Kernels are versions (`5.10`, `6.8-rc7`, `5.15.y`, `v6.1.12`) in a paragraph that speaks of
kernels (`kernel`, `linux`, `stable`, `-rc`, `.y`) or in a result's caption; a figure followed
by a unit (`2.5x`, `3.5 GB`, `1.5 times`) is not a version.  Each finding keeps its mail line.
"""

from __future__ import annotations

import platform
import re
from dataclasses import dataclass

_VERSION = re.compile(
    r"(?<![\w.+/-])v?(?P<v>[2-7]\.\d{1,2}(?:\.(?:\d{1,3}|y))?(?:-rc\d{1,2})?)"
    r"(?![\w+%/]|\.\d|-\w|\s*(?:times|GB|MB|GiB|MiB|ms|seconds|points|percent)\b)"
)
# A version of something else: `fio 3.33`, `gcc-12.2`, `Ubuntu 22.04`, `xfsprogs 6.1`.
_OTHER_TOOL = re.compile(
    r"(?:fio|gcc|clang|python|glibc|ubuntu|debian|rhel|centos|fedora|rocky|suse|qemu|"
    r"xfsprogs|e2fsprogs|btrfs-progs|liburing|util-linux|version)[\s:-]*v?$",
    re.I,
)
_KERNEL_TALK = re.compile(r"\b(?:kernels?|linux|stable|mainline|upstream)\b|-rc\d|\.y\b", re.I)
_REVERT = re.compile(r"\brevert(?:s|ed|ing)?\b", re.I)
_SHA = re.compile(r"(?<![\w/.-])(?P<sha>[0-9a-f]{12,40})(?![\w-])")
_FS = re.compile(r"\b(?P<fs>ext4|xfs|btrfs)\b", re.I)
_DISK_SIZE = (
    re.compile(
        r"(?P<size>\d+(?:\.\d+)?)\s*(?P<unit>[GT])i?B?\s+(?:\w+\s+){0,2}?"
        r"(?:volumes?|disks?|devices?|drives?|ssds?|nvmes?|luns?)\b",
        re.I,
    ),
    re.compile(
        r"\b(?:volumes?|disks?|devices?|drives?|ssds?|luns?)\b[^.]{0,24}?\b(?P<size>\d+(?:\.\d+)?)"
        r"\s*(?P<unit>[GT])i?B?\b",
        re.I,
    ),
)
# name -> pattern: what the measurement needs that a loop image on this host is not
_REQUIREMENTS = (
    ("dm-multipath", re.compile(r"\bmulti-?path\b|/dev/mapper/mpath|\bdm-multipath\b", re.I)),
    (
        "md",
        re.compile(r"\bmdadm\b|/dev/md\d+\b|\bmd[- ]?raid\d*\b|\bRAID[- ]?(?:0|1|4|5|6|10)\b"),
    ),
    (
        "device-model",
        re.compile(
            r"\b(?:Samsung|Intel|Micron|Kioxia|Toshiba|Seagate|WDC?|Western Digital|SK ?hynix|"
            r"Solidigm|Optane|Crucial|Memblaze|Huawei ES\d+)\b"
            r"(?:(?!\b(?:CPU|Xeon|Core|Atom|processor)\b)[^,.;()]){0,40}"
            r"\b(?:NVMe|SSD|HDD|P\d{4}\w*|PM\d{3,4}\w*|9\d0 PRO)\b"
        ),
    ),
    (
        "cloud-volume",
        re.compile(
            r"\b(?:EBS|io1|io2|gp2|gp3|Persistent Disk)\b[^.]{0,40}\bvolume|"
            r"\bvolume\b[^.]{0,30}\b(?:EBS|io1|io2|gp2|gp3)\b",
            re.I,
        ),
    ),
    ("cpu-arch", re.compile(r"\b(?:arm64|aarch64|ppc64le|ppc64|s390x|riscv64)\b")),
)
_HOST_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "arm64", "arm64": "arm64"}


@dataclass(frozen=True)
class Found:
    value: str
    line: int  # 1-based mail line
    quote: str  # the words it was read from


@dataclass(frozen=True)
class Paragraph:
    first: int
    lines: tuple[tuple[int, str], ...]

    @property
    def text(self) -> str:
        return " ".join(t.strip() for _, t in self.lines)

    def line_of(self, offset: int) -> int:
        """The mail line holding character `offset` of `text`."""
        at = 0
        for number, line in self.lines:
            at += len(line.strip()) + 1
            if offset < at:
                return number
        return self.lines[-1][0]


def paragraphs(lines: list[str], numbers: list[int], skip: set[int]) -> list[Paragraph]:
    """Blank-separated blocks of `lines`, without the mail lines in `skip` (commands)."""
    out: list[Paragraph] = []
    block: list[tuple[int, str]] = []
    for number, text in zip(numbers, lines, strict=True):
        if not text.strip() or number in skip:
            if block:
                out.append(Paragraph(block[0][0], tuple(block)))
            block = []
            continue
        block.append((number, text))
    if block:
        out.append(Paragraph(block[0][0], tuple(block)))
    return out


def subject(raw: str) -> str | None:
    """The first `Subject:` header of the mail (a thread view repeats it per message)."""
    match = re.search(r"^Subject:[ \t]*(?P<s>.+)$", raw, re.M)
    return match.group("s").strip() if match else None


def is_patch(subject_text: str | None) -> bool:
    return (
        subject_text is not None
        and re.match(r"^(?:Re:\s*)*\[PATCH\b", subject_text, re.I) is not None
    )


def kernels(found_in: list[Paragraph], captions: list[tuple[str, int]]) -> list[Found]:
    """Every kernel version named, in the order first named (captions count as kernel talk)."""
    seen: dict[str, Found] = {}
    for paragraph in found_in:
        text = paragraph.text
        talk = _KERNEL_TALK.search(text) is not None  # once: a long paragraph has many matches
        for match in _VERSION.finditer(text):
            version = match.group("v")
            if version in seen or not (talk or "-rc" in version or version.endswith(".y")):
                continue
            if _OTHER_TOOL.search(text[max(0, match.start() - 16) : match.start()]):
                continue
            line = paragraph.line_of(match.start())
            seen.setdefault(version, Found(version, line, _around(text, match.start())))
    for caption, line in captions:
        for match in _VERSION.finditer(caption):
            seen.setdefault(match.group("v"), Found(match.group("v"), line, caption))
    return sorted(seen.values(), key=lambda f: f.line)


def revert(found_in: list[Paragraph], captions: list[tuple[str, int]]) -> Found | None:
    """A revert the mail measured (`with revert`, `after reverting the commit`), with the
    commit's sha when the mail gives one (its first 12 hex digits)."""
    said: Found | None = None
    for paragraph in found_in:
        match = _REVERT.search(paragraph.text)
        if match is not None:
            said = Found(
                "", paragraph.line_of(match.start()), _around(paragraph.text, match.start())
            )
            break
    if said is None:
        for caption, line in captions:
            if _REVERT.search(caption):
                said = Found("", line, caption)
                break
    if said is None:
        return None
    for paragraph in found_in:
        sha = _SHA.search(paragraph.text)
        if sha is not None and re.search(r"[a-f]", sha.group("sha")):
            return Found(sha.group("sha")[:12], said.line, said.quote)
    return said


def filesystem(found_in: list[Paragraph], subject_text: str | None) -> Found | None:
    """The first filesystem the subject or the prose names."""
    if subject_text:
        match = _FS.search(subject_text)
        if match is not None:
            return Found(match.group("fs").lower(), 0, subject_text)
    for paragraph in found_in:
        match = _FS.search(paragraph.text)
        if match is not None:
            return Found(
                match.group("fs").lower(),
                paragraph.line_of(match.start()),
                _around(paragraph.text, match.start()),
            )
    return None


def disk_size(found_in: list[Paragraph]) -> Found | None:
    """The size of the disk or volume the mail measured on (`100GB volume`, `disk is 600G`)."""
    for paragraph in found_in:
        for pattern in _DISK_SIZE:
            match = pattern.search(paragraph.text)
            if match is not None:
                size = f"{match.group('size')}{match.group('unit').upper()}"
                return Found(size, paragraph.line_of(match.start()), match.group(0).strip())
    return None


def requirements(found_in: list[Paragraph], device_paths: list[tuple[str, int]]) -> list[Found]:
    """What the measurement needs that this host's loop images are not (one per kind)."""
    out: dict[str, Found] = {}
    host = _HOST_ARCH.get(platform.machine().lower(), platform.machine().lower())
    for paragraph in found_in:
        text = paragraph.text
        for name, pattern in _REQUIREMENTS:
            match = pattern.search(text)
            if match is None or name in out:
                continue
            if name == "cpu-arch" and _HOST_ARCH.get(match.group(0).lower()) == host:
                continue
            quote = _around(text, match.start())
            out[name] = Found(name, paragraph.line_of(match.start()), quote)
    for path, line in device_paths:
        if re.match(r"/dev/(?:dm-\d+|mapper/)", path) and "dm-multipath" not in out:
            out["device-mapper"] = Found("device-mapper", line, path)
        if re.match(r"/dev/md\d+", path) and "md" not in out:
            out["md"] = Found("md", line, path)
    return sorted(out.values(), key=lambda f: f.line)


# the evidence a thread discusses that a plan's monitors measure: name -> where it shows
_JBD2 = re.compile(r"/proc/fs/jbd2/|\bhandles per transaction\b|\bjbd2\b.{0,40}\bcommit", re.I)
_WRITEPAGES_HIST = re.compile(
    r"\bhistogram\b.{0,120}\bext4_writepages\b|\bext4_writepages\b.{0,120}\bhistogram\b|"
    r"\bpages\b.{0,40}\bwritten\b.{0,40}\bext4_writepages\b",
    re.I,
)


def evidence(lines: list[str], numbers: list[int], found_in: list[Paragraph]) -> list[Found]:
    """The monitors the mail's evidence asks for: `jbd2` (it reads /proc/fs/jbd2/*/info or
    speaks of handles per transaction), `hist` (a histogram of pages per ext4_writepages)."""
    out: list[Found] = []
    for number, text in zip(numbers, lines, strict=True):
        if _JBD2.search(text):
            out.append(Found("jbd2", number, text.strip()))
            break
    if not out:
        for paragraph in found_in:
            match = _JBD2.search(paragraph.text)
            if match is not None:
                out.append(Found("jbd2", paragraph.line_of(match.start()), match.group(0)))
                break
    for paragraph in found_in:
        match = _WRITEPAGES_HIST.search(paragraph.text)
        if match is not None:
            quote = _around(paragraph.text, match.start())
            out.append(Found("hist", paragraph.line_of(match.start()), quote))
            break
    return out


def _around(text: str, at: int, width: int = 80) -> str:
    """The sentence around `at`, cut to about `width` characters at word boundaries."""
    start = text.rfind(". ", 0, at)
    start = 0 if start < 0 else start + 2
    end = text.find(". ", at)
    end = len(text) if end < 0 else end + 1
    if end - start > width:
        start = max(start, at - width // 3)
        if start > 0 and text[start - 1] != " ":
            start = text.find(" ", start) + 1 or start
        if end - start > width:
            end = text.rfind(" ", start, start + width)
            end = start + width if end <= start else end
    quote = text[start:end].strip()
    lead = "… " if start > 0 and text[start - 2 : start] != ". " else ""
    tail = "" if end >= len(text) or quote.endswith(".") else " …"
    return f"{lead}{quote}{tail}"
