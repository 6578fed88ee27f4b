"""Family-wise false alarms and power of the joint correction (step-down max-T) against Holm,
on a recorded evidence table: real lab samples with every metric the monitors recorded.

Usage:  .venv/bin/python bench/sim_maxt.py [DATA.csv] [--blocks 6 9 12 20] [--reps 400]
            [--power-reps 200] [--seed 1] [--out FILE]
        .venv/bin/python bench/sim_maxt.py --demo DB --run N     # max-T, min-P, Holm on a run

DATA.csv (default bench/data/ext4-data-journal-ordered-lab.csv) holds one variant's samples
in run order, one column per metric, write.iops (the KPI) last.  Each simulated comparison
takes 2n consecutive samples from a random start (circularly), pairs them into n blocks as
the lab does (consecutive samples, so each block carries the machine's drift), and flips a
fair coin per block for which of the two is "B": an A/A comparison under the null, with the
metrics' real correlations.  Every one of them goes through `iolab.stats.compare` twice — the
joint correction ("holm", the default) and the per-metric Holm it replaced
("holm-marginal", every metric tested on its own) — and counts:

- A/A: tables with at least one significant verdict, KPI or evidence (the family-wise error
  the table promises to keep at or below alpha), with a 95% Wilson interval;
- power: B's values of one correlated group of metrics (then several) multiplied by a
  planted factor, the KPI shifted too (the demo's case: the answer moved; does the evidence
  behind it show?) — the share of planted metrics found, and of tables that found any.

`--demo DB --run N`: on a stored paired lab run (the demo's), how many secondary metrics pass
each correction, and min-P's floor: the count of distinct sign patterns among the metrics,
times 2, over 2^n.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from iolab.stats.types import Correction, MetricInput

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "bench/data/ext4-data-journal-ordered-lab.csv"
KPI = "write.iops"
ALPHA = 0.05
# correlated groups of the recorded table (name prefixes) and the factor planted in B
GROUPS = {
    "jbd2": ("jbd2.",),
    "loop device writes": ("diskstats.loop0.write", "disk.loop0.write"),
    "write latency": ("write.clat_ns.", "write.lat_ns."),
}
PLANTED = 1.25  # x1.25 on every metric of a planted group
KPI_SHIFT = 0.7  # the KPI falls 30% in the power runs


def load(path: Path) -> tuple[list[str], np.ndarray]:
    """Metric names and a (samples, metrics) array, NaN where a value is missing."""
    with path.open() as f:
        rows = [r for r in csv.reader(line for line in f if not line.startswith("#"))]
    header, body = rows[0], rows[1:]
    names = header[2:]
    values = np.array(
        [[float(v) if v != "" else math.nan for v in r[2:]] for r in body], dtype=float
    )
    return names, values


def wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def draw(values: np.ndarray, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """n blocks of consecutive samples from a random start, A/B order a coin flip each."""
    total = values.shape[0]
    start = int(rng.integers(total))
    idx = (start + np.arange(2 * n)) % total
    pairs = values[idx].reshape(n, 2, -1)
    coin = rng.integers(0, 2, n)
    a = pairs[np.arange(n), coin]
    b = pairs[np.arange(n), 1 - coin]
    return a, b


def table(names: Sequence[str], a: np.ndarray, b: np.ndarray) -> list[MetricInput]:
    blocks: list[str | int] = list(range(a.shape[0]))
    items = []
    for j, name in enumerate(names):
        ok = ~np.isnan(a[:, j]) & ~np.isnan(b[:, j])
        if ok.sum() < 2:
            continue
        va, vb = a[ok, j], b[ok, j]
        if name != KPI and len({*va, *vb}) == 1:
            continue  # as iolab compare: a constant carries no information
        kept = [blk for blk, keep in zip(blocks, ok, strict=True) if keep]
        items.append(
            MetricInput(name, list(va), list(vb), kpi=name == KPI, blocks_a=kept, blocks_b=kept)
        )
    return items


SIGNIFICANT = ("regression", "improvement", "changed")


def run_one(items: list[MetricInput], correction: Correction) -> dict[str, str]:
    from iolab.stats.comparison import compare

    fold = correction == "holm"
    result = compare(items, correction=correction, fold_equal=fold)
    return {m.name: m.verdict for m in result.metrics}


def planted(names: Sequence[str], prefixes: Sequence[str]) -> list[int]:
    return [j for j, n in enumerate(names) if n.startswith(tuple(prefixes))]


def aa(names: list[str], values: np.ndarray, n: int, reps: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed + n)
    hits: dict[Correction, int] = {"holm": 0, "holm-marginal": 0}
    secondary_only: dict[Correction, int] = {"holm": 0, "holm-marginal": 0}
    for _ in range(reps):
        a, b = draw(values, n, rng)
        items = table(names, a, b)
        for c in hits:
            verdicts = run_one(items, c)
            hits[c] += any(v in SIGNIFICANT for v in verdicts.values())
            secondary_only[c] += any(
                v in SIGNIFICANT for name, v in verdicts.items() if name != KPI
            )
    out = []
    for c, label in zip(hits, ("joint max-T", "Holm"), strict=True):
        lo, hi = wilson(hits[c], reps)
        out.append(
            f"| {n} | {label} | {100 * hits[c] / reps:.1f}% [{100 * lo:.1f}%, {100 * hi:.1f}%] "
            f"| {100 * secondary_only[c] / reps:.1f}% |"
        )
    return out


def power(
    names: list[str], values: np.ndarray, n: int, reps: int, seed: int, groups: Sequence[str]
) -> list[str]:
    rng = np.random.default_rng(seed + 1000 + n)
    cols = sorted({j for g in groups for j in planted(names, GROUPS[g])})
    kpi = names.index(KPI)
    found: dict[Correction, int] = {"holm": 0, "holm-marginal": 0}
    anyfound: dict[Correction, int] = {"holm": 0, "holm-marginal": 0}
    total = 0
    for _ in range(reps):
        a, b = draw(values, n, rng)
        b = b.copy()
        b[:, cols] *= PLANTED
        b[:, kpi] *= KPI_SHIFT
        items = table(names, a, b)
        targets = {names[j] for j in cols} & {i.name for i in items}
        total += len(targets)
        for c in found:
            verdicts = run_one(items, c)
            got = sum(verdicts.get(t) in SIGNIFICANT for t in targets)
            found[c] += got
            anyfound[c] += got > 0
    label = " + ".join(groups)
    out = []
    for c, name in zip(found, ("joint max-T", "Holm"), strict=True):
        out.append(
            f"| {n} | {label} ({len(cols)} metrics) | {name} | "
            f"{100 * found[c] / max(total, 1):.1f}% | {100 * anyfound[c] / reps:.1f}% |"
        )
    return out


def demo(db: Path, run: int) -> None:
    """On a stored paired run (the demo's): how many secondary metrics each correction
    lets through, and min-P's floor — the share of joint sign flips under which some metric
    moves the same way in every block, i.e. the adjusted p of a metric that did."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from noise.labrun import samples

    rows = [r for r in samples(db, run) if r["status"] == "ok"]
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    base, other = variants[0], variants[1]
    blocks = sorted({r["block"] for r in rows})
    names = sorted(set.intersection(*(set(r["metrics"]) for r in rows)) - {KPI})
    by = {(r["variant"], r["block"]): r["metrics"] for r in rows}
    a = np.array([[by[(base, k)][n] for n in names] for k in blocks])
    b = np.array([[by[(other, k)][n] for n in names] for k in blocks])
    kpi_a = [by[(base, k)][KPI] for k in blocks]
    kpi_b = [by[(other, k)][KPI] for k in blocks]
    varied = [j for j in range(len(names)) if len({*a[:, j], *b[:, j]}) > 1]
    from iolab.stats.maxt import sign_flips, transform

    keys: list[str | int] = list(blocks)
    items = [MetricInput(KPI, kpi_a, kpi_b, kpi=True, blocks_a=keys, blocks_b=keys)]
    items += [
        MetricInput(names[j], list(a[:, j]), list(b[:, j]), blocks_a=keys, blocks_b=keys)
        for j in varied
    ]
    print(f"run {run}: {b.shape[0]} blocks, {other} vs {base}, {len(varied)} secondary metrics")
    corrections: tuple[Correction, ...] = ("holm", "holm-marginal")
    for correction in corrections:
        verdicts = run_one(items, correction)
        moved = [n for n, v in verdicts.items() if n != KPI and v in SIGNIFICANT]
        merges = next((n for n in verdicts if n.endswith(".write_merges")), "write_merges")
        print(
            f"  {correction}: {len(moved)} moved; jbd2.transactions "
            f"{verdicts.get('jbd2.transactions')}, {merges} {verdicts.get(merges)}"
        )
    pooled = transform(np.vstack([a[:, varied], b[:, varied]]))
    d = pooled[len(blocks) :] - pooled[: len(blocks)]
    d = d[:, np.all(d != 0, axis=0)]
    flips = sign_flips(len(blocks))
    signs = np.sign(d)  # (blocks, metrics)
    agree = np.abs(flips @ signs) == len(blocks)  # (flips, metrics): all one sign
    floor = float(np.mean(agree.any(axis=1)))
    patterns = len({tuple(col * col[0]) for col in signs.T})
    print(
        f"  min-P: {patterns} distinct sign patterns among {d.shape[1]} metrics; a metric "
        f"that moved the same way in every block gets adjusted p >= {floor:.3f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--blocks", type=int, nargs="+", default=[6, 9, 12, 20])
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--power-reps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--part", choices=("both", "aa", "power"), default="both")
    ap.add_argument("--demo", type=Path, metavar="DB", help="a store holding a paired run")
    ap.add_argument("--run", type=int, default=1)
    args = ap.parse_args()
    if args.demo:
        demo(args.demo, args.run)
        return
    names, values = load(args.data)
    t0 = time.time()
    lines = [
        f"Data: `{args.data.relative_to(ROOT) if args.data.is_relative_to(ROOT) else args.data}`"
        f" ({values.shape[0]} samples, {values.shape[1]} metrics); seed {args.seed}.",
        "",
        f"A/A, {args.reps} tables per row: tables with any significant verdict (KPI or "
        "evidence; 95% Wilson interval), and with a false secondary verdict alone.",
        "",
        "| blocks | correction | any false verdict | false secondary |",
        "|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    for n in args.blocks if args.part != "power" else ():
        rows = aa(names, values, n, args.reps, args.seed)
        print("\n".join(rows), flush=True)
        lines += rows
    head = [
        "",
        f"Power, {args.power_reps} tables per row: planted x{PLANTED:g} on every metric of "
        f"the group(s) in B, the KPI x{KPI_SHIFT:g}; share of planted metrics found, and of "
        "tables that found any.",
        "",
        "| blocks | planted | correction | planted metrics found | tables finding any |",
        "|---|---|---|---|---|",
    ]
    print("\n".join(head), flush=True)
    lines += head
    for n in args.blocks if args.part != "aa" else ():
        for groups in (("jbd2",), tuple(GROUPS)):
            rows = power(names, values, n, args.power_reps, args.seed, groups)
            print("\n".join(rows), flush=True)
            lines += rows
    lines += ["", f"(run time {time.time() - t0:.0f} s)"]
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
