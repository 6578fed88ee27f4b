"""Per-host effects and the host × variant interaction (iolab.stats.hosts): one host that
regressed alone is flagged; hosts that moved alike are not."""

from __future__ import annotations

import random

import pytest

from iolab.stats.hosts import host_strata


def _pairs(
    effects: dict[str, float], blocks: int, noise: float, seed: int
) -> dict[str, list[tuple[float, float]]]:
    rng = random.Random(seed)
    out: dict[str, list[tuple[float, float]]] = {}
    for host, effect in effects.items():
        for _ in range(blocks):
            a = 100 * (1 + rng.gauss(0, noise))
            out.setdefault(host, []).append((a, a * (1 + effect) * (1 + rng.gauss(0, noise))))
    return out


def test_a_host_that_regressed_alone_is_flagged() -> None:
    pairs = _pairs({"h1": 0.0, "h2": 0.0, "h3": -0.10}, blocks=8, noise=0.01, seed=1)
    strata = host_strata("write.iops", pairs, 0.05)
    assert strata.flagged and strata.p_interaction is not None and strata.p_interaction < 0.01
    by_host = {e.host: e for e in strata.effects}
    assert by_host["h3"].change_pct == pytest.approx(-10, abs=2)
    assert abs(by_host["h1"].change_pct or 0) < 2 and by_host["h1"].blocks == 8


def test_hosts_that_moved_alike_are_not_flagged() -> None:
    flagged = sum(
        host_strata("x", _pairs({"h1": -0.05, "h2": -0.05, "h3": -0.05}, 8, 0.02, s), 0.05).flagged
        for s in range(200)
    )
    assert flagged <= 20  # about alpha of the time (5% of 200 = 10)


def test_one_host_or_one_block_per_host_is_not_tested() -> None:
    assert host_strata("x", {"h1": [(1.0, 2.0), (1.0, 2.1)]}, 0.05).p_interaction is None
    one_each = {"h1": [(1.0, 2.0)], "h2": [(1.0, 1.0)]}
    strata = host_strata("x", one_each, 0.05)
    assert strata.p_interaction is None and not strata.flagged
