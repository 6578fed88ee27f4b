"""A plan after validation and expansion: plain frozen data, what the lab consumes.

`load_plan(path, profile)` (iolab.plan) returns a `Plan`; `Plan.cases` holds one `Case` per
(variant × matrix cell), fully resolved: every default filled in, sizes converted to bytes,
matrix values and `vars:` substituted, fio `fio:` overrides merged into the job text.
Repetitions are *not* multiplied in: the lab runs `Plan.repeat` randomized complete blocks,
each block running every case once in a fresh random order (seeded by `Plan.seed`).

Only placeholders that depend on the machine remain in workload text/argv; the lab fills them
with `iolab.plan.placeholders.render_workload(workload, mounts, devices, workdir)`:

    {mnt}  {mnt0} {mnt1} ...   mount points (one filesystem per target device; {mnt} = {mnt0})
    {mnts}                     every mount point, joined with ':' (fio's directory list:
                               numjobs clones are spread round-robin over them)
    {dev}  {dev0} {dev1} ...   block device paths, e.g. /dev/loop7 ({dev} = {dev0})
    {workdir}                  a private scratch directory for the sample (not on the target)
    {src} {rev}                `iolab bisect` only: the commit's work tree and full sha
    {{ and }}                  literal braces

Conventions: sequences are tuples; mappings are plain dicts that nobody mutates; sizes are
bytes (int); times are seconds (float).  `TargetSpec.count` is how many loop images / devices
the workload needs (the highest {devN}/{mntN} index + 1, or the plan's `count`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from iolab.model.metrics import Direction
from iolab.monitors.registry import available_names

TargetKind = Literal["loop", "device", "md", "multipath", "null_blk"]
Backing = Literal["ram", "disk"]
FsType = Literal["ext4", "xfs", "btrfs"]
WorkloadKind = Literal["fio", "xfs_io", "dd", "command"]
MkfsWhen = Literal["per-sample", "per-run"]
OnFailure = Literal["continue", "stop"]
Reboot = Literal["per-sample", "per-switch"]

# Monitor names a plan may list (iolab.monitors implements them).  A monitor that cannot run
# for a case (jbd2 on xfs) reports itself unavailable at run time; the plan does not refuse it.
KNOWN_MONITORS: tuple[str, ...] = tuple(available_names())  # one list: the registry's

# Placeholders the lab fills at run time (everything else is substituted by the plan layer).
LAB_PLACEHOLDERS: tuple[str, ...] = ("mnt", "mnts", "dev", "workdir")  # plus mntN / devN


@dataclass(frozen=True)
class Kpi:
    """A metric the verdict is about, and which way is better."""

    metric: str  # e.g. "write.iops", "write.bw_bytes"
    direction: Direction  # HIGHER or LOWER (never NEUTRAL: validation refuses it)


MdLevel = Literal[0, 1, 4, 5, 6, 10]
Resync = Literal["wait", "assume-clean"]
PathSelector = Literal["round-robin", "queue-length", "service-time"]


@dataclass(frozen=True)
class MdSpec:
    """An md array iolab makes (mdadm --create) over the target's members."""

    level: MdLevel
    chunk_bytes: int = 0  # 0: mdadm's default (512 KiB); ignored for level 1
    resync: Resync = "assume-clean"  # wait for the initial resync, or skip it


@dataclass(frozen=True)
class PathFault:
    """During the measured workload: fail or reinstate one multipath path at a time."""

    at_s: float  # seconds after the workload starts
    action: Literal["fail", "restore"]
    path: int  # index into the paths (0-based)


@dataclass(frozen=True)
class MultipathSpec:
    """A dm-multipath map over `paths` request-based paths to one backing device."""

    paths: int
    selector: PathSelector = "round-robin"
    faults: tuple[PathFault, ...] = ()


@dataclass(frozen=True)
class NullBlkSpec:
    """A null_blk device made through configfs (/sys/kernel/config/nullb)."""

    queue_mode: Literal["bio", "mq"] = "mq"
    blocksize: int = 512
    memory_backed: bool = False
    irqmode: Literal["none", "softirq", "timer"] = "softirq"
    completion_nsec: int = 10_000  # irqmode timer only
    submit_queues: int = 1
    hw_queue_depth: int = 64


@dataclass(frozen=True)
class TargetSpec:
    """Where the workload runs: loop images iolab creates, designated block devices, or a
    stack iolab builds — an md array or a dm-multipath map over members (loop images or
    designated devices), or null_blk devices."""

    kind: TargetKind
    count: int  # number of top devices the workload needs (>= 1; md: 1; multipath: maps)
    size_bytes: int = 0  # loop: size of each image; md/multipath: of each member image;
    # null_blk: of each device; device: 0
    backing: Backing = "ram"  # loop: "ram" = image in /dev/shm, "disk" = image in `directory`
    directory: str | None = None  # loop + disk: where the images go (None = lab's default)
    devices: tuple[str, ...] = ()  # device: the designated /dev paths (len == count);
    # md: designated members (len == members)
    members: int = 0  # md: member devices; multipath: paths of each map; 0 for the others
    md: MdSpec | None = None
    multipath: MultipathSpec | None = None
    null_blk: NullBlkSpec | None = None

    @property
    def stacked(self) -> bool:
        """md or multipath: a top device over members iolab also sees and measures."""
        return self.kind in ("md", "multipath")


@dataclass(frozen=True)
class FilesystemSpec:
    """One filesystem made on every target device (and mounted at {mntN})."""

    type: FsType
    mkfs_options: tuple[str, ...] = ()  # argv words, e.g. ("-m", "1", "-b", "4096")
    # one option a word, e.g. ("noatime", "data=ordered"): a list from the plan to mount(8)
    mount_options: tuple[str, ...] = ()


@dataclass(frozen=True)
class MetricRule:
    """How to pull the KPI out of a `command` workload's stdout."""

    name: str  # metric name, e.g. "write.bw_bytes"
    pattern: str  # Python regex with exactly one group; the last match wins
    scale: float = 1.0  # multiply the captured number (e.g. 1048576 for MiB/s → B/s)


@dataclass(frozen=True)
class WorkloadSpec:
    """One thing to execute.  fio: `fio_text` is the whole job file; others: `argv`."""

    kind: WorkloadKind
    fio_text: str | None = None  # fio only: job file text, overrides applied
    argv: tuple[str, ...] = ()  # xfs_io/dd/command: full argv incl. program ("xfs_io", "-f", ..)
    metric: MetricRule | None = None  # command only
    # fio only: a job file path naming {src}, read per commit by `iolab bisect` (fio_text None)
    fio_file: str | None = None
    # with fio_file: the plan's `fio:` overrides (option, value; None removes it), applied to
    # each commit's job file once read, by the code that applies them at plan load
    fio_overrides: tuple[tuple[str, str | None], ...] = ()


@dataclass(frozen=True)
class PrepareSpec:
    """What the lab does before each sample to make samples comparable."""

    mkfs: MkfsWhen = "per-sample"  # fresh filesystem before every sample, or once per run
    drop_caches: bool = True  # sync; echo 3 > /proc/sys/vm/drop_caches before the sample
    fstrim: bool = False  # fstrim the mount point (or blkdiscard when no filesystem)
    fill: WorkloadSpec | None = None  # precondition step, not measured
    warmup: WorkloadSpec | None = None  # run before the measured workload, not measured
    settle_s: float = 0.0  # sleep after preparation, before the measured workload


# requirement names a target kind iolab builds meets (`requires:`); md levels as raidN
STACK_REQUIREMENTS = frozenset(
    {"md", "raid0", "raid1", "raid4", "raid5", "raid6", "raid10", "dm-multipath", "null-blk"}
)


def implied_requirements(target: TargetSpec) -> frozenset[str]:
    """The requirement names a target meets by what it is."""
    if target.md is not None:
        return frozenset({"md", f"raid{target.md.level}"})
    if target.multipath is not None:
        return frozenset({"dm-multipath"})
    if target.null_blk is not None:
        return frozenset({"null-blk"})
    return frozenset()


@dataclass(frozen=True)
class Case:
    """One fully resolved configuration: a variant in one matrix cell."""

    index: int  # position in Plan.cases
    key: str  # stable label: "fsync", "writers=10/dirty=100M/fs=ext4", "default"
    variant: str | None  # None when the plan has no variants
    cell: dict[str, str]  # matrix dimension -> value as written in the plan
    target: TargetSpec
    filesystem: FilesystemSpec | None  # None: raw block devices
    sysctls: dict[str, str]  # "vm.dirty_bytes" -> "104857600" (sizes already in bytes)
    queue: dict[str, str]  # "scheduler", "nr_requests", "iosched.fifo_batch" -> value
    workload: WorkloadSpec
    prepare: PrepareSpec
    cpus: tuple[int, ...] | None  # taskset CPU list for the workload; None = no placement
    monitors: tuple[str, ...]  # names from KNOWN_MONITORS
    timeout_s: float  # kill the sample's workload after this long
    vars: dict[str, str] = field(default_factory=dict)  # placeholder values used (provenance)
    # /sys/block/<member>/queue settings of every md member / multipath path
    member_queue: dict[str, str] = field(default_factory=dict)
    md: dict[str, str] = field(default_factory=dict)  # /sys/block/mdX/md/<name> -> value
    # the kernel the case must run on (`uname -r`), and the words its boot adds to the
    # kernel command line (`kernel: {cmdline}` and `cmdline:`); None: whatever this host
    # runs.  A case naming either runs only where kernels can be booted (docs/kernels.md).
    kernel: str | None = None
    kernel_cmdline: tuple[str, ...] = ()
    # `kernel: {commit: SHA}`: the kernel is built from this commit of the kernel repository
    # given to `--kernel-repo` (then `kernel` is None until it is built and named)
    kernel_commit: str | None = None


@dataclass(frozen=True)
class Plan:
    """A validated plan file, expanded into cases."""

    name: str
    description: str
    path: str  # the plan file as given
    text: str  # the plan file's exact text (stored as provenance)
    sha256: str  # hex digest of `text` (utf-8)
    profile: str | None  # the profile applied, e.g. "quick"
    cases: tuple[Case, ...]
    repeat: int  # number of randomized complete blocks
    kpis: tuple[Kpi, ...]
    on_failure: OnFailure
    seed: int | None  # block-order seed; None = the lab draws one and records it
    variants: tuple[str, ...]  # names in plan order ((): no variants)
    baseline: str | None  # the variant others are compared against (default: the first)
    matrix: dict[str, tuple[str, ...]]  # dimension -> values, in plan order
    # what the measurement needs that a loop image here is not (dm-multipath, md RAID, a
    # device model): name -> what the mail or the author says.  A name iolab builds
    # (STACK_REQUIREMENTS) is met when every case's target is that stack; any other name is
    # a target iolab cannot make, and iolab run refuses the plan.
    requires: dict[str, str] = field(default_factory=dict)
    # with kernels: a boot before every sample (the boot is the unit of replication), or
    # only when the kernel changes (docs/kernels.md)
    reboot: Reboot = "per-sample"
    # unmeasured samples before the first measured one of each lab session (a run's start on
    # a host, every boot of a kernel plan): a fresh boot and a fresh target run slow and
    # scattered at first, and a sample that pays for that is noise (docs/plans.md)
    warmups: int = 0

    @property
    def switches_kernels(self) -> bool:
        """Some case names a kernel or command line additions: it runs only where a worker
        can boot them (a fleet host or a guest)."""
        return any(c.kernel is not None or c.kernel_cmdline or c.kernel_commit for c in self.cases)

    def kernel_commits(self) -> tuple[str, ...]:
        """The commits its cases' kernels are built from (`kernel: {commit: SHA}`), in order."""
        return tuple(dict.fromkeys(c.kernel_commit for c in self.cases if c.kernel_commit))

    def needs_kernel_repo(self) -> str | None:
        """Why this plan cannot run without a kernel repository to build from, or None."""
        commits = self.kernel_commits()
        if not commits:
            return None
        shown = ", ".join(c[:12] for c in commits)
        return (
            f"the plan's cases name kernels by commit ({shown}); they are built from a kernel "
            "repository: `iolab ab PLAN --kernel-repo DIR --kernel-build CMD --fleet CLASS`"
        )

    def requirements(self) -> frozenset[str]:
        """What the plan needs of a host: the stated names and those its targets imply
        (an md RAID5 target: md, raid5; multipath: dm-multipath; null_blk: null-blk)."""
        implied = {name for case in self.cases for name in implied_requirements(case.target)}
        return frozenset(implied | set(self.requires))

    def unmeetable(self) -> str | None:
        """Why no lab can run this plan as written (a stated target requirement its own
        target does not build), or None when the lab may try (whether the kernel has the
        modules a stack needs is the lab's preflight's question)."""
        unmet = []
        for name, text in self.requires.items():
            kinds = sorted({c.target.kind for c in self.cases if name not in
                            implied_requirements(c.target)})  # fmt: skip
            if name not in STACK_REQUIREMENTS:
                unmet.append(f"{name}: {text}" if text else name)
            elif kinds:
                what = f"{name} ({text})" if text else name
                unmet.append(f"{what}, but a target is {'/'.join(kinds)}")
        if unmet:
            return f"the plan requires a target this lab cannot make here ({'; '.join(unmet)})"
        return None

    def elsewhere(self) -> str | None:
        """Why this plan cannot run in this process's lab: a requirement no lab here meets,
        or kernels to boot (a fleet's), or None."""
        return self.unmeetable() or self.needs_worker()

    def needs_worker(self) -> str | None:
        """Why this plan cannot run in this process (kernels to boot), or None."""
        if not self.switches_kernels:
            return None
        kernels = sorted({c.kernel for c in self.cases if c.kernel is not None})
        kernels += [f"commit {c[:12]}" for c in self.kernel_commits()]
        what = f"kernels ({', '.join(kernels)})" if kernels else "kernel command lines"
        return (
            f"the plan's cases name {what}; they run on a fleet whose hosts run `iolab worker` "
            "and boot them (--fleet CLASS; a guest: `iolab guest up`), or on this box booting "
            "them itself (`iolab ab --here`), not in this process"
        )

    def cases_of(self, variant: str | None) -> tuple[Case, ...]:
        """The cases of one variant, in matrix order."""
        return tuple(c for c in self.cases if c.variant == variant)
