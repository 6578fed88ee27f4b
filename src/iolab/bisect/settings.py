"""A bisect's settings and build records, as stored in its run's meta (read back here only).

Every bisect stores one `BisectSettings` under `"bisect"`, with its `mode` said, not guessed:
`commits` (built here, measured here), `releases` (kernel releases, measured on a fleet) or
`kernel-commits` (kernel commits built here, shipped through the store, booted on a fleet).
`--resume` opens the stored run by that mode.  A run stored before the mode was recorded is
refused in one line (start it again): its settings were written in three shapes, and
guessing which from the keys present is what the mode replaces.

Each arm's build is an `BuildRecord` (`"bisect_builds"`; a kernel commit's under
`"kernel_builds"`, which the fleet's workers read to fetch the artifacts).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

from iolab.bisect.engine import Bisection, Settings
from iolab.builds.builder import BuildRecord
from iolab.errors import IolabError, PlanError
from iolab.kernels import artifacts
from iolab.model.bisect import GradeKind, SearchKind
from iolab.model.metrics import Direction, metric_info
from iolab.model.sample import RunInfo
from iolab.plan.model import Case, Plan

Mode = Literal["commits", "releases", "kernel-commits"]
META = "bisect"
KIND = "bisect"


@dataclass(frozen=True)
class BisectSettings:
    """What defines a bisect; a resumed one keeps all of it."""

    mode: Mode
    arms: tuple[str, ...]  # the good end, then the candidates (the bad end last)
    kpi: str
    direction: Direction
    alpha: float
    margin_pct: float
    max_blocks: int
    search: SearchKind
    template_sha256: str  # the plan file as given (kernel modes store a derived plan)
    repo: str | None = None
    build: tuple[str, ...] = ()
    cache: str | None = None
    fleet: str | None = None
    regression: int | None = None  # the registry entry its result is recorded on
    grade: GradeKind = "classify"  # how a step grades (a run stored without it: randomized)
    # the ends' and the verification's tests bet on signs too (a run stored without: no)
    sign_bets: bool = False
    # the ends' and the verification's tests are one-sided (a run stored without: two-sided)
    one_sided: bool = False

    @property
    def builds_key(self) -> str:
        return artifacts.META if self.mode == "kernel-commits" else "bisect_builds"

    def engine(self) -> Bisection:
        return Bisection(
            Settings(
                n=len(self.arms) - 1,
                direction=self.direction,
                alpha=self.alpha,
                margin_pct=self.margin_pct,
                max_blocks=self.max_blocks,
                search=self.search,
                grade=self.grade,
                sign_bets=self.sign_bets,
                one_sided=self.one_sided,
            ),
            kpi=self.kpi,
        )

    def to_meta(self) -> dict[str, Any]:
        return {
            META: {
                "mode": self.mode,
                "arms": list(self.arms),
                "kpi": self.kpi,
                "direction": self.direction.value,
                "alpha": self.alpha,
                "margin_pct": self.margin_pct,
                "max_blocks": self.max_blocks,
                "search": self.search,
                "template_sha256": self.template_sha256,
                "repo": self.repo,
                "build": list(self.build),
                "cache": self.cache,
                "fleet": self.fleet,
                "regression": self.regression,
                "grade": self.grade,
                "sign_bets": self.sign_bets,
                "one_sided": self.one_sided,
            }
        }

    @classmethod
    def from_meta(cls, run: RunInfo) -> BisectSettings:
        s = run.meta.get(META)
        if not isinstance(s, dict):
            raise IolabError(f"run {run.id} has no recorded bisect settings; cannot resume it")
        if s.get("mode") not in get_args(Mode):
            raise IolabError(
                f"run {run.id} was stored by an older iolab (its bisect records no mode); "
                "start the bisect again"
            )
        try:
            search = str(s["search"])
            if search not in get_args(SearchKind):
                raise ValueError(search)
            return cls(
                mode=s["mode"],
                arms=tuple(str(a) for a in s["arms"]),
                kpi=str(s["kpi"]),
                direction=Direction(s["direction"]),
                alpha=float(s["alpha"]),
                margin_pct=float(s["margin_pct"]),
                max_blocks=int(s["max_blocks"]),
                search="binary" if search == "binary" else "probabilistic",
                template_sha256=str(s["template_sha256"]),
                repo=None if s.get("repo") is None else str(s["repo"]),
                build=tuple(str(a) for a in s.get("build") or ()),
                cache=None if s.get("cache") is None else str(s["cache"]),
                fleet=None if s.get("fleet") is None else str(s["fleet"]),
                regression=None if s.get("regression") is None else int(s["regression"]),
                grade="classify" if s.get("grade") == "classify" else "randomized",
                sign_bets=s.get("sign_bets") is True,
                one_sided=s.get("one_sided") is True,
            )
        except (KeyError, TypeError, ValueError):
            raise IolabError(
                f"run {run.id} has incomplete bisect settings; cannot resume it"
            ) from None


def stored_builds(run: RunInfo, settings: BisectSettings) -> dict[str, BuildRecord]:
    recorded = run.meta.get(settings.builds_key) or {}
    try:
        return {str(k): BuildRecord.from_json(v) for k, v in dict(recorded).items()}
    except (KeyError, TypeError, ValueError):
        raise IolabError(f"run {run.id} has incomplete build records; cannot resume it") from None


def single_case(plan: Plan) -> Case:
    if len(plan.cases) != 1:
        raise PlanError(
            f"{plan.path}: `iolab bisect` measures one case per commit; this plan has "
            f"{len(plan.cases)} (remove the matrix and keep at most one variant)"
        )
    return plan.cases[0]


def choose_kpi(plan: Plan, kpi: str | None) -> tuple[str, Direction]:
    if kpi is None:
        if not plan.kpis:
            raise PlanError(f"{plan.path}: give --kpi METRIC or kpis: in the plan")
        return plan.kpis[0].metric, plan.kpis[0].direction
    for k in plan.kpis:
        if k.metric == kpi:
            return k.metric, k.direction
    direction = metric_info(kpi).direction
    if direction is Direction.NEUTRAL:
        raise IolabError(f"--kpi {kpi!r}: no known direction (list it under kpis: in the plan)")
    return kpi, direction
