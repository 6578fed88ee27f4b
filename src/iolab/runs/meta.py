"""A run's metadata as typed records, serialised to and from the store's `runs.meta` JSON
in this module only.

Three records live in `meta` (the keys are the store's format, docs/store.md):
- `LabMeta` — written when a lab or ab run is created: seed, profile, cases, KPIs, variants;
  resume and the analysis read it back.
- `AbSettings` — under `"ab"`: the sequential test an ab run decides with (alpha, margin,
  block budget, stakes); a resumed run keeps them.
- `AbOutcome` — under `"ab_result"`: why the blocks stopped and every KPI's final state.

Readers are lenient about what older iolab versions wrote (a KPI given as a bare name); a
record that is needed and missing raises IolabError with one line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from iolab.errors import IolabError
from iolab.model.metrics import Direction
from iolab.model.sample import RunInfo


@dataclass(frozen=True)
class RecordedKpi:
    metric: str
    direction: Direction | None  # None: the metric table's direction


@dataclass(frozen=True)
class LabMeta:
    """What a lab or ab run records about its plan when it is created."""

    seed: int
    profile: str | None
    repeat: int
    cases: tuple[str, ...]
    planned_samples: int
    kpis: tuple[RecordedKpi, ...]
    variants: tuple[str, ...]
    baseline: str | None
    plan_name: str

    def to_json(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "profile": self.profile,
            "repeat": self.repeat,
            "cases": list(self.cases),
            "planned_samples": self.planned_samples,
            "kpis": [
                {"metric": k.metric, "direction": k.direction.value if k.direction else None}
                for k in self.kpis
            ],
            "variants": list(self.variants),
            "baseline": self.baseline,
            "plan_name": self.plan_name,
        }


def recorded_kpis(run: RunInfo) -> list[RecordedKpi]:
    """The KPIs a run recorded (empty for imports and runs without any)."""
    wanted = run.meta.get("kpis")
    out: list[RecordedKpi] = []
    for item in wanted if isinstance(wanted, list) else []:
        if isinstance(item, dict) and isinstance(item.get("metric"), str):
            try:
                direction: Direction | None = Direction(str(item.get("direction")))
            except ValueError:
                direction = None
            out.append(RecordedKpi(item["metric"], direction))
        elif isinstance(item, str):
            out.append(RecordedKpi(item, None))
    return out


def recorded_baseline(run: RunInfo) -> str | None:
    value = run.meta.get("baseline")
    return value if isinstance(value, str) else None


def resume_point(run: RunInfo) -> tuple[int, str | None]:
    """(seed, profile) a run was created with; IolabError when it has none."""
    seed = run.meta.get("seed")
    profile = run.meta.get("profile")
    if not run.plan_path or not isinstance(seed, int) or isinstance(seed, bool):
        raise IolabError(f"run {run.id} has no recorded plan and seed; cannot repeat its blocks")
    return seed, profile if isinstance(profile, str) else None


# blocks when no budget is given: what a 3% effect at ~10% CV needs here (docs/compare.md)
DEFAULT_MAX_BLOCKS = 200


@dataclass(frozen=True)
class AbSettings:
    """The sequential test of an ab run; `max_blocks` is its block budget (`--max-blocks`)."""

    alpha: float
    margin_pct: float
    max_blocks: int
    stake_blocks: int  # the budget the stakes were sized for: kept when a resume changes it
    max_time_s: float | None
    # bettors on the sign beside the signed-rank ones (stats.sequential.sign_bets_for the
    # stakes' budget when the run began; a run stored without it began without them)
    sign_bets: bool = False
    # each KPI decided by two one-sided tests, each at alpha (`ab --one-sided`; a run stored
    # without it was two-sided)
    one_sided: bool = False

    def to_meta(self) -> dict[str, Any]:
        return {
            "ab": {
                "alpha": self.alpha,
                "margin_pct": self.margin_pct,
                "max_blocks": self.max_blocks,
                "stake_blocks": self.stake_blocks,
                "max_time_s": self.max_time_s,
                "sign_bets": self.sign_bets,
                "one_sided": self.one_sided,
            }
        }


def ab_settings(run: RunInfo) -> AbSettings:
    recorded = run.meta.get("ab")
    try:
        if not isinstance(recorded, Mapping):
            raise KeyError("ab")
        max_blocks = int(recorded["max_blocks"])
        time_limit = recorded.get("max_time_s")
        return AbSettings(
            alpha=float(recorded["alpha"]),
            margin_pct=float(recorded["margin_pct"]),
            max_blocks=max_blocks,
            stake_blocks=int(recorded.get("stake_blocks", max_blocks)),
            max_time_s=float(time_limit) if time_limit is not None else None,
            sign_bets=recorded.get("sign_bets") is True,
            one_sided=recorded.get("one_sided") is True,
        )
    except (KeyError, TypeError, ValueError):
        raise IolabError(f"run {run.id} has no recorded ab settings; cannot resume it") from None


@dataclass(frozen=True)
class KpiOutcome:
    """One KPI's final state in one comparison of an ab run."""

    comparison: str
    kpi: str
    verdict: str
    blocks: int
    estimate_pct: float | None
    ci_low_pct: float | None
    ci_high_pct: float | None


@dataclass(frozen=True)
class AbOutcome:
    stopped: str  # why the blocks stopped
    states: tuple[KpiOutcome, ...]

    def to_meta(self) -> dict[str, Any]:
        return {
            "ab_result": {
                "stopped": self.stopped,
                "states": [
                    {
                        "comparison": s.comparison,
                        "kpi": s.kpi,
                        "verdict": s.verdict,
                        "blocks": s.blocks,
                        "estimate_pct": s.estimate_pct,
                        "ci_low_pct": s.ci_low_pct,
                        "ci_high_pct": s.ci_high_pct,
                    }
                    for s in self.states
                ],
            }
        }


def ab_outcome(run: RunInfo) -> AbOutcome | None:
    """An ab run's recorded outcome, None while it has none."""
    recorded = run.meta.get("ab_result")
    if not isinstance(recorded, Mapping):
        return None
    states: Sequence[Any] = recorded.get("states") or ()
    return AbOutcome(
        stopped=str(recorded.get("stopped", "")),
        states=tuple(
            KpiOutcome(
                comparison=str(s.get("comparison")),
                kpi=str(s.get("kpi")),
                verdict=str(s.get("verdict")),
                blocks=int(s.get("blocks") or 0),
                estimate_pct=s.get("estimate_pct"),
                ci_low_pct=s.get("ci_low_pct"),
                ci_high_pct=s.get("ci_high_pct"),
            )
            for s in states
            if isinstance(s, Mapping)
        ),
    )
