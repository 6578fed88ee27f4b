"""`iolab compare` of a fleet run shows each host's effect and the host × variant
interaction: a run whose blocks ran on three hosts, one of which regressed alone (a planted
−10%), is flagged "differs by host" with that host's change; the same run without the
planted effect reads "alike".  The store is a real one written as a fleet's workers write
it (each block on one host); the statistics are iolab.stats.hosts."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from iolab.model.sample import Sample
from iolab.store import open_store

HOSTS = ("ssd-01", "ssd-02", "ssd-03")
BLOCKS = 12  # 4 a host


def fleet_run(db: Path, planted: dict[str, float], seed: int) -> int:
    """A finished run of variants base/new, block b on host b % 3, `planted` host → effect
    of new over base (0.01 noise a sample)."""
    rng = random.Random(seed)
    with open_store(str(db)) as store:
        run_id = store.create_run("lab", label="fleet", meta={"kpis": ["write.iops"]})
        for block in range(1, BLOCKS + 1):
            host = HOSTS[block % len(HOSTS)]
            level = 1000 * (1 + rng.gauss(0, 0.05))  # hosts and blocks differ in level
            for position, variant in enumerate(("base", "new")):
                effect = 1 + planted.get(host, 0.0) if variant == "new" else 1.0
                value = level * effect * (1 + rng.gauss(0, 0.01))
                store.add_sample(
                    Sample(
                        run_id=run_id,
                        variant=variant,
                        cell={},
                        block=block,
                        position=position,
                        metrics={"write.iops": value},
                        host=host,
                    )
                )
        store.finish_run(run_id, "finished")
    return run_id


def compare(db: Path, run_id: int, *fmt: str) -> subprocess.CompletedProcess[str]:
    selectors = [f"{run_id}:base", f"{run_id}:new"]
    done = subprocess.run(
        [sys.executable, "-m", "iolab", "--db", str(db), "compare", *selectors, *fmt],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 1), done.stderr
    return done


def hosts_of(db: Path, run_id: int) -> dict[str, Any]:
    groups = json.loads(compare(db, run_id, "--format", "json").stdout)["groups"]
    assert len(groups) == 1
    (strata,) = groups[0]["hosts"]
    assert strata["metric"] == "write.iops"
    return dict(strata)


def test_a_host_that_regressed_alone_is_shown(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    run_id = fleet_run(db, {"ssd-02": -0.10}, seed=1)
    strata = hosts_of(db, run_id)
    assert strata["flagged"] is True
    effects = {e["host"]: e for e in strata["effects"]}
    assert set(effects) == set(HOSTS) and all(e["blocks"] == 4 for e in effects.values())
    assert effects["ssd-02"]["change_pct"] == pytest.approx(-10, abs=2.5)
    assert abs(effects["ssd-01"]["change_pct"]) < 2.5
    text = compare(db, run_id).stdout
    assert f"per host (host × {run_id}:new-vs-{run_id}:base interaction" in text
    row = next(line for line in text.splitlines() if "ssd-02" in line)
    assert "-10." in row or "-9." in row, row
    assert "differs by host (p " in text


def test_hosts_that_moved_alike_read_alike(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    run_id = fleet_run(db, {h: -0.10 for h in HOSTS}, seed=1)
    strata = hosts_of(db, run_id)
    assert strata["flagged"] is False and strata["p_interaction"] is not None
    assert "alike (p" in compare(db, run_id).stdout
