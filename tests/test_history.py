"""History, change points and the regression registry on imported real fio JSON results.

The series are made from a real fio 3.33 JSON output (tests/data): each copy gets its own
`timestamp` (one hour apart) and its throughput numbers scaled, then all are imported with
`iolab import` and read back with `iolab history` / `iolab regressions`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result

from iolab.cli.main import cli
from iolab.history.changepoints import detect
from iolab.history.series import version_key
from iolab.model.regression import NewRegression
from iolab.store import open_store
from iolab.store import registry as table
from store_backends import BACKENDS, location_for

SEQREAD = Path(__file__).parent / "data" / "fio-3.33" / "out" / "seqread.json"
START = 1_790_000_000  # 2026-09-21
_SCALED = ("iops", "iops_mean", "bw", "bw_bytes", "bw_mean", "io_bytes", "io_kbytes")


@pytest.fixture(params=BACKENDS)
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    yield from location_for(request.param, tmp_path)


def iolab(db: Path | str, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--db", str(db), *args], env={"COLUMNS": "250"})


def write_series(folder: Path, factors: list[float], order: list[int] | None = None) -> list[str]:
    """One fio JSON file per factor; file names in `order` so import order is not time order."""
    doc: dict[str, Any] = json.loads(SEQREAD.read_text())
    paths: list[str] = []
    for i in order or range(len(factors)):
        copy = json.loads(json.dumps(doc))
        copy["timestamp"] = START + 3600 * i
        copy["timestamp_ms"] = copy["timestamp"] * 1000
        copy["time"] = datetime.fromtimestamp(copy["timestamp"], UTC).strftime("%c")
        for job in copy["jobs"]:
            for ddir in ("read", "write", "trim"):
                for key in _SCALED:
                    if key in job.get(ddir, {}):
                        job[ddir][key] = job[ddir][key] * factors[i]
        path = folder / f"r{len(paths):03d}.json"
        path.write_text(json.dumps(copy))
        paths.append(str(path))
    return paths


def noisy(
    n: int, cv: float, seed: int, step_at: int | None = None, step: float = 0.0
) -> list[float]:
    rng = np.random.default_rng(seed)
    f = np.exp(rng.normal(0.0, cv, n))
    if step_at is not None:
        f[step_at:] *= 1.0 + step
    return [float(v) for v in f]


def test_a_step_is_one_change_point_and_one_open_entry(tmp_path: Path, location: str) -> None:
    db = location
    order = list(range(60))[::-1]  # imported newest first: history must order by timestamp
    files = write_series(tmp_path, noisy(60, 0.02, 7, step_at=40, step=-0.08), order)
    assert iolab(db, "import", *files, "--label", "nightly").exit_code == 0
    done = iolab(db, "history", "label:nightly", "--format", "json")  # default: the KPIs
    assert done.exit_code == 0, done.output
    body = json.loads(done.stdout)
    assert body["schema"] == "iolab-history/1"
    (series,) = body["series"]
    times = [p["time"] for p in series["points"]]
    assert times == sorted(times) and len(times) == 60
    (cp,) = series["change_points"]
    assert abs(cp["index"] - 40) <= 2
    assert cp["kind"] == "regression" and cp["p_value"] <= body["alpha"]
    assert cp["ci_low_pct"] < cp["change_pct"] < cp["ci_high_pct"]
    assert -11.0 < cp["change_pct"] < -5.0
    listed = json.loads(iolab(db, "regressions", "--format", "json").stdout)
    assert listed["schema"] == "iolab-regressions/1"
    (entry,) = listed["regressions"]
    assert entry["status"] == "open" and entry["metric"] == "read.iops"
    assert cp["regression_id"] == entry["id"]
    # the same history again: no second entry; read.bw_bytes steps too, but is no KPI of an
    # import's history (the same series as iops at one block size), so it opens none
    again = iolab(db, "history", "label:nightly", "--metric", "read.*")
    assert again.exit_code == 0 and again.stdout.count("regression at point") == 2
    assert len(json.loads(iolab(db, "regressions", "--format", "json").stdout)["regressions"]) == 1
    assert any(c in again.stdout for c in "▁▂▃▄▅▆▇█")

    # `fixed` needs evidence: refused without, and refused with the regressed runs
    refused = iolab(db, "regressions", "mark", str(entry["id"]), "fixed")
    assert refused.exit_code == 2 and refused.stdout == ""
    assert len(refused.stderr.strip().splitlines()) == 1
    for name, step in (("fix", 0.0), ("still", -0.08)):
        (tmp_path / name).mkdir()
        later = write_series(tmp_path / name, noisy(12, 0.02, 8, step_at=0, step=step))
        assert iolab(db, "import", *later, "--label", name).exit_code == 0
    still = iolab(db, "regressions", "mark", str(entry["id"]), "fixed", "--evidence", "label:still")
    assert still.exit_code == 2 and "not marked fixed" in still.stderr
    ok = iolab(
        db,
        "regressions",
        "mark",
        str(entry["id"]),
        "fixed",
        "--evidence",
        "label:fix",
        "--note",
        "revert merged",
    )
    assert ok.exit_code == 0, ok.stderr
    (entry,) = json.loads(iolab(db, "regressions", "--format", "json").stdout)["regressions"]
    assert [e["to"] for e in entry["log"]] == ["open", "fixed"]
    assert entry["log"][1]["note"] == "revert merged" and entry["log"][1]["evidence_run_id"]
    md = iolab(db, "regressions", "--format", "markdown").stdout
    assert "#regzbot title: read.iops" in md


@pytest.mark.parametrize("outlier", [None, 30])
def test_flat_series_and_a_single_outlier_give_nothing(tmp_path: Path, outlier: int | None) -> None:
    db = tmp_path / "h.db"
    factors = noisy(60, 0.02, 11)
    if outlier is not None:
        factors[outlier] *= 0.6
    assert iolab(db, "import", *write_series(tmp_path, factors), "--label", "flat").exit_code == 0
    body = json.loads(iolab(db, "history", "label:flat", "--format", "json").stdout)
    assert body["series"] and all(not s["change_points"] for s in body["series"])
    assert json.loads(iolab(db, "regressions", "--format", "json").stdout)["regressions"] == []


def test_permutation_p_includes_the_search() -> None:
    """On flat noise about alpha of the series show a change point; the t-test's p at the
    best cut (the p that ignores the search) is below alpha far more often."""
    from scipy.stats import ttest_ind

    hits = naive = 0
    for seed in range(60):
        values = noisy(40, 0.05, seed)
        hits += bool(detect(values))
        logs = np.log(values)
        naive += min(ttest_ind(logs[:k], logs[k:]).pvalue for k in range(5, 36)) <= 0.02
    assert hits <= 5  # alpha 0.02: 1.2 expected
    assert naive >= 3 * max(hits, 1)


def test_version_order() -> None:
    tags = ["6.10", "6.9", "6.10-rc1", "6.10.1", "5.15"]
    assert sorted(tags, key=version_key) == ["5.15", "6.9", "6.10-rc1", "6.10", "6.10.1"]


def test_registry_dedup_log_and_bad_input(location: str) -> None:
    with open_store(location) as store:
        run = store.create_run("lab", label="x")
        entry = NewRegression(
            metric="write.iops",
            case_key="c",
            case={"variant": "a"},
            dedup_key="k",
            origin="ab",
            introduced_run_id=run,
            aliases=("k2",),
        )
        rid, created = table.add(store, entry)
        # the same regression under its alias, or naming the first key as an alias
        again = NewRegression(
            metric="write.iops", case_key="c", case={}, dedup_key="k2", origin="history"
        )
        other = NewRegression(
            metric="write.iops",
            case_key="c",
            case={},
            dedup_key="k3",
            origin="bisect",
            aliases=("k",),
        )
        assert created and table.add(store, again) == (rid, False)
        assert table.add(store, other) == (rid, False)
        table.set_status(store, rid, "confirmed", note="seen twice")
        store.delete_run(run)  # the entry outlives its run
        (got,) = table.entries(store)
        assert got.status == "confirmed" and got.introduced_run_id is None
        assert [(e.old_status, e.new_status, e.note) for e in got.events] == [
            (None, "open", None),
            ("open", "confirmed", "seen twice"),
        ]
    assert iolab(location, "regressions", "mark", "99", "confirmed").exit_code == 2
    assert iolab(location, "history", "label:none", "--order", "size").exit_code == 2


def test_a_compare_regression_opens_one_entry(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    for name, step in (("base", 0.0), ("bad", -0.08)):
        (tmp_path / name).mkdir()
        files = write_series(tmp_path / name, noisy(12, 0.02, 3, step_at=0, step=step))
        assert iolab(db, "import", *files, "--label", name).exit_code == 0
    # a query records nothing; --record enters the regression, once however often it is run
    done = iolab(db, "compare", "label:base", "label:bad", "--metric", "read.iops")
    assert done.exit_code == 0 and "regression" in done.stdout, done.stderr
    assert json.loads(iolab(db, "regressions", "--format", "json").stdout)["regressions"] == []
    for _ in range(2):
        done = iolab(db, "compare", "label:base", "label:bad", "--metric", "read.iops", "--record")
        assert done.exit_code == 0, done.stderr
    (entry,) = json.loads(iolab(db, "regressions", "--format", "json").stdout)["regressions"]
    assert entry["origin"] == "compare" and entry["metric"] == "read.iops"
    assert entry["change_pct"] < -5.0
    # fixed: measured against the A side of the comparison
    assert (
        iolab(
            db, "regressions", "mark", str(entry["id"]), "fixed", "--evidence", "label:bad"
        ).exit_code
        == 2
    )
    fixed = iolab(db, "regressions", "mark", str(entry["id"]), "fixed", "--evidence", "label:base")
    assert fixed.exit_code == 0, fixed.stderr


def test_lab_runs_are_medians_ordered_by_version_tag(tmp_path: Path) -> None:
    """Lab runs (stored as the lab stores them) give one point each: the median of the run's
    samples with its interval; --order tag:kernel sorts 6.9 before 6.10; --by splits."""
    from datetime import timedelta

    from iolab.model.sample import Sample

    db = tmp_path / "lab.db"
    kernels = [f"6.{minor}" for minor in range(2, 16)]  # 6.2 … 6.15, stored out of order
    rng = np.random.default_rng(5)
    with open_store(str(db)) as store:
        for machine in ("vm1", "vm2"):
            for i, kernel in enumerate(reversed(kernels)):
                run = store.create_run(
                    "lab",
                    label="nightly",
                    host="box",
                    meta={"kpis": [{"metric": "write.iops", "direction": "higher"}]},
                    tags={"kernel": kernel, "machine": machine},
                )
                level = 1000.0 * (0.9 if int(kernel.split(".")[1]) >= 10 else 1.0)
                for block in range(7):
                    at = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=i, minutes=block)
                    value = level * float(np.exp(rng.normal(0, 0.01)))
                    store.add_sample(
                        Sample(
                            run_id=run,
                            variant="fsync",
                            cell={"writers": 16},
                            block=block,
                            metrics={"write.iops": value},
                            started_at=at,
                        )
                    )
                store.finish_run(run)
    done = iolab(
        db,
        "history",
        "label:nightly",
        "--order",
        "tag:kernel",
        "--by",
        "machine",
        "--format",
        "json",
    )
    assert done.exit_code == 0, done.stderr
    body = json.loads(done.stdout)
    assert [s["case"]["by"] for s in body["series"]] == [{"machine": "vm1"}, {"machine": "vm2"}]
    for series in body["series"]:
        points = series["points"]
        assert [p["tags"]["kernel"] for p in points] == kernels
        assert all(p["n"] == 7 and p["ci_low"] <= p["value"] <= p["ci_high"] for p in points)
        (cp,) = series["change_points"]
        assert points[cp["index"]]["tags"]["kernel"] == "6.10"
        assert cp["before"]["tags"]["kernel"] == "6.9"
    entries = json.loads(iolab(db, "regressions", "--format", "json").stdout)["regressions"]
    assert [e["commit_range"] for e in entries] == ["6.9..6.10", "6.9..6.10"]  # one per machine
    assert (
        "#regzbot introduced: 6.9..6.10" in iolab(db, "regressions", "--format", "markdown").stdout
    )
    # the same through iolab.api, typed
    from iolab import api

    h = api.history("label:nightly", db=str(db), order="tag:kernel", by=["machine"], record=False)
    assert [len(s.change_points) for s in h.series] == [1, 1]
    assert h.series[0].change_points[0].after.tags["kernel"] == "6.10"
    first = api.regressions(db=str(db))[0]
    marked = api.mark_regression(first.id, "invalid", db=str(db), note="a kernel config change")
    assert marked.status == "invalid" and marked.events[-1].note == "a kernel config change"
    still_open = [r.id for r in api.regressions(db=str(db), status=["open"])]
    assert len(still_open) == 1 and first.id not in still_open


def test_user_text_is_escaped(tmp_path: Path) -> None:
    from iolab.model.sample import Sample

    db = tmp_path / "esc.db"
    with open_store(str(db)) as store:
        for i in range(3):
            run = store.create_run("lab", label="x", tags={"machine": "vm\x1b[31m|1"})
            for block in range(3):
                at = datetime(2026, 1, 1 + i, tzinfo=UTC)
                store.add_sample(
                    Sample(
                        run_id=run,
                        variant="v|\x07",
                        block=block,
                        metrics={"write.iops": 100.0 + block},
                        started_at=at,
                    )
                )
            store.finish_run(run)
    for fmt in ("table", "markdown"):
        out = iolab(
            db, "history", "label:x", "--metric", "write.iops", "--by", "machine", "--format", fmt
        ).stdout
        assert "\x1b" not in out and "\x07" not in out and "\\x1b[31m" in out
        if fmt == "markdown":
            assert "v\\|" in out and "vm\\x1b[31m\\|1" in out


def _documented(schema: str) -> dict[str, Any]:
    """The example of `schema` that docs/history.md shows, parsed."""
    page = (Path(__file__).resolve().parent.parent / "docs" / "history.md").read_text()
    blocks = re.findall(r"^```json\n(.*?)^```", page, re.MULTILINE | re.DOTALL)
    (block,) = [b for b in blocks if f'"schema": "{schema}"' in b]
    found: dict[str, Any] = json.loads(block)
    return found


def test_the_json_docs_history_shows_has_the_keys_the_commands_write(tmp_path: Path) -> None:
    """docs/history.md's examples of both schemas name exactly the keys written, at every level."""
    db = tmp_path / "s.db"
    files = write_series(tmp_path, noisy(60, 0.02, 7, step_at=40, step=-0.08))
    assert iolab(db, "import", *files, "--label", "nightly").exit_code == 0
    history = json.loads(iolab(db, "history", "label:nightly", "--format", "json").stdout)
    doc = _documented("iolab-history/1")
    assert set(history) == set(doc)
    (series,), (shown,) = history["series"], doc["series"]
    assert set(series) == set(shown) and set(series["case"]) == set(shown["case"])
    assert set(series["points"][0]) == set(shown["points"][0])
    (cp,), (shown_cp,) = series["change_points"], shown["change_points"]
    assert set(cp) == set(shown_cp)
    listed = json.loads(iolab(db, "regressions", "--format", "json").stdout)
    doc = _documented("iolab-regressions/1")
    assert set(listed) == set(doc)
    (entry,), (shown_entry,) = listed["regressions"], doc["regressions"]
    assert set(entry) == set(shown_entry)
    assert set(entry["log"][0]) == set(shown_entry["log"][0])
