"""A block's task as it travels: the job a controller sends and a worker checks.

A job is data, never code: a plan's text and hash, a run, a block, an attempt.  It is JSON on
the broker and checked field by field on arrival.  `JOB_VERSION` changes whenever a field
changes meaning, so a worker of another iolab refuses, in one line, a job it would misread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

JOB_VERSION = 1
_JOB_FIELDS = {
    "v": int,
    "run_id": int,
    "block": int,
    "attempt": int,
    "plan_text": str,
    "plan_sha256": str,
    "plan_name": str,
    "seed": int,
}


class JobVersionError(ValueError):
    """A job made by an iolab with another job format (the controller or this host must be
    upgraded)."""


@dataclass(frozen=True)
class Job:
    run_id: int
    block: int
    attempt: int
    plan_text: str
    plan_sha256: str
    plan_name: str
    seed: int
    profile: str | None
    variants: tuple[str, ...] = ()  # only these variants' cases (a bisect's arms); (): all

    def to_json(self) -> dict[str, Any]:
        return {
            "variants": list(self.variants),
            "v": JOB_VERSION,
            "run_id": self.run_id,
            "block": self.block,
            "attempt": self.attempt,
            "plan_text": self.plan_text,
            "plan_sha256": self.plan_sha256,
            "plan_name": self.plan_name,
            "seed": self.seed,
            "profile": self.profile,
        }

    @property
    def title(self) -> str:
        return f"run {self.run_id} block {self.block} attempt {self.attempt}"


def parse_job(data: object) -> Job:
    """A task's payload checked field by field (it came over the network)."""
    if not isinstance(data, dict):
        raise ValueError("a job is a JSON object")
    version = data.get("v")
    if isinstance(version, int) and not isinstance(version, bool) and version != JOB_VERSION:
        raise JobVersionError(
            f"job version {version} is not this worker's {JOB_VERSION}: the controller and "
            "this host run different iolab releases; upgrade the older one"
        )
    for key, kind in _JOB_FIELDS.items():
        if not isinstance(data.get(key), kind) or isinstance(data.get(key), bool):
            raise ValueError(f"job field {key!r} is missing or not {kind.__name__}")
    profile = data.get("profile")
    if profile is not None and not isinstance(profile, str):
        raise ValueError("job field 'profile' is not text")
    variants = data.get("variants") or []
    if not isinstance(variants, list) or not all(isinstance(v, str) for v in variants):
        raise ValueError("job field 'variants' is not a list of names")
    return Job(
        data["run_id"],
        data["block"],
        data["attempt"],
        data["plan_text"],
        data["plan_sha256"],
        data["plan_name"],
        data["seed"],
        profile,
        tuple(variants),
    )
