"""Which hosts of a class can run a plan, judged from the facts each host registered.

The controller sends a block only to hosts that can run it, and says which before the first
block goes out; the worker checks the same rules again under its own host.toml (the facts
in the store are what the host said, the host.toml is what it has).  A host can run a plan
when it has every device the plan names as `{dev:NAME}`, designates every device path the
plan names, and meets every `requires:` name — by `provides` in its host.toml, or by the
target iolab builds (an md target meets `md`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Sequence

from iolab.plan.model import STACK_REQUIREMENTS, Plan, implied_requirements
from iolab.store.leases import HostRow

LINK_DIRS = ("/dev/disk/", "/dev/mapper/")
DEVICE_NAME = re.compile(r"\{dev:([A-Za-z0-9][A-Za-z0-9._-]*)\}")


def device_names(text: str) -> set[str]:
    """The `{dev:NAME}` names a plan's text uses."""
    return set(DEVICE_NAME.findall(text))


def unmet(plan: Plan, provides: Collection[str]) -> list[str]:
    """The plan's `requires:` names a host providing `provides` does not meet."""
    missing = []
    for name in sorted(plan.requires):
        if name in provides:
            continue
        built = name in STACK_REQUIREMENTS and all(
            name in implied_requirements(c.target) for c in plan.cases
        )
        if not built:
            missing.append(name)
    return missing


def why_not(plan: Plan, host: HostRow) -> str | None:
    """Why `host` (as it registered) cannot run `plan`, or None when it can."""
    names = sorted(device_names(plan.text) - set(host.device_names))
    if names:
        have = ", ".join(host.device_names) or "none"
        return f"no device named {', '.join(names)} (its [devices]: {have})"
    paths = sorted(
        {
            d
            for c in plan.cases
            if c.target.kind == "device"
            for d in c.target.devices
            if not DEVICE_NAME.fullmatch(d)
        }
    )
    # a link (/dev/disk/by-id/…) resolves on the host only: the host judges those
    foreign = [
        d for d in paths if os.path.normpath(d) not in host.devices and not d.startswith(LINK_DIRS)
    ]
    if foreign:
        return f"device {foreign[0]} is not designated there"
    missing = unmet(plan, host.provides)
    if missing:
        return f"does not provide {', '.join(missing)}"
    return None


def split(plan: Plan, hosts: Sequence[HostRow]) -> tuple[list[str], dict[str, str]]:
    """(the hosts that can run `plan`, why each other one cannot)."""
    able, unable = [], {}
    for host in hosts:
        why = why_not(plan, host)
        if why is None:
            able.append(host.name)
        else:
            unable[host.name] = why
    return able, unable
