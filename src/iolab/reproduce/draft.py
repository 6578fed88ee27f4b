"""The plan's choices, each with the mail lines it came from: filesystem, mkfs and mount options,
the workload and its pre-pass, knobs, sizes that fit this host, variants, KPIs, requirements.

Variants are what the mail compares, in this order of evidence: two or more `mount` lines with
different options (a variant per line); kernels named in the prose or the captions (a variant
per kernel, and `<kernel>+revert-<sha>` when the mail measured a revert); a patch mail whose
results are captioned without/with (`w/o`, `w/`): a kernel without and one with the patch.
A kernel the mail names only by version gets that version as its `kernel:` release; the plan
says to set it to what `uname -r` prints on the build.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from iolab.plan.values import size_value
from iolab.reproduce import commands, context, jobfile, loops, shell

IMAGE_DEFAULT = 1 << 30
IMAGE_MAX = 2 << 30  # a loop image in RAM on a machine shared by several people
_FILL = 0.7  # the workload's files may use this much of the image
_QUICK_RUNTIME = 2
_SIZE_KEYS = ("size", "filesize")
_PATH_KEYS = ("directory", "filename", "opendir")


@dataclass(frozen=True)
class Ref:
    """Mail lines a choice came from and a short quote of them."""

    where: str  # "line 8", "lines 11-13", "the subject"
    quote: str


@dataclass
class Variant:
    name: str
    overrides: dict[str, object]
    ref: Ref


@dataclass
class Draft:
    name: str
    description: str
    source: str
    fstype: str | None = None  # None: raw devices (filesystem: none)
    fstype_ref: Ref | None = None
    mkfs_options: list[str] = field(default_factory=list)
    mkfs_ref: Ref | None = None
    mount_options: list[str] = field(default_factory=list)
    mount_ref: Ref | None = None
    target_size: int = IMAGE_DEFAULT
    target_count: int = 1
    target_kind: str = "loop"  # or multipath (a map over target_paths paths)
    target_paths: int = 0
    target_ref: Ref | None = None
    target_note: str = ""
    workload_kind: str = ""  # fio, xfs_io or dd
    fio_text: str = ""
    argv: list[str] = field(default_factory=list)
    workload_ref: Ref | None = None
    fill_text: str = ""
    fill_ref: Ref | None = None
    drop_caches: Ref | None = None
    sysctl: dict[str, tuple[str, Ref]] = field(default_factory=dict)
    queue: dict[str, tuple[str, Ref]] = field(default_factory=dict)
    vars: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (value, comment)
    quick_vars: dict[str, str] = field(default_factory=dict)
    variants: list[Variant] = field(default_factory=list)
    # a sweep: the same fio job at several values of one option (name, values, first line)
    matrix: list[tuple[str, list[str], Ref]] = field(default_factory=list)
    matrix_note: str = ""
    matrix_paths: dict[str, str] = field(default_factory=dict)  # dimension -> setting path
    matrix_vars: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # per value
    target_extra: dict[str, object] = field(default_factory=dict)  # members, chunk, resync
    baseline: str | None = None
    variants_note: str = ""
    kpis: list[str] = field(default_factory=list)
    kpi_note: str = ""
    monitors: list[tuple[str, Ref]] = field(default_factory=list)  # the evidence discussed
    comments: list[str] = field(default_factory=list)  # said at the plan's top (a report's link)
    timeout: str = ""  # a sample's timeout, when the workload runs longer than the default
    quick_timeout: str = ""
    # what else --quick trims, each said: (why, key, value), e.g. a smaller matrix or target
    quick_extra: list[tuple[str, str, object]] = field(default_factory=list)
    # --quick runs here without the variants (one side is the kernel this host runs): why
    quick_here: str = ""
    requires: list[tuple[str, str, Ref]] = field(default_factory=list)
    used: list[tuple[str, str, str]] = field(default_factory=list)  # (where, text, as what)
    ignored: list[tuple[str, str, str]] = field(default_factory=list)  # (where, text, why)
    # every option of a used command the plan does not carry: (where, "fio --max-jobs=16", why)
    left_out: list[tuple[str, str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def leave_out(self, where: str, what: str, why: str) -> None:
        """An option of a command the plan uses that it does not carry, said with why."""
        self.left_out.append((where, what, why))
        self.notes.append(f"{where}: {what}: {why}: left out")


class NothingToReproduce(Exception):
    """The mail holds no command or job file a plan could be made from."""


def _ref(line: shell.Line) -> Ref:
    return Ref(line.where, _short(line.text))


def _short(text: str, width: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 2] + " …"


def build(
    lines: list[str],
    depths: list[int],
    offset: int,
    subject: str | None,
    captions: list[tuple[str, int]],
    source: str,
) -> Draft:
    """The draft of a plan from a mail's un-quoted lines (`offset` + index + 1 = mail line)."""
    variables = shell.Variables()
    found: list[commands.Command] = []
    seen: dict[str, str] = {}
    command_lines: set[int] = set()
    draft = Draft(
        name=_name(subject, source), description=_describe(subject, source), source=source
    )
    logical, found_loops = loops.unroll(shell.logical_lines(lines, depths, offset))
    for loop in found_loops:
        _read_loop(draft, loop, command_lines)
    for whole in logical:
        for line in shell.split_commands(whole) if whole.text else []:
            _read_line(draft, line, variables, found, seen, command_lines)
    numbers = [offset + i + 1 for i in range(len(lines))]
    jobs = _unique_jobs(jobfile.find(lines, numbers))
    for job in jobs:
        command_lines.update(range(job.first, job.last + 1))
    prose = context.paragraphs(lines, numbers, command_lines)
    if not jobs:  # a fio command running a job file the mail does not paste measures nothing
        for command in [c for c in found if isinstance(c, commands.Fio) and c.job_files]:
            if len(command.sections) == 1 and not command.sections[0][1]:
                found.remove(command)
                draft.ignored.append(
                    (
                        command.line.where,
                        _short(command.line.text),
                        f"runs job file {command.job_files[0]}, which the mail does not paste",
                    )
                )
    if (
        not any(isinstance(c, commands.Fio | commands.XfsIo | commands.Dd) for c in found)
        and not jobs
    ):
        raise NothingToReproduce(
            "no fio, xfs_io or dd command line and no fio job file in it: nothing to reproduce"
        )
    _assignments_used(draft, found, lines, offset)
    mounts = [c for c in found if isinstance(c, commands.Mount)]
    mkfs = [c for c in found if isinstance(c, commands.Mkfs)]
    _filesystem(draft, mkfs, mounts, prose, subject)
    paths = _Paths(mounts, mkfs)
    _workload(draft, found, jobs, paths, prose)
    _knobs(draft, found)
    _variants(draft, mounts, prose, captions, subject)
    _requirements(draft, prose, paths)
    _target(draft, paths, prose)
    if draft.workload_kind and draft.fstype in (None, "ext4"):
        for found_ in context.evidence(lines, numbers, prose):
            draft.monitors.append((found_.value, Ref(f"line {found_.line}", _short(found_.quote))))
    return draft


def _read_line(
    draft: Draft,
    line: shell.Line,
    variables: shell.Variables,
    found: list[commands.Command],
    seen: dict[str, str],
    command_lines: set[int],
) -> None:
    """One shell command of the mail: remembered, used, or listed as ignored."""
    recognised = commands.recognise(line, variables)
    if recognised is None:
        if shell.assignment(line.text) is not None:
            command_lines.update(range(line.first, line.last + 1))
        return
    command_lines.update(range(line.first, line.last + 1))
    key = " ".join(line.text.split())
    if key in seen:
        draft.ignored.append((line.where, _short(line.text), f"a quoted copy of {seen[key]}"))
        return
    seen[key] = line.where
    if isinstance(recognised, commands.Ignored):
        draft.ignored.append((line.where, _short(line.text), recognised.why))
    else:
        found.append(recognised)


def _read_loop(draft: Draft, loop: loops.Loop, command_lines: set[int]) -> None:
    """A `for` loop's own lines: what the loop became (reproduce.loops)."""
    line = loop.line
    command_lines.update(range(line.first, line.last + 1))
    head, values, name = _short(line.text), loop.values, loop.name
    if not loop.workload:
        why = "a shell loop around no workload: its commands are read once each"
        draft.ignored.append((line.where, head, why))
    elif values is None:
        why = f"loops over values the mail does not list: ${name} is unknown in its body"
        draft.ignored.append((line.where, head, why))
    elif loop.unrolled:
        shown = ", ".join(values) if len(values) <= 6 else f"{values[0]} … {values[-1]}"
        what = f"a loop over ${name} ({shown}): its workload once per value"
        draft.used.append((line.where, head, what))
    else:
        what = f"runs its body {len(values)} times: read once (the plan's blocks repeat it)"
        draft.used.append((line.where, head, what))


def _unique_jobs(jobs: list[jobfile.JobFile]) -> list[jobfile.JobFile]:
    seen: set[object] = set()
    out = []
    for job in jobs:
        if job.sections not in seen:
            seen.add(job.sections)
            out.append(job)
    return out


def _name(subject: str | None, source: str) -> str:
    text = subject or source.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    text = re.sub(r"^(?:\s*(?:Re|Fwd?):\s*)*(?:\[[^\]]*\]\s*)*", "", text, flags=re.I)
    slug = re.sub(r"[^A-Za-z0-9.+-]+", "-", text).strip("-.+").lower()
    return (slug[:60].rstrip("-.+") or "reproduction") if slug[:1].isalnum() else "reproduction"


def _describe(subject: str | None, source: str) -> str:
    return f"reproduces: {_short(subject, 120)}" if subject else f"reproduces {source}"


def _assignments_used(
    draft: Draft, found: list[commands.Command], lines: list[str], offset: int
) -> None:
    for command in found:
        if isinstance(command, commands.Fio):
            for name, line in command.variables:
                text = lines[line - offset - 1].strip() if 0 < line - offset <= len(lines) else name
                entry = (f"line {line}", _short(text), f"${name} in the fio command")
                if entry not in draft.used:
                    draft.used.append(entry)


# --- filesystem --------------------------------------------------------------------------------


def _filesystem(
    draft: Draft,
    mkfs: list[commands.Mkfs],
    mounts: list[commands.Mount],
    prose: list[context.Paragraph],
    subject: str | None,
) -> None:
    if mkfs:
        first = mkfs[0]
        draft.fstype, draft.fstype_ref = first.fstype, _ref(first.line)
        draft.mkfs_options, draft.mkfs_ref = list(first.options), _ref(first.line)
        draft.used.append((first.line.where, _short(first.line.text), "filesystem, mkfs_options"))
        for what, why in first.dropped:
            draft.leave_out(first.line.where, f"mkfs {what}", why)
        for other in mkfs[1:]:
            draft.ignored.append(
                (other.line.where, _short(other.line.text), "a second mkfs; the plan makes one")
            )
    typed = next((m for m in mounts if m.fstype in commands.FILESYSTEMS), None)
    if draft.fstype is None and typed is not None:
        draft.fstype, draft.fstype_ref = typed.fstype, _ref(typed.line)
    if mounts:
        draft.mount_options, draft.mount_ref = list(mounts[0].options), _ref(mounts[0].line)
        for mount in mounts:
            what = "mount_options" if mount.options else "the mount point ({mnt})"
            draft.used.append((mount.line.where, _short(mount.line.text), what))
    if draft.fstype is None and (mounts or not mkfs):
        named = context.filesystem(prose, subject)
        if named is not None:
            where = "the subject" if named.line == 0 else f"line {named.line}"
            draft.fstype, draft.fstype_ref = named.value, Ref(where, _short(named.quote))


# --- paths ---------------------------------------------------------------------------------------


_UNSET_PATH = re.compile(
    r"^\$(?:\{(?P<braced>[A-Za-z_]\w*)\}|(?P<bare>[A-Za-z_]\w*))(?P<rest>/\S*)?$"
)


class _Paths:
    """The mail's mount point and devices, and what they become in the plan."""

    def __init__(self, mounts: list[commands.Mount], mkfs: list[commands.Mkfs]) -> None:
        points = [m.mountpoint for m in mounts if m.mountpoint]
        self.mountpoint = points[0].rstrip("/") or "/" if points else "/mnt"
        self.fs_devices = {d for d in [*(m.device for m in mounts), *(k.device for k in mkfs)] if d}
        self.raw: list[str] = []  # devices a workload names directly, in order
        self.device_lines: list[tuple[str, int]] = []
        self.notes: list[str] = []

    def device(self, path: str, line: int) -> str:
        self.device_lines.append((path, line))
        if path not in self.raw:
            self.raw.append(path)
        return f"{{dev{self.raw.index(path)}}}"

    def unset_variable(self, word: str, where: str) -> str:
        """`$M/foobar` where the mail never sets $M: the mount point it mounted (`/mnt/foobar`),
        said in a note; any other word unchanged."""
        match = _UNSET_PATH.match(word)
        if match is None:
            return word
        path = self.mountpoint + (match.group("rest") or "")
        name = match.group("braced") or match.group("bare")
        self.notes.append(
            f"{where}: ${name} is never set in the mail; read as the mount point "
            f"{self.mountpoint} (so {word} is {path})"
        )
        return path

    def file(self, path: str, where: str, *, directory: bool) -> str:
        """A path under the mount point → `{mnt}`; a subdirectory fio would need made is
        flattened (each sample starts on a fresh, empty filesystem)."""
        mnt = self.mountpoint
        if path == mnt:
            return "{mnt}"
        if path.startswith(mnt + "/"):
            rest = path[len(mnt) + 1 :].strip("/")
            if directory:
                self.notes.append(
                    f"{where}: {path} is a directory the author made; the plan uses {{mnt}} "
                    "itself (a fresh filesystem has no subdirectories)"
                )
                return "{mnt}"
            if "/" in rest:
                self.notes.append(f"{where}: {path} becomes {{mnt}}/{rest.rsplit('/', 1)[-1]}")
                rest = rest.rsplit("/", 1)[-1]
            return f"{{mnt}}/{rest}"
        if path.startswith("/") and not path.startswith(("/dev/", "/proc/", "/sys/")):
            name = path.rstrip("/").rsplit("/", 1)[-1]
            if directory or not name:
                self.notes.append(f"{where}: {path} is off the mail's mount; the plan uses {{mnt}}")
                return "{mnt}"
            self.notes.append(
                f"{where}: {path} is off the mail's mount ({mnt}); the plan writes {{mnt}}/{name}"
            )
            return f"{{mnt}}/{name}"
        return path


# --- workload ------------------------------------------------------------------------------------


def _workload(
    draft: Draft,
    found: list[commands.Command],
    jobs: list[jobfile.JobFile],
    paths: _Paths,
    prose: list[context.Paragraph],
) -> None:
    fios = [c for c in found if isinstance(c, commands.Fio)]
    measured = [f for f in fios if not f.create_only and (not f.job_files or not jobs)]
    prepass = [f for f in fios if f.create_only]
    named_files = [f for f in fios if f.job_files and not f.create_only]
    if measured or (jobs and (named_files or not _other_tools(found))):
        _fio_workload(draft, measured, prepass, jobs, named_files, paths)
        rest = [c for c in found if isinstance(c, commands.XfsIo | commands.Dd)]
    else:
        tools = [c for c in found if isinstance(c, commands.XfsIo | commands.Dd)]
        if not tools:
            raise NothingToReproduce("no workload command the plan could run")
        chosen = tools[0]
        rest = tools[1:]
        if isinstance(chosen, commands.XfsIo):
            _xfs_io(draft, chosen, paths)
        else:
            _dd(draft, chosen, paths)
        for f in fios:
            draft.ignored.append((f.line.where, _short(f.line.text), "a second workload"))
    for other in rest:
        draft.ignored.append(
            (other.line.where, _short(other.line.text), "a second workload; a plan runs one")
        )
    _kpis(draft, prose)
    draft.notes.extend(paths.notes)


def _other_tools(found: list[commands.Command]) -> bool:
    return any(isinstance(c, commands.XfsIo | commands.Dd) for c in found)


Section = tuple[str, tuple[tuple[str, str | None], ...]]


def _fio_workload(
    draft: Draft,
    measured: list[commands.Fio],
    prepass: list[commands.Fio],
    jobs: list[jobfile.JobFile],
    named_files: list[commands.Fio],
    paths: _Paths,
) -> None:
    draft.workload_kind = "fio"
    sections: tuple[Section, ...]
    fit: tuple[Section, ...] | None = None  # what the target must hold, when not `sections`
    sweep = _sweep(measured)
    if measured:
        run = measured[0]
        sections, first, where = run.sections, run.line.first, run.line.where
        draft.workload_ref = _ref(run.line)
        draft.used.append((where, _short(run.line.text), "workload (fio job)"))
        for what, why in run.dropped:
            draft.leave_out(where, f"fio {what}", why)
        if sweep is not None:
            fit = _largest(measured, sweep)  # the target must hold the biggest cell
            sections = _sweep_sections(draft, measured, sweep)
        for other in [] if sweep is not None else measured[1:]:
            draft.ignored.append(
                (
                    other.line.where,
                    _short(other.line.text),
                    "a second fio workload; a plan runs one",
                )
            )
    else:
        job = jobs[0]
        sections, first = job.sections, job.first
        where = f"lines {job.first}-{job.last}"
        draft.workload_ref = Ref(
            where, f"the fio job file ({', '.join(n for n, _ in job.sections)})"
        )
        draft.used.append(
            (where, "[" + "] [".join(n for n, _ in job.sections) + "]", "workload (fio job file)")
        )
        for run in named_files:
            draft.used.append((run.line.where, _short(run.line.text), "runs the job file"))
    draft.fio_text, runtime = _job_text(sections, paths, where, first, measured=True)
    if draft.matrix:
        name = draft.matrix[0][0]
        draft.fio_text = draft.fio_text.replace(f"={_AXIS_MARK}\n", f"={{{name}}}\n")
    if runtime is not None:
        draft.vars["runtime"] = (runtime, f"fio runtime, {where}")
        draft.quick_vars["runtime"] = str(min(_QUICK_RUNTIME, seconds(runtime) or _QUICK_RUNTIME))
    _fit_fio(draft, fit or sections, where)
    if prepass:
        pre = prepass[0]
        draft.fill_text, _ = _job_text(
            pre.sections, paths, pre.line.where, pre.line.first, measured=False
        )
        head, _, rest = draft.fill_text.partition("\n")  # the first section: global or the job
        draft.fill_text = f"{head}\ncreate_only=1\n{rest}"
        draft.fill_ref = _ref(pre.line)
        for what, why in pre.dropped:
            draft.leave_out(pre.line.where, f"fio {what}", why)
        draft.used.append(
            (pre.line.where, _short(pre.line.text), "prepare.fill (--create_only pre-pass)")
        )


# fio options a sweep may vary (a mail that runs the same job at several of its values);
# the matrix dimension takes fio's short name
_AXES = {"bs": "bs", "blocksize": "bs", "numjobs": "numjobs", "iodepth": "iodepth",
         "rw": "rw", "readwrite": "rw", "ioengine": "ioengine"}  # fmt: skip
_AXIS_MARK = "IOLABAXISVALUE"


def _sweep(measured: list[commands.Fio]) -> tuple[int, int] | None:
    """(section, option) index of the one option whose value differs between the mail's
    fio commands when all else is the same (section names aside) — a sweep; None otherwise.
    Each value must differ from the others: a repeated command is a repeat, not a sweep."""
    if len(measured) < 2:
        return None
    shapes = {tuple(tuple(k for k, _ in opts) for _, opts in f.sections) for f in measured}
    if len(shapes) != 1:
        return None
    differing = {
        (si, oi)
        for f in measured[1:]
        for si, (_, opts) in enumerate(f.sections)
        for oi, (_, value) in enumerate(opts)
        if value != measured[0].sections[si][1][oi][1]
    }
    if len(differing) != 1:
        return None
    ((si, oi),) = differing
    key, _ = measured[0].sections[si][1][oi]
    values = [f.sections[si][1][oi][1] for f in measured]
    if key not in _AXES or None in values or len(set(values)) != len(values):
        return None
    return si, oi


def _largest(measured: list[commands.Fio], at: tuple[int, int]) -> tuple[Section, ...]:
    """The sections of the sweep's command with the most jobs (numjobs multiplies the files;
    the other axes do not change what the files take)."""
    si, oi = at

    def jobs(f: commands.Fio) -> int:
        value = str(f.sections[si][1][oi][1])
        return int(value) if value.isdigit() else 0

    return max(measured, key=jobs).sections


def _sweep_sections(
    draft: Draft, measured: list[commands.Fio], at: tuple[int, int]
) -> tuple[Section, ...]:
    """The first command's sections with the swept value a placeholder, and the matrix."""
    si, oi = at
    key = measured[0].sections[si][1][oi][0]
    name = _AXES[key]
    values = [str(f.sections[si][1][oi][1]) for f in measured]
    run = measured[0]
    draft.matrix.append((name, values, Ref(run.line.where, _short(run.line.text))))
    wheres = ", ".join(dict.fromkeys(f.line.where for f in measured))  # a loop: one line
    draft.matrix_note = (
        f"the mail runs the same fio job at {len(values)} {key} values ({wheres}): "
        f"a matrix dimension, {{{name}}} in the job"
    )
    for f in measured[1:]:
        value = f.sections[si][1][oi][1]
        draft.used.append((f.line.where, _short(f.line.text), f"matrix {name}={value}"))
    sections = list(run.sections)
    name_, opts = sections[si]
    options = list(opts)
    options[oi] = (key, _AXIS_MARK)
    sections[si] = (name_, tuple(options))
    return tuple(sections)


def seconds(text: str) -> int | None:
    """`60`, `60s`, `5m`, `1h` → seconds; None for anything else."""
    match = re.fullmatch(r"(\d+)\s*(s|m|h)?", text.strip())
    if match is None:
        return None
    return int(match.group(1)) * {"s": 1, None: 1, "m": 60, "h": 3600}[match.group(2)]


def _job_text(
    sections: tuple[Section, ...], paths: _Paths, where: str, line: int, *, measured: bool
) -> tuple[str, str | None]:
    """fio's job file syntax for the sections, paths made placeholders; the runtime found."""
    runtime: str | None = None
    out: list[str] = []
    for name, options in sections:
        if name == "global" and not options and len(sections) > 1:
            continue
        out.append(f"[{_escape(name)}]")
        for key, value in options:
            if value is None:
                out.append(key)
                continue
            if key in _PATH_KEYS:
                text = ":".join(
                    paths.device(p, line)
                    if commands.is_device(p) and p not in paths.fs_devices
                    else _escape_path(paths, p, where, key)
                    for p in value.split(":")
                )
            elif key == "runtime" and measured and runtime is None:
                runtime, text = value, "{runtime}"
            else:
                text = _escape(value)
            out.append(f"{key}={text}")
    return "\n".join(out) + "\n", runtime


def _escape_path(paths: _Paths, path: str, where: str, key: str) -> str:
    mapped = paths.file(path, where, directory=key == "directory")
    if mapped.startswith("{mnt}"):
        return "{mnt}" + _escape(mapped[len("{mnt}") :])
    return _escape(mapped)


def _escape(text: str) -> str:
    """Literal braces in a plan's job text are doubled (`{` starts a placeholder)."""
    return text.replace("{", "{{").replace("}", "}}")


def _fit_fio(draft: Draft, sections: tuple[Section, ...], where: str) -> None:
    """The bytes the job's files take; sizes scaled down when they do not fit here."""
    glob = dict(sections[0][1]) if sections and sections[0][0] == "global" else {}
    need = 0
    raw = 0  # the largest size a job on a block device spans
    shared: set[str] = set()
    for name, options in sections:
        if name == "global" and len(sections) > 1:
            continue
        merged = {**glob, **dict(options)}
        size = next((merged[k] for k in _SIZE_KEYS if merged.get(k)), None)
        filename = merged.get("filename")
        if size is None:
            continue
        each = size_value(str(size).split("-")[-1].split(":")[-1]) or 0
        if filename and commands.is_device(filename.split(":")[0]):
            raw = max(raw, each)
            continue
        jobs = int(merged.get("numjobs") or 1) if str(merged.get("numjobs") or "1").isdigit() else 1
        if filename:
            if filename in shared:
                continue
            shared.add(filename)
            need += each
        else:
            need += each * jobs
    if raw > IMAGE_DEFAULT:
        _fit_device(draft, raw, where)
    fit(draft, need, where)


def _fit_device(draft: Draft, span: int, where: str) -> None:
    """A job on a block device spans `span` bytes of it: the loop device is made that large,
    or, beyond what a loop image in RAM may take here, the span is scaled to it."""
    wanted = math.ceil(span / (256 << 20)) * (256 << 20)
    if wanted <= IMAGE_MAX:
        draft.target_size = wanted
        draft.target_note = f"the job spans {_human(span)} of each device ({where})"
        return
    draft.target_size = IMAGE_MAX
    factor = IMAGE_MAX / span
    draft.target_note = (
        f"SCALED: the job spans {_human(span)} of each device ({where}), more than a "
        f"{_human(IMAGE_MAX)} loop image in RAM holds here; its sizes are scaled by {factor:.3g}"
    )
    draft.notes.append(draft.target_note)
    draft.fio_text = _scale_sizes(draft.fio_text, factor)


def fit(draft: Draft, need: int, where: str) -> None:
    """The target sized for `need` bytes of files; their sizes scaled when they do not fit."""
    if need <= 0:
        return
    wanted = math.ceil((need / _FILL + (64 << 20)) / (256 << 20)) * (256 << 20)
    if wanted <= IMAGE_MAX:
        draft.target_size = max(IMAGE_DEFAULT, wanted)
        draft.target_note = f"the workload's files take {_human(need)} ({where})"
        return
    factor = IMAGE_MAX * _FILL / need
    draft.target_size = IMAGE_MAX
    draft.target_note = (
        f"SCALED: the workload's files take {_human(need)} ({where}), more than a "
        f"{_human(IMAGE_MAX)} loop image in RAM holds here; its sizes are scaled by {factor:.3g}"
    )
    draft.notes.append(draft.target_note)
    draft.fio_text = _scale_sizes(draft.fio_text, factor)
    if "size" in draft.vars:
        value, why = draft.vars["size"]
        draft.vars["size"] = (_scaled(value, factor), f"{why}; scaled from {value}")


def _scale_sizes(text: str, factor: float) -> str:
    def one(match: re.Match[str]) -> str:
        return f"{match.group(1)}={_scaled(match.group(2), factor)}"

    return re.sub(r"(?m)^(size|filesize)=(\S+)$", one, text)


def _scaled(value: str, factor: float) -> str:
    size = size_value(value)
    if size is None:
        return value
    return f"{max(1, int(size * factor) >> 20)}M"


def _human(size: int) -> str:
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.3g}{unit}"
    return f"{size}B"


def _xfs_io(draft: Draft, command: commands.XfsIo, paths: _Paths) -> None:
    draft.workload_kind = "xfs_io"
    where = command.line.where
    argv: list[str] = []
    need = 0
    args = list(command.args)
    at = 0
    while at < len(args):
        word = args[at]
        if word == "-c" and at + 1 < len(args):
            inner, length = _xfs_io_command(args[at + 1])
            if length is not None and "size" not in draft.vars:
                draft.vars["size"] = (length[0], f"the pwrite/pread length, {where}")
                draft.quick_vars["size"] = _quick_size(length[0])
                need = max(need, length[1])
            argv += ["-c", inner]
            at += 2
            continue
        word = paths.unset_variable(word, where)
        if word.startswith("/"):
            if commands.is_device(word):
                argv.append(paths.device(word, command.line.first))
            else:
                argv.append(_escape_path(paths, word, where, "filename"))
        else:
            argv.append(_escape(word))
        at += 1
    draft.argv = argv
    draft.workload_ref = _ref(command.line)
    draft.used.append((where, _short(command.line.text), "workload (xfs_io)"))
    fit(draft, need, where)


def _xfs_io_command(text: str) -> tuple[str, tuple[str, int] | None]:
    """`pwrite -W 0 1G` → (`pwrite -W 0 {size}`, ("1G", bytes)): the length a placeholder."""
    words = text.split()
    if not words or words[0] not in ("pwrite", "pread", "falloc", "fpunch", "fzero", "truncate"):
        return _escape(text), None
    sizes = [
        i for i, w in enumerate(words[1:], 1) if not w.startswith("-") and size_value(w) is not None
    ]
    if not sizes:
        return _escape(text), None
    last = sizes[-1]
    length = words[last]
    offset = size_value(words[sizes[-2]]) if len(sizes) > 1 else 0
    words = [_escape(w) for w in words]
    words[last] = "{size}"
    return " ".join(words), (length, (offset or 0) + (size_value(length) or 0))


def _quick_size(value: str) -> str:
    size = size_value(value) or 0
    return value if size <= (256 << 20) else "256M"


def _dd(draft: Draft, command: commands.Dd, paths: _Paths) -> None:
    draft.workload_kind = "dd"
    where = command.line.where
    argv: list[str] = []
    options = dict(a.split("=", 1) for a in command.args if "=" in a)
    for arg in command.args:
        key, eq, value = arg.partition("=")
        if eq and key in ("if", "of"):
            value = paths.unset_variable(value, where)
        if eq and key in ("if", "of") and value.startswith("/"):
            if commands.is_device(value) and not value.startswith(
                ("/dev/zero", "/dev/null", "/dev/urandom")
            ):
                value = paths.device(value, command.line.first)
            elif not value.startswith("/dev/"):
                value = _escape_path(paths, value, where, "filename")
            argv.append(f"{key}={value}")
        else:
            argv.append(_escape(arg))
    draft.argv = argv
    draft.workload_ref = _ref(command.line)
    draft.used.append((where, _short(command.line.text), "workload (dd)"))
    bs = size_value(options.get("bs", "512").upper().replace("B", "")) or 512
    count = int(options["count"]) if options.get("count", "").isdigit() else 0
    if count and options.get("of", "").startswith("/") and not commands.is_device(options["of"]):
        fit(draft, bs * count, where)
        if draft.target_note.startswith("SCALED"):
            factor = IMAGE_MAX * _FILL / (bs * count)
            draft.argv = [
                f"count={max(1, int(count * factor))}" if a.startswith("count=") else a
                for a in draft.argv
            ]


def _kpis(draft: Draft, prose: list[context.Paragraph]) -> None:
    text = " ".join(p.text for p in prose)
    iops = re.search(r"\biops\b(?!\s*=)", text, re.I) is not None  # not fio's `IOPS=`
    if draft.workload_kind == "fio":
        rws = re.findall(r"(?m)^(?:rw|readwrite)=(\w+)", draft.fio_text) or ["read"]
        dirs: list[str] = []
        for rw in rws:
            for d in ("read", "write"):
                if (d in rw or rw in ("rw", "randrw")) and d not in dirs:
                    dirs.append(d)
        random = any(rw.startswith("rand") for rw in rws)
        metric = "iops" if iops or random else "bw_bytes"
        draft.kpis = [f"{d}.{metric}" for d in dirs]
        draft.kpi_note = (
            "the mail speaks of IOPS"
            if iops
            else "random I/O: IOPS"
            if random
            else "sequential I/O: bandwidth"
        )
    else:
        draft.kpis = ["write.bw_bytes"]
        draft.kpi_note = f"{draft.workload_kind}'s write bandwidth"


# --- knobs ---------------------------------------------------------------------------------------


def _knobs(draft: Draft, found: list[commands.Command]) -> None:
    for command in found:
        if isinstance(command, commands.Sysctl):
            where, text = command.line.where, _short(command.line.text)
            if command.name == "vm.drop_caches":
                draft.drop_caches = _ref(command.line)
                draft.used.append((where, text, "prepare.drop_caches"))
            elif command.name in draft.sysctl:
                draft.ignored.append((where, text, f"{command.name} set again"))
            else:
                draft.sysctl[command.name] = (command.value, _ref(command.line))
                draft.used.append((where, text, f"knobs.sysctl.{command.name}"))
        elif isinstance(command, commands.Queue):
            where, text = command.line.where, _short(command.line.text)
            draft.queue[command.name] = (command.value, _ref(command.line))
            draft.used.append((where, text, f"knobs.queue.{command.name}"))


# --- variants ------------------------------------------------------------------------------------


def _variants(
    draft: Draft,
    mounts: list[commands.Mount],
    prose: list[context.Paragraph],
    captions: list[tuple[str, int]],
    subject: str | None,
) -> None:
    distinct: list[commands.Mount] = []
    for mount in mounts:
        if all(set(m.options) != set(mount.options) for m in distinct):
            distinct.append(mount)
    if len(distinct) > 1:
        _mount_variants(draft, distinct)
        return
    if _caption_mount_variants(draft, captions):
        return
    named = _distinct_kernels(context.kernels(prose, captions))
    # the kernels the results are captioned with are the comparison; others are candidates
    captioned = [k for k in named if any(_names_kernel(c, k.value) for c, _ in captions)]
    kernels = captioned or named
    revert = context.revert(prose, captions)
    if kernels and (len(kernels) > 1 or revert is not None):
        _kernel_variants(draft, kernels, revert)
        others = [k for k in named if k not in kernels]
        if others:
            draft.variants_note += "; also named, not measured in the mail: " + ", ".join(
                f"{k.value} (line {k.line})" for k in others
            )
        return
    if revert is not None and not context.is_patch(subject):
        name = "base+revert" + (f"-{revert.value}" if revert.value else "")
        draft.variants = [
            Variant("base", {"kernel": "base"}, Ref(f"line {revert.line}", revert.quote)),
            Variant(name, {"kernel": name}, Ref(f"line {revert.line}", revert.quote)),
        ]
        draft.baseline = "base"
        draft.quick_here = _QUICK_KERNELS
        draft.variants_note = (
            "the mail measured a revert but names no kernel: set each kernel: to the "
            "`uname -r` of your build without and with the revert"
        )
        return
    sides = _patch_sides(captions)
    if sides is not None:
        without, with_ = sides
        draft.variants = [
            Variant("without-patch", {}, Ref(f"line {without[1]}", without[0])),
            Variant("with-patch", {"kernel": "patched"}, Ref(f"line {with_[1]}", with_[0])),
        ]
        draft.baseline = "without-patch"
        draft.variants_note = (
            "the mail's results are captioned without/with the patch: without it is the kernel "
            "a host runs; set with-patch's kernel: to the `uname -r` of your build with it"
        )
        draft.quick_here = "without the patch only, on the kernel this host runs"
        return
    if draft.matrix:
        draft.variants_note = "the mail compares no variants: one case per matrix cell"
        return
    _undecided(draft, prose, kernels)


# words of a sentence that says what was compared
_COMPARED = re.compile(
    r"\b(?:vs\.?|versus|compared (?:to|with)|against|regress\w*|slower|faster|improv\w*|"
    r"before|after|w/o|without|with(?= -o| the patch| patch))\b",
    re.I,
)


_QUICK_KERNELS = "on the kernel this host runs: a check that the plan runs boots no kernel"


def _undecided(draft: Draft, prose: list[context.Paragraph], kernels: list[context.Found]) -> None:
    """The mail does not say which variants it compares: one case, said in the plan and in
    the listing with the lines that speak of a comparison (where the author may have said)."""
    candidates: list[tuple[int, str]] = [(k.line, k.quote) for k in kernels]
    for paragraph in prose:
        for number, text in paragraph.lines:
            if _COMPARED.search(text) and all(number != n for n, _ in candidates):
                candidates.append((number, text.strip()))
    candidates.sort()
    draft.variants_note = (
        "UNDECIDED: the mail does not say which variants it compares, so this plan measures "
        "one case; add variants: for what the author compared"
        + ("" if not candidates else " (candidate lines: " + ", ".join(
            str(n) for n, _ in candidates[:8]) + ")")
    )  # fmt: skip
    draft.notes.append(
        "the mail does not say which variants it compares: one case"
        + ("" if candidates else " (no line speaks of a comparison)")
    )
    for number, text in candidates[:8]:
        draft.notes.append(f"  candidate, line {number}: {_short(text, 80)}")


def _distinct_kernels(kernels: list[context.Found]) -> list[context.Found]:
    """`5.10` beside `5.10.162` is the same kernel said shortly: the precise one stays."""
    values = [k.value for k in kernels]
    return [k for k in kernels if not any(v.startswith(k.value + ".") for v in values)]


def _names_kernel(caption: str, version: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(version)}(?![\w.]|-\w)", caption) is not None


# a caption naming a mount option: `mounted with -o iversion:`, `-o noiversion`, `with nodelalloc`
_CAPTION_OPTION = re.compile(r"(?:-o\s*|\bmount(?:ed)?\s+with\s+(?:-o\s*)?)(?P<opt>[a-z_][\w=,]*)")
_NEGATED = re.compile(r"\b(?:disabled|without|w/o|off|no|not)\b", re.I)


def _caption_mount_variants(draft: Draft, captions: list[tuple[str, int]]) -> bool:
    """Results captioned by mount options (`iversion support disabled:` / `mounted with -o
    iversion:`): a variant per caption, the option negated (`noiversion`) where the caption
    says it was off."""
    named = [(m.group("opt"), c, line) for c, line in captions
             if (m := _CAPTION_OPTION.search(c)) is not None]  # fmt: skip
    if not named:
        return False
    option = named[0][0]
    if "," in option or "=" in option:
        return False
    negated = option[2:] if option.startswith("no") else f"no{option}"
    seen: dict[str, tuple[str, int]] = {}
    for caption, line in captions:
        match = _CAPTION_OPTION.search(caption)
        if match is not None and match.group("opt") in (option, negated):
            seen.setdefault(match.group("opt"), (caption, line))
        elif re.search(rf"\b{re.escape(option)}\b", caption) and _NEGATED.search(caption):
            seen.setdefault(negated, (caption, line))
    if len(seen) < 2:
        return False
    base = " ".join(draft.mount_options)
    for name, (caption, line) in sorted(seen.items(), key=lambda item: item[1][1]):
        options = ",".join([*draft.mount_options, name]) if base else name
        draft.variants.append(
            Variant(name, {"filesystem": {"mount_options": options}}, Ref(f"line {line}", caption))
        )
    draft.baseline = draft.variants[0].name
    draft.variants_note = "the mail's results are captioned by mount option: a variant each"
    return True


def _mount_variants(draft: Draft, mounts: list[commands.Mount]) -> None:
    common = [o for o in mounts[0].options if all(o in m.options for m in mounts)]
    draft.mount_options = common
    draft.mount_ref = None
    names: list[str] = []
    for mount in mounts:
        own = [o for o in mount.options if o not in common]
        name = re.sub(r"[^A-Za-z0-9_.+-]+", "-", "+".join(own)).strip("-") or "defaults"
        while name in names:
            name += "-2"
        names.append(name)
        draft.variants.append(
            Variant(
                name, {"filesystem": {"mount_options": ",".join(mount.options)}}, _ref(mount.line)
            )
        )
    draft.baseline = names[0]
    draft.variants_note = "one variant per mount line: the mail mounts the filesystem each way"


def _kernel_variants(
    draft: Draft, kernels: list[context.Found], revert: context.Found | None
) -> None:
    # with a revert, the kernel it is applied to is the baseline (does the revert fix it?);
    # else the oldest kernel named (the good one a regression is measured from)
    ordered = sorted(kernels, key=lambda k: _version_key(k.value))
    base = ordered[-1] if revert is not None else ordered[0]
    draft.variants.append(
        Variant(base.value, {"kernel": base.value}, Ref(f"line {base.line}", base.quote))
    )
    if revert is not None:
        name = f"{base.value}+revert" + (f"-{revert.value}" if revert.value else "")
        draft.variants.append(
            Variant(name, {"kernel": name}, Ref(f"line {revert.line}", revert.quote))
        )
    for kernel in kernels:
        if kernel is not base:
            draft.variants.append(
                Variant(
                    kernel.value, {"kernel": kernel.value}, Ref(f"line {kernel.line}", kernel.quote)
                )
            )
    draft.baseline = base.value
    draft.quick_here = _QUICK_KERNELS
    draft.variants_note = (
        "kernels the mail names (releases as the mail writes them: set each to the `uname -r` "
        "of the kernel you build)"
    )


def _version_key(version: str) -> tuple[int, ...]:
    numbers = [int(n) if n.isdigit() else 999 for n in re.split(r"[.-]", version.replace("rc", ""))]
    rc = -1 if "-rc" in version else 0  # 6.8-rc7 comes before 6.8
    return (*numbers[:3], rc)


def _patch_sides(captions: list[tuple[str, int]]) -> tuple[tuple[str, int], tuple[str, int]] | None:
    without = next(
        (c for c in captions if re.search(r"\bw/o\b|\bwithout\b|\bbefore\b", c[0], re.I)), None
    )
    with_ = next(
        (
            c
            for c in captions
            if re.search(r"\bw/(?!o)|\bwith\b(?!out)|\bafter\b|\bpatched\b", c[0], re.I)
        ),
        None,
    )
    if without is None or with_ is None or without == with_:
        return None
    return without, with_


# --- target --------------------------------------------------------------------------------------


def _multipath_target(draft: Draft, paths: _Paths, ref: Ref) -> None:
    """The mail's device-mapper devices on a multipath setup: iolab's `multipath` target, one
    map (over 2 paths, each its own request queue) in place of each of the mail's devices."""
    draft.target_kind = "multipath"
    draft.target_paths = 2
    draft.target_count = len(paths.raw)
    draft.target_ref = ref
    if len(paths.raw) == 1:
        draft.fio_text = draft.fio_text.replace("{dev0}", "{dev}")
    maps = (
        f"{len(paths.raw)} multipath maps over 2 paths each"
        if len(paths.raw) > 1
        else ("a multipath map over 2 paths")
    )
    draft.notes.append(
        f"the workload names device-mapper devices ({', '.join(paths.raw)}) on a multipath "
        f"setup: {maps}, filesystem none"
    )
    draft.monitors.append(
        ("diskstats", Ref("iolab's choice", "where the I/O went: each map and each of its paths"))
    )
    if draft.target_size * len(paths.raw) > _QUICK_MAPS:
        each = _QUICK_MAPS // len(paths.raw)
        draft.quick_extra.append(
            (
                f"{_human(each)} a map: the maps' images fit a guest's /dev/shm",
                "target",
                {"size": _human(each)},
            )
        )


def _scheduler_dimension(draft: Draft, prose: list[context.Paragraph]) -> None:
    """A mail whose bisect or prose names an I/O scheduler (`block/mq-deadline: …`) and sets
    none: the scheduler against none as a matrix dimension (on the paths of a multipath
    map, which itself keeps none)."""
    if draft.queue or draft.matrix:
        return
    for paragraph in prose:
        match = _SCHEDULERS.search(paragraph.text)
        if match is None:
            continue
        name = match.group(1)
        draft.matrix.append(
            ("scheduler", [name, "none"], Ref(f"line {paragraph.line_of(match.start())}",
                                              _around_quote(paragraph.text, match.start())))
        )  # fmt: skip
        draft.matrix_paths["scheduler"] = (
            "knobs.member_queue.scheduler"
            if draft.target_kind == "multipath"
            else "knobs.queue.scheduler"
        )
        draft.matrix_note = (
            f"the mail points at the {name} scheduler: {name} against none, a matrix dimension"
        )
        return


def _around_quote(text: str, at: int) -> str:
    return _short(text[max(0, at - 40) : at + 60])


def _requirements(draft: Draft, prose: list[context.Paragraph], paths: _Paths) -> None:
    for found in context.requirements(prose, paths.device_lines):
        draft.requires.append(
            (found.value, _short(found.quote, 70), Ref(f"line {found.line}", found.quote))
        )


_QUICK_MAPS = 512 << 20  # --quick: the maps' images together, in RAM
_MAPPED = re.compile(r"^/dev/(?:dm-\d+|mapper/\S+)$")
_SCHEDULERS = re.compile(r"\b(mq-deadline|bfq|kyber)\b")


def _target(draft: Draft, paths: _Paths, prose: list[context.Paragraph]) -> None:
    if draft.workload_kind == "fio" and paths.raw:
        draft.fstype = None
        draft.fstype_ref = None
        multipath = next((r for r in draft.requires if r[0] == "dm-multipath"), None)
        if multipath is not None and all(_MAPPED.match(p) for p in paths.raw):
            _multipath_target(draft, paths, multipath[2])
        else:
            draft.target_count = len(paths.raw)
            draft.notes.append(
                "the workload names block devices ("
                + ", ".join(paths.raw)
                + "): filesystem none, a loop image each"
            )
        _scheduler_dimension(draft, prose)
    disk = context.disk_size(prose)
    if disk is not None:
        size = size_value(disk.value) or 0
        if size > draft.target_size:
            note = (
                f"line {disk.line}: the mail's {disk.value} disk is scaled to a "
                f"{_human(draft.target_size)} loop image"
            )
            draft.target_note = f"{draft.target_note}; {note}" if draft.target_note else note
            draft.notes.append(note)
