"""The commands people paste to reproduce a result, each read into what the plan needs.

One recogniser per program: mkfs (`mke2fs -t`, `mkfs.ext4`, `mkfs.xfs`, `mkfs.btrfs`, `mkfs -t`),
`mount -o`, fio command lines, `xfs_io -c`, `dd`, `sysctl -w` and `echo V > /proc/sys/...`,
`echo V > /sys/block/DEV/queue/NAME` (also through `tee`).  Anything else that looks like a
command is `Ignored` with the reason, so that `iolab reproduce` can say what it left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from iolab.reproduce import shell

FILESYSTEMS = ("ext4", "xfs", "btrfs")


@dataclass(frozen=True)
class Mkfs:
    line: shell.Line
    fstype: str
    options: tuple[str, ...]  # what the plan keeps
    dropped: tuple[tuple[str, str], ...]  # (words, why) left out: force, quiet, label
    device: str | None


@dataclass(frozen=True)
class Mount:
    line: shell.Line
    fstype: str | None
    options: tuple[str, ...]
    device: str | None
    mountpoint: str | None


@dataclass(frozen=True)
class Fio:
    """A fio command line, variables filled: global options, then one section per --name."""

    line: shell.Line
    sections: tuple[tuple[str, tuple[tuple[str, str | None], ...]], ...]  # ("global", opts) …
    create_only: bool
    dropped: tuple[tuple[str, str], ...]  # (option, why): command-line-only or output options
    variables: tuple[tuple[str, int], ...]  # (name, line set on) of each variable used
    job_files: tuple[str, ...]  # positional job files named


@dataclass(frozen=True)
class XfsIo:
    line: shell.Line
    args: tuple[str, ...]


@dataclass(frozen=True)
class Dd:
    line: shell.Line
    args: tuple[str, ...]


@dataclass(frozen=True)
class Sysctl:
    line: shell.Line
    name: str  # vm.dirty_bytes
    value: str


@dataclass(frozen=True)
class Queue:
    line: shell.Line
    device: str
    name: str  # scheduler, iosched.fifo_batch
    value: str


@dataclass(frozen=True)
class Ignored:
    line: shell.Line
    why: str


Command = Mkfs | Mount | Fio | XfsIo | Dd | Sysctl | Queue

# Programs whose lines are commands (read or ignored); any other first word is prose or output.
_KNOWN = frozenset(
    (
        "fio",
        "mke2fs",
        "mkfs",
        "mount",
        "umount",
        "xfs_io",
        "dd",
        "sysctl",
        "echo",
        "printf",
        "cat",
        "set",
        "if",
        "then",
        "else",
        "fi",
        "for",
        "while",
        "do",
        "done",
        "cd",
        "mkdir",
        "rm",
        "rmdir",
        "sync",
        "export",
        "modprobe",
        "rmmod",
        "mdadm",
        "multipath",
        "multipathd",
        "dmsetup",
        "nvme",
        "blockdev",
        "losetup",
        "taskset",
        "numactl",
        "perf",
        "trace-cmd",
        "bpftrace",
        "uname",
        "git",
        "make",
        "reboot",
        "fstrim",
        "hdparm",
        "parted",
        "fdisk",
        "sgdisk",
        "wipefs",
        "truncate",
        "fallocate",
        "tee",
        "cp",
        "mv",
        "ls",
        "df",
        "lsblk",
        "iostat",
        "vmstat",
        "sar",
        "grep",
        "awk",
        "sed",
        "xfs_info",
        "tune2fs",
        "dumpe2fs",
        "xfs_admin",
        "btrfs",
        "mkswap",
        "swapon",
        "swapoff",
        "chmod",
        "chown",
        "systemctl",
        "service",
        "kexec",
        "grub-reboot",
        "apt",
        "apt-get",
        "yum",
        "dnf",
        "zypper",
        "pip",
        "./configure",
        "cmake",
        "t/io_uring",
        "io_uring",
        "fstests",
        "./check",
        "xfs_repair",
        "e2fsck",
        "fsck",
        "sleep",
        "cpupower",
    )
)
_MKFS_ARGS = {
    # options that take a value, per mkfs (so the value is not read as the device)
    "ext4": set("bCcdEeGgiIJLMmNoOrtTUz"),
    "xfs": set("bdilLmnNprs"),
    "btrfs": set("bdLmnOrRsU"),
}
_MKFS_DROPPED = {"-F": "force (iolab makes its own images)", "-f": "force", "-q": "quiet"}
_FIO_DROPPED = {
    "output": "where fio writes its report (iolab reads fio's JSON itself)",
    "output-format": "the report's format (iolab reads fio's JSON itself)",
    "minimal": "the report's format",
    "terse-version": "the report's format",
    "eta": "progress display",
    "eta-newline": "progress display",
    "status-interval": "progress display",
    "max-jobs": "a command-line-only limit on jobs",
    "debug": "fio's debug output",
    "parse-only": "not a run",
    "warnings-fatal": "option checking",
    "alloc-size": "fio's own shared memory",
}
_DEV = re.compile(r"^/dev/\S+$")


def recognise(line: shell.Line, variables: shell.Variables) -> Command | Ignored | None:
    """What `line` is: a command the plan uses, one ignored (with why), or None (prose,
    output, an assignment — assignments are remembered in `variables`)."""
    text = line.text
    assigned = shell.assignment(text)
    if assigned is not None and " " not in text.split("=", 1)[0]:
        variables.assign(assigned[0], assigned[1], line.first)
        return None
    target = shell.redirect_target(text) or shell.tee_target(text)
    words = shell.words(text)
    if not words:
        return None
    program = words[0].rsplit("/", 1)[-1] if words[0].startswith(("/", "./")) else words[0]
    if program not in _KNOWN and not program.startswith("mkfs.") and not _is_io_uring(words[0]):
        return None
    if not _looks_like_command(words, text) or not _has_arguments(program, words[1:]):
        return None
    if program == "echo" and target is not None:
        return _echo(line, target[0], target[1])
    if program == "fio":
        return _fio(line, words, variables)
    if program in ("mke2fs", "mkfs") or program.startswith("mkfs."):
        return _mkfs(line, program, words)
    if program == "mount":
        return _mount(line, words)
    if program == "xfs_io":
        return XfsIo(line, tuple(_expand_all(words[1:], variables)))
    if program == "dd":
        return Dd(line, tuple(_expand_all(words[1:], variables)))
    if program == "sysctl":
        return _sysctl(line, words)
    return Ignored(line, _why_ignored(program, words))


# shell's own shapes of a loop or conditional; "for libmount to indicate -o noiversion." is prose
_SHELL_CONTROL = re.compile(
    r"^(?:for\s+(?:[A-Za-z_]\w*\s+in\b|\(\()|(?:if|while|until)\s+(?:\[\[?\s|!\s|test\s|\(\()"
    r"|(?:if|while|until)\s.*;\s*(?:then|do)\b)"
)
# a line of a tool's output that starts like a command: `sync (nsec): min=10, …`
_OUTPUT_LINE = re.compile(r"^[A-Za-z_]+(?:\s+[A-Za-z_]+)*\s*(?:\([^)]*\))?\s*:(?:\s|$)")


def _looks_like_command(words: list[str], text: str) -> bool:
    """`mount -o iversion /dev/loop0 /mnt` is a command; "mount it again and..." is prose."""
    if words[0] in ("if", "for", "while", "until"):
        return _SHELL_CONTROL.match(text) is not None  # `for i in 1 2 3; do sync; done`
    if _OUTPUT_LINE.match(text):
        return False
    if len(words) == 1:
        return words[0] in ("sync", "set", "fi", "done") or "/" in words[0]
    rest = words[1:]
    if any(w.startswith(("-", "/", "$", "{", "./")) or "=" in w for w in rest):
        return True
    return not re.search(r"[A-Za-z]{3,}[,.;:]\s", text + " ") and len(words) <= 4


def _has_arguments(program: str, args: list[str]) -> bool:
    """The arguments a real command of this program has (`dd is slower` is prose)."""
    if program == "dd":
        return any("=" in a for a in args)
    if program == "xfs_io":
        return any(a == "-c" or a.startswith("-c") for a in args)
    if program in ("mount", "mke2fs", "mkfs") or program.startswith("mkfs."):
        return any(a.startswith(("-", "/", "$")) for a in args)
    if program == "fio":
        return any(a.startswith(("-", "/", "$", "./")) or "." in a for a in args)
    return True


def _is_io_uring(word: str) -> bool:
    return word.endswith("t/io_uring")


def _why_ignored(program: str, words: list[str]) -> str:
    if program in ("if", "then", "else", "fi", "for", "while", "do", "done"):
        return "shell control flow around the commands (the defaults it would change are used)"
    if program == "set":
        return "a shell setting (tracing, errexit), no effect on the measurement"
    if program in ("echo", "printf"):
        return "prints a message"
    if program in ("mdadm", "multipath", "multipathd", "dmsetup"):
        return "builds the storage stack; stated as the plan's `requires:` instead"
    if program in ("umount", "sync", "sleep"):
        return "iolab unmounts, syncs and settles between samples itself"
    if program == "cd":
        return "changes directory; the plan's paths are {mnt}/{dev} placeholders"
    if program in ("mkdir", "rm", "rmdir", "truncate", "fallocate", "cp", "mv", "chmod", "chown"):
        return "file housekeeping; each sample starts on a fresh filesystem"
    if _is_io_uring(words[0]) or program == "io_uring":
        return (
            "fio's t/io_uring peak-IOPS tool is not a plan workload (iolab parse reads its output)"
        )
    if program in ("git", "make", "./configure", "cmake", "kexec", "reboot", "grub-reboot"):
        return "builds or boots a kernel; the plan's `kernel:` variants name the kernels"
    if program in ("apt", "apt-get", "yum", "dnf", "zypper", "pip"):
        return "installs software"
    return f"{program} is not one of the commands a plan is made from"


def _expand_all(words: list[str], variables: shell.Variables) -> list[str]:
    return [shell.expand(w, variables).text for w in words]


def _echo(line: shell.Line, head: list[str], path: str) -> Command | Ignored:
    value = " ".join(head[1:]).strip()
    if path.startswith("/proc/sys/"):
        name = path.removeprefix("/proc/sys/").replace("/", ".")
        return Sysctl(line, name, value)
    queue = re.fullmatch(r"/sys/block/([^/]+)/queue/(.+)", path)
    if queue is not None:
        return Queue(line, queue.group(1), queue.group(2).replace("/", "."), value)
    return Ignored(line, f"writes {path}, which is neither a sysctl nor a block queue setting")


def _sysctl(line: shell.Line, words: list[str]) -> Sysctl | Ignored:
    pairs = [w for w in words[1:] if "=" in w and not w.startswith("-")]
    if len(pairs) != 1:
        return Ignored(line, "reads sysctls, or sets several at once")
    name, value = pairs[0].split("=", 1)
    return Sysctl(line, name.strip(), value.strip())


def _mkfs(line: shell.Line, program: str, words: list[str]) -> Mkfs | Ignored:
    fstype = program.removeprefix("mkfs.") if program.startswith("mkfs.") else None
    if program == "mke2fs":
        fstype = "ext2"  # mke2fs without -t makes ext2 (mke2fs(8))
    args = words[1:]
    for at, word in enumerate(args):
        if word == "-t" and at + 1 < len(args):
            fstype = args[at + 1]
        elif word.startswith("-t") and len(word) > 2:
            fstype = word[2:]
    if fstype is None or fstype not in FILESYSTEMS:
        return Ignored(
            line, f"makes {fstype or 'an unnamed'} filesystem; plans make ext4, xfs or btrfs"
        )
    takes = _MKFS_ARGS[fstype]
    kept: list[str] = []
    dropped: list[tuple[str, str]] = []
    device: str | None = None
    at = 0
    while at < len(args):
        word = args[at]
        value = args[at + 1] if at + 1 < len(args) else None
        if word.startswith("-") and len(word) == 2 and word[1] in takes and value is not None:
            if word == "-t":
                pass
            elif word == "-L":
                dropped.append((f"{word} {value}", "a volume label"))
            else:
                kept += [word, value]
            at += 2
            continue
        if word in _MKFS_DROPPED:
            dropped.append((word, _MKFS_DROPPED[word]))
        elif word.startswith("-t"):
            pass
        elif word.startswith("-"):
            kept.append(word)
        elif device is None:
            device = word
        else:
            dropped.append((word, "a size or block count (the image's size is the plan's)"))
        at += 1
    return Mkfs(line, fstype, tuple(kept), tuple(dropped), device)


def _mount(line: shell.Line, words: list[str]) -> Mount | Ignored:
    fstype: str | None = None
    options: list[str] = []
    positional: list[str] = []
    args = words[1:]
    at = 0
    while at < len(args):
        word = args[at]
        if word in ("-t", "-o") and at + 1 < len(args):
            if word == "-t":
                fstype = args[at + 1]
            else:
                options += [o for o in args[at + 1].split(",") if o]
            at += 2
            continue
        if word.startswith("-o") and len(word) > 2:
            options += [o for o in word[2:].split(",") if o]
        elif word.startswith("-t") and len(word) > 2:
            fstype = word[2:]
        elif not word.startswith("-"):
            positional.append(word)
        at += 1
    if not positional:
        return Ignored(line, "lists mounts")
    if "remount" in options:
        return Ignored(line, "a remount; each sample mounts its fresh filesystem once")
    if len(positional) > 1:
        device, mountpoint = positional[0], positional[1]
    else:
        device, mountpoint = None, positional[0]  # a mount point fstab completes
    return Mount(line, fstype, tuple(options), device, mountpoint)


@dataclass
class _FioBuild:
    sections: list[tuple[str, list[tuple[str, str | None]]]] = field(
        default_factory=lambda: [("global", [])]
    )
    dropped: list[tuple[str, str]] = field(default_factory=list)
    job_files: list[str] = field(default_factory=list)
    create_only: bool = False


def _fio(line: shell.Line, words: list[str], variables: shell.Variables) -> Fio | Ignored:
    build = _FioBuild()
    used: list[tuple[str, int]] = []
    filled: list[str] = []
    for raw in words[1:]:
        expanded = shell.expand(raw, variables)
        used += expanded.used
        if expanded.unknown:
            return Ignored(line, f"uses ${expanded.unknown[0]}, which the mail never sets")
        filled.append(expanded.text)
    for word in _joined_values(filled):
        if word in ("--server", "--client") or word.startswith(("--client=", "--server=")):
            return Ignored(line, "a fio client/server run")
        if word in ("-v", "--version", "--help", "-h") or word.startswith("--cmdhelp"):
            return Ignored(line, "asks fio for its version or help")
        if not word.startswith("-"):
            build.job_files.append(word)
            continue
        key, eq, value = word.lstrip("-").partition("=")
        if key in _FIO_DROPPED:
            build.dropped.append((word, _FIO_DROPPED[key]))
            continue
        if key == "create_only":
            build.create_only = value not in ("0", "false")
            if not build.create_only:
                build.dropped.append((word, "fio's default (the job runs its I/O)"))
            continue
        if key == "name":
            build.sections.append((value or "job", []))
            continue
        build.sections[-1][1].append((key, value if eq else None))
    if len(build.sections) == 1 and not build.job_files:
        return Ignored(line, "a fio command without --name or a job file")
    return Fio(
        line,
        tuple((name, tuple(opts)) for name, opts in build.sections),
        build.create_only,
        tuple(build.dropped),
        tuple(dict.fromkeys(used)),
        tuple(build.job_files),
    )


# fio command-line options that take no value: a word after one is a job file
_FIO_FLAGS = frozenset(
    ("thread", "time_based", "group_reporting", "norandommap", "parse-only", "showcmd",
     "readonly", "latency-log", "bandwidth-log", "warnings-fatal", "minimal", "append-terse",
     "eta-newline", "debug", "inplace", "runtime_unlimited")
)  # fmt: skip
_JOB_FILE = re.compile(r"\.(?:fio|job|jobs|ini|cfg|conf)$")


def _joined_values(words: list[str]) -> list[str]:
    """`--bs 4k` (fio takes an option's value as the next word too) → `--bs=4k`; a word after
    a flag (`--thread`) or one named like a job file (`x.fio`) stays a job file."""
    out: list[str] = []
    for word in words:
        previous = out[-1] if out else ""
        if (
            not word.startswith("-")
            and previous.startswith("--")
            and "=" not in previous
            and previous[2:] not in _FIO_FLAGS
            and not _JOB_FILE.search(word)
        ):
            out[-1] = f"{previous}={word}"
            continue
        out.append(word)
    return out


def is_device(path: str) -> bool:
    return _DEV.match(path) is not None
