"""Every output format shows the figures the statistics computed, for samples with known
values in a temporary SQLite store.

The data are built so the answers are known without iolab:
- lab run, paired: B/A = 0.9 * exp(e) per block with e = ±0.001..±0.005 (symmetric), so the
  Hodges–Lehmann estimate of the log ratio is exactly log 0.9 (-10.00%), every ratio is
  below 1 and the exact two-sided signed-rank p for 10 pairs is 2/2^10 = 0.001953;
- imports, unpaired: 6 values 100..105 against 6 values 110..115 — complete separation,
  exact Mann–Whitney p = 2/C(12,6) = 0.002165.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from itertools import product
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result

from iolab.analysis.build import Options, by_report, pair_report
from iolab.analysis.select import parse_selector
from iolab.cli.main import cli
from iolab.model.result import Result as ToolResult
from iolab.model.sample import Sample
from iolab.report import FORMATS, RenderOptions, fmt, render
from iolab.report.lkp import lkp_number
from iolab.store import open_store

EPS = [-0.005, -0.004, -0.003, -0.002, -0.001, 0.001, 0.002, 0.003, 0.004, 0.005]
P_SIGNED_RANK_10 = 2 / 2**10
P_MWU_6_6 = 2 / math.comb(12, 6)
HIST_A = {1.0: 80, 2.0: 15, 4.0: 5}
HIST_B = {1.0: 20, 2.0: 30, 4.0: 50}
LAT_A = {1000.0: 50, 2000.0: 40, 10000.0: 10}
LAT_B = {1000.0: 10, 2000.0: 40, 20000.0: 50}
HIST_STEADY = {4096.0: 300, 16384.0: 100}  # mean 7168 on both sides


def base_iops(block: int) -> float:
    return 10000.0 * (1 + 0.05 * math.sin(block))


def make_lab_run(
    db: str, *, blocks: int = 10, factor: float = 0.9, cells: bool = False, steady: bool = False
) -> int:
    """A lab run with variants a (baseline) and b; optionally a matrix fs × writers."""
    with open_store(db) as store:
        run_id = store.create_run(
            "lab",
            meta={"kpis": [{"metric": "write.iops", "direction": "higher"}], "baseline": "a"},
        )
        grid = list(product(["ext4", "xfs"], ["1", "10"])) if cells else [None]
        for block in range(1, blocks + 1):
            for where in grid:
                cell = {"fs": where[0], "writers": where[1]} if where else {}
                scale = 1.0 if where is None or where[0] == "ext4" else 1.5
                a = base_iops(block) * scale
                ratio = factor * math.exp(EPS[(block - 1) % len(EPS)])
                for variant, value, handles, hist, lat in (
                    ("a", a, 67.0 + 0.1 * block, HIST_A, LAT_A),
                    ("b", a * ratio, 51.0 + 0.1 * block, HIST_B, LAT_B),
                ):
                    store.add_sample(
                        Sample(
                            run_id=run_id,
                            variant=variant,
                            cell=dict(cell),
                            block=block,
                            metrics={
                                "write.iops": value,
                                "jbd2.handles_per_txn": handles,
                                "write.io_bytes": 4096.0,  # constant: left out
                            },
                            histograms={
                                "hist.writepages": dict(hist),
                                "write.clat_ns": dict(lat),
                                **({"hist.rq_bytes": dict(HIST_STEADY)} if steady else {}),
                            },
                        )
                    )
        store.finish_run(run_id)
    return run_id


def make_imports(db: str, old: str = "old", new: str = "new") -> None:
    with open_store(db) as store:
        for label, values in ((old, range(100, 106)), (new, range(110, 116))):
            results = [
                ToolResult(
                    tool="fio",
                    format="fio-json",
                    source=f"{label}-{i}.json",
                    metrics={"write.iops": float(v), "write.bw_bytes": float(v) * 4096},
                )
                for i, v in enumerate(values)
            ]
            store.import_results(results, label, {"kernel": "6.1" if label == old else "6.2"})


@pytest.fixture
def db(tmp_path: Path) -> Iterator[str]:
    yield str(tmp_path / "store.db")


def iolab(db: str, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--db", db, *args])


def kpi_line(text: str, name: str = "write.iops") -> str:
    return next(line for line in text.splitlines() if name in line and "%" in line)


# ------------------------------------------------------------------------- the statistics


def test_paired_lab_run_known_answer(db: str) -> None:
    run = make_lab_run(db)
    with open_store(db) as store:
        report = pair_report(
            store, parse_selector(f"{run}:a"), parse_selector(f"{run}:b"), Options()
        )
    (group,) = report.groups
    assert group.paired_blocks == 10
    (kpi,) = group.comparison.kpis
    assert kpi.paired and kpi.n_pairs == 10 and kpi.n_a == kpi.n_b == 10
    assert kpi.change_pct == pytest.approx(-10.0, abs=1e-9)
    assert kpi.p_value == pytest.approx(P_SIGNED_RANK_10, rel=1e-6)
    assert kpi.verdict == "regression"
    assert kpi.ci_high_pct is not None and kpi.ci_high_pct < 0
    names = {m.name for m in group.comparison.metrics}
    assert "write.io_bytes" not in names  # the same constant on both sides
    handles = next(m for m in group.comparison.metrics if m.name == "jbd2.handles_per_txn")
    assert handles.verdict == "changed" and not handles.kpi
    (shift,) = group.comparison.histogram_shifts
    assert shift.verdict == "changed"
    assert [b.share_a for b in shift.buckets] == pytest.approx([0.80, 0.15, 0.05])
    assert [b.share_b for b in shift.buckets] == pytest.approx([0.20, 0.30, 0.50])
    (lat,) = group.latency
    rows = {r.percentile: r for r in lat.rows}
    assert (rows["p50"].a, rows["p50"].b) == (1000.0, 2000.0)
    assert (rows["p99"].a, rows["p99"].b) == (10000.0, 20000.0)
    assert rows["p99"].change_pct == pytest.approx(100.0)


def test_unpaired_imports_known_answer(db: str) -> None:
    make_imports(db)
    with open_store(db) as store:
        report = pair_report(
            store, parse_selector("label:old"), parse_selector("label:new"), Options()
        )
    comp = report.groups[0].comparison
    kpis = {m.name: m for m in comp.kpis}
    assert set(kpis) == {"write.iops", "write.bw_bytes"}  # imports: iops and bw are KPIs
    iops = kpis["write.iops"]
    assert not iops.paired and iops.n_a == iops.n_b == 6
    assert iops.p_value == pytest.approx(P_MWU_6_6, rel=1e-6)
    hl = np.median([math.log(b) - math.log(a) for a in range(100, 106) for b in range(110, 116)])
    assert iops.change_pct == pytest.approx(100 * (math.exp(hl) - 1), rel=1e-9)
    assert iops.verdict == "improvement"
    assert "compared unpaired" in " ".join(report.warnings)


# --------------------------------------------------------------------------- each format


@pytest.fixture
def lab_report(db: str) -> object:
    run = make_lab_run(db)
    with open_store(db) as store:
        return pair_report(store, parse_selector(f"{run}:a"), parse_selector(f"{run}:b"), Options())


def test_table_numbers(lab_report: object) -> None:
    text = render(lab_report, "table")  # type: ignore[arg-type]
    assert "\x1b[" not in text  # no colour unless asked for
    b_row = next(
        line for line in text.splitlines() if line.strip().startswith("B ") and "%" in line
    )
    assert "-10.0%" in b_row and "0.002" in b_row and "regression" in b_row
    assert re.search(r"B\s+10\s", b_row)  # n
    assert "jbd2.handles_per_txn: 67.55 → 51.55" in text  # medians, mechanism evidence
    assert "hist.writepages: changed" in text
    shift_row = next(line for line in text.splitlines() if line.strip().startswith("4 "))
    assert "5.0%" in shift_row and "50.0%" in shift_row and "+45.0" in shift_row
    p99 = next(line for line in text.splitlines() if line.strip().startswith("p99 "))
    assert "10µs" in p99 and "20µs" in p99 and "+100.0%" in p99


def test_table_colour_only_when_asked(lab_report: object) -> None:
    coloured = render(lab_report, "table", RenderOptions(color=True))  # type: ignore[arg-type]
    assert "\x1b[" in coloured


def test_lkp_numbers(lab_report: object) -> None:
    text = render(lab_report, "lkp")  # type: ignore[arg-type]
    lines = text.splitlines()
    assert "         %stddev     %change         %stddev" in lines
    row = kpi_line(text)
    mean_a = float(np.mean([base_iops(b) for b in range(1, 11)]))
    # base ±%stddev, %change, new ±%stddev, metric — at LKP's fixed columns
    assert row[:10].strip() == lkp_number(mean_a)
    assert row[16:27].strip() == "-10.0%"
    assert row.endswith("  write.iops")
    cv = float(np.std([base_iops(b) for b in range(1, 11)], ddof=1)) / mean_a
    assert row[10:16] == f" ±{round(100 * cv):3d}%"
    assert "write.iops: regression, change -10.0%" in text
    assert "n=10+10" in text


def test_lkp_number_style() -> None:
    assert lkp_number(138055.4) == "138055"
    assert lkp_number(0.19) == "0.19"
    assert lkp_number(114500000.0) == "1.145e+08"


def test_benchstat_numbers(lab_report: object) -> None:
    text = render(lab_report, "benchstat")  # type: ignore[arg-type]
    row = kpi_line(text)
    assert "-10.00% (p=0.002 n=10)" in row
    assert "│" in text and "vs base" in text
    # the ± is the median CI half-width relative to the median: finite with 10 samples
    assert re.search(r"± \d+%", row)


def test_benchstat_tilde_when_not_significant(db: str) -> None:
    run = make_lab_run(db, blocks=4)
    with open_store(db) as store:
        report = pair_report(
            store, parse_selector(f"{run}:a"), parse_selector(f"{run}:b"), Options()
        )
    kpi = report.groups[0].comparison.kpis[0]
    assert kpi.p_value == pytest.approx(2 / 2**4)  # 4 pairs: the smallest exact p is 2/16
    text = render(report, "benchstat")
    row = next(line for line in text.splitlines() if line.startswith("write.iops"))
    assert f"~ (p={fmt.p_value(kpi.p_adjusted)} n=4)" in row  # the p the verdict used
    assert "± ∞" in row


def test_markdown_numbers(lab_report: object) -> None:
    text = render(lab_report, "markdown")  # type: ignore[arg-type]
    lines = text.splitlines()
    assert lines[1] == "=" * len(lines[0])
    b_row = next(line for line in lines if line.startswith("|") and "| B " in line)
    cells = [c.strip() for c in b_row.strip("|").split("|")]
    assert cells[2] == "10" and cells[7] == "-10.0%" and cells[9] == "0.002"
    assert cells[10] == "regression"
    tables = [line for line in lines if line.startswith("|")]
    # every row of one table has the same width: aligned in a fixed-width font
    assert len({len(line) for line in tables[:4]}) == 1


def test_the_json_keys_are_the_ones_docs_compare_lists(lab_report: object) -> None:
    """docs/compare.md's `--format json` section: the report's keys are its table's, and every
    key of a group, a metric, its sides, a histogram shift and a latency row is named there."""
    page = (Path(__file__).resolve().parent.parent / "docs" / "compare.md").read_text()
    section = page.split("### `--format json`")[1].split("\n## ")[0]
    table = re.findall(r"^\| (`[^|]*) \|", section, re.MULTILINE)
    top = {key for cell in table for key in re.findall(r"`([a-z_]+)(?:\[\])?`", cell)}
    named = set(re.findall(r"`([a-z_]+)(?:\[\])?`", section))
    data = json.loads(render(lab_report, "json"))  # type: ignore[arg-type]
    assert set(data) == top - {"iolab"}
    group = data["groups"][0]
    rows = [
        group,
        *group["metrics"],
        *(m["a"] for m in group["metrics"]),
        *group["histogram_shifts"],
        *(b for s in group["histogram_shifts"] for b in s["buckets"]),
        *group["latency"],
        *(p for x in group["latency"] for p in x["percentiles"]),
    ]
    assert len(rows) > 5
    assert set().union(*rows) <= named, set().union(*rows) - named


def test_json_schema_and_numbers(lab_report: object) -> None:
    data = json.loads(render(lab_report, "json"))  # type: ignore[arg-type]
    assert data["schema"] == "iolab-compare/1"
    assert data["ci_exit_code"] == 10
    metrics = data["groups"][0]["metrics"]
    for m in metrics:
        for key in (
            "name",
            "kpi",
            "verdict",
            "change_pct",
            "ci_low_pct",
            "ci_high_pct",
            "p_value",
            "n_a",
            "n_b",
        ):
            assert key in m
        assert m["verdict"] in ("regression", "improvement", "no change", "inconclusive", "changed")
    kpi = next(m for m in metrics if m["kpi"])
    assert kpi["name"] == "write.iops" and kpi["verdict"] == "regression"
    assert kpi["change_pct"] == pytest.approx(-10.0)
    assert kpi["p_value"] == pytest.approx(P_SIGNED_RANK_10, rel=1e-6)
    assert kpi["n_a"] == kpi["n_b"] == 10 and kpi["paired"] is True
    assert kpi["ci_low_pct"] <= kpi["change_pct"] <= kpi["ci_high_pct"]
    handles = next(m for m in metrics if m["name"] == "jbd2.handles_per_txn")
    assert handles["kpi"] is False and handles["verdict"] == "changed"
    shift = data["groups"][0]["histogram_shifts"][0]
    assert shift["name"] == "hist.writepages"
    assert [b["count_b"] for b in shift["buckets"]] == [200, 300, 500]
    lat = data["groups"][0]["latency"][0]
    p99 = next(p for p in lat["percentiles"] if p["percentile"] == "p99")
    assert (p99["a"], p99["b"]) == (10000.0, 20000.0)


def test_every_format_is_registered() -> None:
    assert set(FORMATS) == {"table", "lkp", "benchstat", "markdown", "json", "brief"}


def test_brief_is_the_answer_and_what_moved(db: str) -> None:
    """`--format brief` (make demo): the KPI verdict with its interval, then only the
    evidence that moved, A → B, and a count of what did not."""
    run = make_lab_run(db)
    done = iolab(db, "compare", str(run), "--format", "brief")
    assert done.exit_code == 0, done.stderr
    lines = done.stdout.splitlines()
    assert re.fullmatch(
        r"b vs a: write\.iops -[\d.]+% \[-[\d.]+%, -[\d.]+%\] from 10 pairs: regression",
        lines[0],
    ), lines[0]
    assert lines[1] == "what moved after the joint correction (median per sample, a → b):"
    assert (
        "  (corrected by Westfall–Young step-down max-T over all 1,024 joint sign flips of "
        "the blocks, table-wide family-wise error ≤ 0.05 with the KPIs)"
    ) in lines
    moved = [line.split()[0] for line in lines[2:] if line.startswith("  ") and "→" in line]
    assert moved[0] == "jbd2.handles_per_txn" and "hist.writepages" in moved
    assert "write.io_bytes" not in done.stdout  # the same constant on both sides
    table = iolab(db, "compare", str(run)).stdout
    assert "jbd2.handles_per_txn" in table and len(done.stdout) < len(table) / 3


def test_brief_says_not_known_yet_with_the_blocks_it_needs() -> None:
    """After `iolab ab` stopped undecided: "not known yet — N more blocks"."""
    from iolab.model.metrics import Direction
    from iolab.report.model import Group, Report
    from iolab.stats import compare
    from iolab.stats.types import MetricInput, SequentialState

    comparison = compare([MetricInput("write.iops", [100.0, 103.0], [101.0, 99.0], kpi=True)])
    state = SequentialState(
        name="write.iops",
        direction=Direction.HIGHER,
        n_blocks=12,
        verdict="inconclusive",
        done=True,
        estimate_pct=0.83,
        ci_low_pct=-17.1,
        ci_high_pct=17.7,
        e_value=1.0,
        e_value_equivalence=0.4,
        alpha=0.05,
        margin_pct=1.0,
        runs_needed=231,
        reason="time budget of 170 s spent",
    )
    group = Group("fsync", "fdatasync", {}, comparison, sequential=(state,))
    report = Report("A", "B", (group,), 0.05, 1.0, sequential=True)
    first = render(report, "brief").splitlines()[0]
    assert first.startswith("fdatasync vs fsync: write.iops ")
    assert first.endswith(
        "after 12 blocks: not known yet — 231 more blocks (time budget of 170 s spent)"
    )


def test_brief_shows_a_sequence_side_at_the_searched_edge_as_unbounded() -> None:
    """After `iolab ab` decided early: the confidence sequence's upper side still sits at the
    edge of the range it searches, which was never measured: "≥+300.0%", as the progress
    lines and the sequential table show it, not a closed "+300.0%"."""
    from dataclasses import replace

    from iolab.model.metrics import Direction
    from iolab.report.model import Group, Report
    from iolab.stats import compare
    from iolab.stats.sequential import INTERVAL_EDGE_LOG
    from iolab.stats.types import MetricInput, SequentialState

    edge = 100 * math.expm1(INTERVAL_EDGE_LOG)
    comparison = compare([MetricInput("write.iops", [100.0, 103.0], [161.0, 159.0], kpi=True)])
    kpi = replace(comparison.metrics[0], ci_low_pct=12.0, ci_high_pct=edge, verdict="improvement")
    comparison = replace(comparison, metrics=(kpi,))
    state = SequentialState(
        name="write.iops",
        direction=Direction.HIGHER,
        n_blocks=9,
        verdict="improvement",
        done=True,
        estimate_pct=60.4,
        ci_low_pct=12.0,
        ci_high_pct=edge,
        e_value=24.0,
        e_value_equivalence=0.1,
        alpha=0.05,
        margin_pct=1.0,
        runs_needed=None,
        reason="evidence 24 >= 20",
    )
    group = Group("fsync", "fdatasync", {}, comparison, sequential=(state,))
    report = Report("A", "B", (group,), 0.05, 1.0, sequential=True)
    first = render(report, "brief").splitlines()[0]
    assert first.startswith("fdatasync vs fsync: write.iops +"), first
    assert first.endswith(" [+12.0%, ≥+300.0%]: improvement, decided after 9 blocks"), first
    assert "[+12.0%, ≥+300.0%]" in render(report, "table")


def test_brief_counts_what_moved_only_before_the_correction_apart() -> None:
    """After an `ab` that decided in 9 blocks, no secondary metric can pass a per-metric
    Holm correction (9 pairs: p >= 1/256 each, times 33 tests); counters that fell 200-fold
    are then listed apart, largest change first, not counted among those "not shown to
    move".  The joint correction (the default) lets all 30 through: they fell in every
    block, which 2 of the 512 joint sign flips can match."""
    from iolab.report.model import Group, Report
    from iolab.stats import compare
    from iolab.stats.types import MetricInput

    blocks: list[str | int] = list(range(9))

    def pair(name: str, a: list[float], b: list[float], kpi: bool = False) -> MetricInput:
        return MetricInput(name, a, b, kpi=kpi, blocks_a=blocks, blocks_b=blocks)

    kpi = pair("write.iops", [100.0 + i for i in range(9)], [150.0 + i for i in range(9)], True)
    fell = [
        pair(f"jbd2.c{j:02d}", [1000.0 + 10 * i + j for i in range(9)], [1.0 + i for i in range(9)])
        for j in range(30)
    ]
    flat = [
        pair(f"vmstat.q{j}", [5.0 + i % 3 for i in range(9)], [5.0 + (i + 1) % 3 for i in range(9)])
        for j in range(3)
    ]
    joint = compare([kpi, *fell, *flat])
    assert [m.verdict for m in joint.secondary] == ["changed"] * 30 + ["inconclusive"] * 3
    comparison = compare([kpi, *fell, *flat], correction="holm-marginal")
    assert all(m.p_value is not None and m.p_value < 0.05 for m in comparison.secondary[:30])
    assert not any(
        m.verdict in ("regression", "improvement", "changed") for m in comparison.secondary
    )
    report = Report("A", "B", (Group("a", "b", {}, comparison),), 0.05, 1.0)
    assert render(report, "brief").splitlines()[1:] == [
        "no secondary metric or histogram moved significantly",
        "  (corrected by Holm, table-wide family-wise error ≤ 0.05 with the KPIs)",
        "at p ≤ 0.05 on their own, not after the correction for the table's tests (a → b):",
        *(f"  jbd2.c{j}  1.0{j + 40}k → 5   (-99.6%)" for j in range(29, 20, -1)),
        "  jbd2.c20  1.06k → 5   (-99.6%)",
        "  … and 20 more",
        # the three vmstat.q are equal in every sample: one row, which names the other two
        "  (1 other metric(s) and histogram(s) not shown to move)",
    ]


def test_brief_lists_a_change_past_minus_100_pct_first() -> None:
    """Values <= 0 are compared on the raw scale, where B can fall past -100% of A; such a
    metric, significant only before the correction, is the largest change (it once raised
    "math domain error" while being sorted)."""
    from iolab.report.model import Group, Report
    from iolab.stats import compare
    from iolab.stats.types import MetricInput

    blocks: list[str | int] = list(range(9))

    def pair(name: str, a: list[float], b: list[float], kpi: bool = False) -> MetricInput:
        return MetricInput(name, a, b, kpi=kpi, blocks_a=blocks, blocks_b=blocks)

    kpi = pair("write.iops", [100.0 + i for i in range(9)], [150.0 + i for i in range(9)], True)
    fell = [
        pair(f"vmstat.c{j:02d}", [100.0 + i + j for i in range(9)], [50.0] * 9) for j in range(20)
    ]
    crossed = pair("vmstat.delta", [1.0 + i for i in range(9)], [-20.0 - i for i in range(9)])
    comparison = compare([kpi, *fell, crossed], correction="holm-marginal")
    row = next(m for m in comparison.metrics if m.name == "vmstat.delta")
    assert row.change_pct is not None and row.change_pct < -100 and row.verdict == "inconclusive"
    report = Report("A", "B", (Group("a", "b", {}, comparison),), 0.05, 1.0)
    lines = render(report, "brief").splitlines()
    assert lines[3].startswith("at p ≤ 0.05 on their own"), lines
    assert lines[4].startswith("  vmstat.delta "), lines


# ------------------------------------------------------------------------- --by and cells


def test_by_variant_one_line_per_cell(db: str) -> None:
    run = make_lab_run(db, cells=True)
    with open_store(db) as store:
        report = by_report(store, parse_selector(f"run:{run}"), "variant", None, Options())
    assert len(report.groups) == 4
    assert {tuple(g.cell.items()) for g in report.groups} == {
        (("fs", f), ("writers", w)) for f in ("ext4", "xfs") for w in ("1", "10")
    }
    text = render(report, "table")
    lines = [line for line in text.splitlines() if "b vs a" in line and "write.iops" in line]
    assert len(lines) == 4
    assert all("-10.0%" in line and "regression" in line for line in lines)
    data = json.loads(render(report, "json"))
    assert [g["metrics"][0]["change_pct"] for g in data["groups"]] == pytest.approx([-10.0] * 4)


def test_by_dimension(db: str) -> None:
    run = make_lab_run(db, cells=True)
    with open_store(db) as store:
        report = by_report(store, parse_selector(f"run:{run}"), "fs", None, Options())
    # xfs against ext4, per variant and writers: A values are 1.5x on xfs
    assert len(report.groups) == 4
    for g in report.groups:
        assert (g.a_name, g.b_name) == ("ext4", "xfs")
        kpi = g.comparison.kpis[0]
        assert kpi.change_pct == pytest.approx(50.0) and kpi.verdict == "improvement"


def test_pair_of_cells_compares_the_remaining_cells(db: str) -> None:
    run = make_lab_run(db, cells=True)
    with open_store(db) as store:
        report = pair_report(
            store, parse_selector(f"{run}:a/fs=ext4"), parse_selector(f"{run}:a/fs=xfs"), Options()
        )
    assert sorted(g.cell["writers"] for g in report.groups) == ["1", "10"]
    assert all(g.comparison.kpis[0].change_pct == pytest.approx(50.0) for g in report.groups)


# --------------------------------------------------------------------------- the CLI


def test_cli_formats_and_ci_exit_codes(db: str) -> None:
    run = make_lab_run(db)
    done = iolab(db, "compare", f"{run}:a", f"{run}:b", "--ci")
    assert done.exit_code == 10, done.output
    assert "-10.0%" in done.stdout
    done = iolab(db, "compare", f"{run}:b", f"{run}:a", "--ci", "--format", "json")
    assert done.exit_code == 0  # the other way round: an improvement
    kpi = json.loads(done.stdout)["groups"][0]["metrics"][0]
    assert kpi["verdict"] == "improvement"
    assert kpi["change_pct"] == pytest.approx(100 * (1 / 0.9 - 1))
    # without --ci the verdict does not change the exit status
    assert iolab(db, "compare", f"{run}:a", f"{run}:b").exit_code == 0


def test_cli_inconclusive_exit_11(db: str) -> None:
    run = make_lab_run(db, blocks=3)
    done = iolab(db, "compare", str(run), "--ci", "--format", "lkp")
    assert done.exit_code == 11, done.output
    assert "inconclusive" in done.stdout


def test_cli_ci_with_a_metric_that_leaves_no_kpi_is_a_usage_error(db: str) -> None:
    """`--ci --metric 'jbd2.*'` compares no KPI: nothing to judge is exit 2, not 11."""
    run = make_lab_run(db)
    done = iolab(db, "compare", f"{run}:a", f"{run}:b", "--ci", "--metric", "jbd2.*")
    assert done.exit_code == 2, done.output
    assert done.stdout == "" and "matches none of them" in done.stderr
    # the same selection without --ci is a plain comparison of those metrics
    done = iolab(db, "compare", f"{run}:a", f"{run}:b", "--metric", "jbd2.*")
    assert done.exit_code == 0 and "jbd2.handles_per_txn" in done.stdout
    # with a KPI among the matches --ci judges it as before
    done = iolab(db, "compare", f"{run}:a", f"{run}:b", "--ci", "--metric", "write.*")
    assert done.exit_code == 10, done.output


def test_cli_output_file_holds_what_stdout_would(db: str, tmp_path: Path) -> None:
    run = make_lab_run(db)
    shown = iolab(db, "compare", f"{run}:a", f"{run}:b", "--format", "json", "--ci")
    out = tmp_path / "cmp.json"
    done = iolab(db, "compare", f"{run}:a", f"{run}:b", "--format", "json", "--ci", "-o", str(out))
    assert done.exit_code == shown.exit_code == 10 and done.stdout == ""
    assert json.loads(out.read_text()) == json.loads(shown.stdout)
    page = tmp_path / "r.html"
    old = tmp_path / "old.html"
    assert iolab(db, "report", f"{run}:a", f"{run}:b", "-o", str(page)).exit_code == 0
    assert iolab(db, "report", f"{run}:a", f"{run}:b", "--html", str(old)).exit_code == 0
    assert page.read_text().startswith("<!DOCTYPE html>") and old.stat().st_size > 0


def test_cli_margin_gives_no_change(db: str) -> None:
    run = make_lab_run(db, factor=1.0)
    done = iolab(
        db,
        "compare",
        f"run:{run}/variant=a",
        f"run:{run}/variant=b",
        "--margin",
        "2",
        "--ci",
        "--format",
        "json",
    )
    kpi = json.loads(done.stdout)["groups"][0]["metrics"][0]
    assert kpi["verdict"] == "no change" and abs(kpi["change_pct"]) < 0.01
    assert done.exit_code == 0


def test_cli_metric_glob(db: str) -> None:
    run = make_lab_run(db)
    done = iolab(db, "compare", f"{run}:a", f"{run}:b", "--metric", "jbd2.*", "--format", "json")
    names = [m["name"] for m in json.loads(done.stdout)["groups"][0]["metrics"]]
    assert names == ["jbd2.handles_per_txn"]


def test_cli_imports_by_label_and_tag(db: str) -> None:
    make_imports(db)
    done = iolab(db, "compare", "label:old", "tag:kernel=6.2", "--format", "benchstat")
    assert done.exit_code == 0, done.output
    with open_store(db) as store:
        report = pair_report(
            store, parse_selector("label:old"), parse_selector("tag:kernel=6.2"), Options()
        )
    iops = next(m for m in report.groups[0].comparison.kpis if m.name == "write.iops")
    assert iops.p_value == pytest.approx(P_MWU_6_6, rel=1e-6)
    row = kpi_line(done.stdout)
    assert f"{iops.change_pct:+.2f}% (p={fmt.p_value(iops.p_adjusted)} n=6)" in row


def test_unshifted_histogram_is_named_as_evidence(db: str) -> None:
    """A mechanism that did not move is shown too (one line), not hidden behind --all."""
    run = make_lab_run(db, steady=True)
    for fmt_name in ("table", "markdown"):
        done = iolab(db, "compare", f"{run}:a", f"{run}:b", "--format", fmt_name)
        assert done.exit_code == 0, done.output
        line = next(x for x in done.stdout.splitlines() if "hist.rq_bytes:" in x)
        assert "mean 7168 → 7168, 0.0% of events moved (p adj 1.000, 10 vs 10 runs)" in line
        assert "hist.writepages: changed" in done.stdout


def test_cli_labels_holding_a_slash(db: str) -> None:
    """Regression: a label with `/` could not be selected; double quotes keep it one term."""
    make_imports(db, old="v5.4/ext4", new="v5.10/ext4")
    done = iolab(db, "compare", 'label:"v5.4/ext4"', 'label:"v5.10/ext4"', "--format", "json")
    assert done.exit_code == 0, done.output
    kpi = next(m for m in json.loads(done.stdout)["groups"][0]["metrics"] if m["kpi"])
    assert (kpi["n_a"], kpi["n_b"], kpi["verdict"]) == (6, 6, "improvement")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["run:abc", "1:b"], "not a number"),
        (["1:a", "label:nope"], "selects no samples"),
        (["99:a", "1:b"], "no run 99"),
        (["1:zz", "1:b"], "variants: a, b"),
        (["1:a", "fs=xfs"], "names no run, label or tag"),
        (["1:a//x", "1:b"], "empty term"),
        (["1", "1:b"], "mixes variants"),
        (["1:a", "1:b", "--by", "fs"], "one selector"),
        (["1", "--by", "nodim"], "no matrix dimension 'nodim'"),
        (["1:a", "1:b", "--alpha", "0.7"], "--alpha"),
    ],
)
def test_bad_selectors_one_line_exit_2(db: str, args: list[str], fragment: str) -> None:
    make_lab_run(db, blocks=3)
    done = iolab(db, "compare", *args)
    assert done.exit_code == 2, done.output
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("iolab: "), done.stderr
    assert fragment in lines[0]


def test_many_exact_buckets_are_shown_in_power_of_two_ranges() -> None:
    """jbd2 handles per transaction has one exact bucket per value seen (37 rows on example
    (a)); the display merges them, the counts and shares stay exact."""
    from iolab.report.layout import MAX_BUCKET_ROWS, display_buckets
    from iolab.stats.types import HistogramBucket

    exact = [HistogramBucket("1", 900, 0, 0.9, 0.0), HistogramBucket("3", 100, 0, 0.1, 0.0)]
    exact += [HistogramBucket(str(900 + 5 * i), 0, 1, 0.0, 0.05) for i in range(20)]
    shown = display_buckets(exact)
    assert [(b.bucket, b.count_a, b.count_b) for b in shown] == [
        ("1", 900, 0),
        ("3", 100, 0),
        ("512-1023", 0, 20),
    ]
    assert shown[2].share_b == pytest.approx(1.0)
    few = exact[:MAX_BUCKET_ROWS]
    assert display_buckets(few) == few
    ranges = [
        HistogramBucket(f"{2**k}-{2 ** (k + 1) - 1}", k + 1, 1, 0.01, 0.01) for k in range(20)
    ]
    assert display_buckets(ranges) == ranges  # already ranges: left as the monitor named them
    assert fmt.p_value(0.0) == "<1e-300" and fmt.p_value(2e-5) == "2.0e-05"


def test_per_group_rates_of_imports_are_kpis(db: str) -> None:
    """Imports of a job file whose stonewalled groups both wrote carry group<N>.write.iops
    (never a summed write.iops): those are the KPIs, with the metric table's direction."""
    with open_store(db) as store:
        for label, base in (("old", 100.0), ("new", 120.0)):
            results = [
                ToolResult(
                    tool="fio",
                    format="fio-json",
                    source=f"{label}-{i}.json",
                    metrics={
                        "group0.write.iops": base + i,
                        "group1.write.iops": 2 * base + i,
                        "group1.write.clat_ns.mean": 1000.0 + i,
                    },
                )
                for i in range(6)
            ]
            store.import_results(results, label, {})
    done = iolab(db, "compare", "label:old", "label:new", "--format", "json")
    assert done.exit_code == 0, done.output
    metrics = {m["name"]: m for m in json.loads(done.stdout)["groups"][0]["metrics"]}
    assert metrics["group0.write.iops"]["kpi"] and metrics["group1.write.iops"]["kpi"]
    assert metrics["group0.write.iops"]["verdict"] == "improvement"
    assert metrics["group1.write.iops"]["direction"] == "higher"
    assert not metrics["group1.write.clat_ns.mean"]["kpi"]


def test_one_device_read_by_two_monitors_shows_once() -> None:
    """fio's disk.loop0.X and the diskstats monitor's counter for the same thing are one
    row (the monitor's, naming fio's) when both moved alike; when their verdicts differ both
    stay, since they are not equal numbers."""
    from iolab.analysis.build import one_device_once
    from iolab.report.model import Group, Report
    from iolab.stats import compare
    from iolab.stats.types import MetricInput

    blocks: list[str | int] = list(range(9))

    def pair(name: str, a: list[float], b: list[float], kpi: bool = False) -> MetricInput:
        return MetricInput(name, a, b, kpi=kpi, blocks_a=blocks, blocks_b=blocks)

    rise = [500.0 + 7 * i for i in range(9)], [90_000.0 + 500 * (i % 4) for i in range(9)]
    items = [
        pair("write.iops", [100.0 + i for i in range(9)], [50.0 + i for i in range(9)], True),
        pair("disk.loop0.write_merges", *rise),
        pair("diskstats.loop0.write_merges", [v * 1.05 + 1 for v in rise[0]], rise[1]),
        pair(
            "disk.loop0.util_pct",
            [40.0 + i % 3 for i in range(9)],
            [41.0 - i % 3 for i in range(9)],
        ),
        pair(
            "diskstats.loop0.util_pct", [30.0 + i for i in range(9)], [90.0 - i for i in range(9)]
        ),
    ]
    comparison = one_device_once(compare(items))
    rows = {m.name: m for m in comparison.metrics}
    assert rows["disk.loop0.write_merges"].alias_of == "diskstats.loop0.write_merges"
    assert rows["diskstats.loop0.write_merges"].aliases == ("disk.loop0.write_merges",)
    assert rows["disk.loop0.util_pct"].alias_of is None  # inconclusive beside "changed"
    report = Report("A", "B", (Group("a", "b", {}, comparison),), 0.05, 1.0)
    brief = render(report, "brief")
    assert "diskstats.loop0.write_merges" in brief and "= disk.loop0.write_merges" in brief
    assert "  disk.loop0.write_merges" not in brief
    table = render(report, "table", RenderOptions(show_all=True))
    assert "diskstats.loop0.write_merges (= disk.loop0.write_merges)" in table
