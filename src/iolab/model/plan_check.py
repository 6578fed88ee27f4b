"""What `iolab plan check` found about a plan (built by iolab.runs.plan_check, laid out by
iolab.report.plan_check)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class CaseLine:
    """One case as the check lists it."""

    key: str
    variant: str | None
    cell: dict[str, str]
    target: str  # "loop 1G ram", "md raid5 over 4 loop", "device /dev/sdb"
    workload: str  # "fio", "xfs_io", "dd", "command"
    kernel: str | None
    seconds: float  # the timed part of one sample
    bounded: bool  # `seconds` is the timeout: the workload is not timed by the plan


@dataclass(frozen=True)
class Place:
    """Whether the plan can run in one kind of place, and why not or how."""

    where: str  # "here", "a guest", "a fleet"
    ok: bool
    how: str


@dataclass(frozen=True)
class WallTime:
    """The timed part of one way of running the plan."""

    how: str  # "run", "run --quick", "ab"
    blocks: int
    samples: int
    seconds: float | None  # None: that way does not apply (`why`)
    at_most: bool  # some workload counted at its timeout (or ab's block budget)
    boots: int = 0  # kernel plans: boots the schedule needs
    why: str = ""


@dataclass(frozen=True)
class PlanCheck:
    """A valid plan: what it holds, where it can run, how long it takes."""

    path: str
    name: str
    variants: tuple[str, ...]
    baseline: str | None
    matrix: dict[str, tuple[str, ...]]
    repeat: int
    kpis: tuple[tuple[str, str], ...]  # (metric, "higher" | "lower")
    requires: tuple[str, ...]  # stated and implied requirement names
    cases: tuple[CaseLine, ...]
    places: tuple[Place, ...]
    times: tuple[WallTime, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)
