"""Write tests/data/compare-golden.json: what the old comparison path computed.

The old path (tests/stats_v0: the statistics before issue 21, scipy throughout) was deleted
once its outputs were stored.  This script takes it, and the `iolab` it ran against, from a
commit that still holds both (`git archive COMMIT src/iolab tests/stats_v0` into a temporary
directory, put first on sys.path), compares fixed random tables with it, and writes the tables
and the results.  It was run once; run it again only to change the set of tables:

    .venv/bin/python tests/make_compare_golden.py [--commit REV]

It needs numpy and scipy (the old path's), and git with the commit in reach.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import io
import json
import platform
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

V0_COMMIT = "5d1aa9e5835ca103031936c47f9dbfc2bc9194ab"  # main before tests/stats_v0 was removed
SEED_TABLES, SEED_HOLM = 2100, 5
REPO = Path(__file__).resolve().parent.parent


def extract(commit: str, into: Path) -> None:
    """The old statistics and the `iolab` they import, as they were at `commit`."""
    tar = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", commit, "src/iolab", "tests/stats_v0"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        archive.extractall(into, filter="data")


def _single(options: dict[str, Any], level: float) -> dict[str, Any]:
    return {"alpha": options["alpha"], "margin_pct": options["margin_pct"], "interval_alpha": level}


def _delta(row: Any, single: Any, fields: dict[str, list[str]]) -> dict[str, Any]:
    """`compare_metric`'s result as the fields in which it differs from the table's row."""
    import compare_golden as cg

    names = [f.name for f in dataclasses.fields(single)]
    return {
        name: cg.to_json(getattr(single, name), fields)
        for name in names
        if getattr(single, name) != getattr(row, name)
    }


def generate(commit: str) -> dict[str, Any]:
    import numpy as np
    import scipy

    import compare_golden as cg  # tests/, after the old iolab is first on sys.path

    iolab = importlib.import_module("iolab")
    if not str(iolab.__file__).startswith(sys.path[1]):
        raise SystemExit(f"iolab was imported from {iolab.__file__}, not from the old commit")
    old = importlib.import_module("stats_v0.comparison")
    old_multiple = importlib.import_module("stats_v0.multiple")
    stats_types = importlib.import_module("iolab.stats.types")
    histogram = importlib.import_module("iolab.stats.histogram")
    direction = importlib.import_module("iolab.model.metrics").Direction

    fields: dict[str, list[str]] = {}
    rng = np.random.default_rng(SEED_TABLES)
    tables = []
    for _ in range(cg.TABLES):
        table = cg.random_table(rng)
        metrics, histograms = cg.inputs(
            table, stats_types.MetricInput, histogram.HistogramInput, direction
        )
        options = table["options"]
        comparison = old.compare(metrics, histograms, **options)
        table["compare"] = cg.to_json(comparison, fields)
        table["compare_metric"] = [
            [
                _delta(row, old.compare_metric(item, **_single(options, level)), fields)
                for level in cg.interval_levels(options["alpha"])
            ]
            for item, row in zip(metrics, comparison.metrics, strict=True)
        ]
        tables.append(table)
    rng = np.random.default_rng(SEED_HOLM)
    holm = []
    for _ in range(cg.HOLM_CASES):
        case = cg.random_holm_case(rng)
        case["adjusted"] = old_multiple.graphical_holm(
            case["primary"], case["secondary"], case["share"]
        )
        holm.append(case)
    return {
        "about": (
            "Outputs of iolab's comparison statistics before issue 21 (tests/stats_v0, scipy "
            "throughout) on fixed random tables; tests/test_compare_equivalence.py holds "
            "today's code to them.  Made once by tests/make_compare_golden.py; do not edit.  "
            "Results are lists of field values, in the order `fields` names them per type; "
            "`compare_metric` holds, per metric and interval level (alpha, alpha / 7), the "
            "fields in which compare_metric's result differs from the table's row."
        ),
        "commit": commit,
        "made_with": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "seeds": {"tables": SEED_TABLES, "graphical_holm": SEED_HOLM},
        },
        "fields": fields,
        "tables": tables,
        "graphical_holm": holm,
    }


def dump(golden: dict[str, Any]) -> str:
    """Compact JSON, one table (or graphical Holm case) a line, so a diff names the table."""

    def compact(value: Any) -> str:
        return json.dumps(value, separators=(",", ":"), allow_nan=False)

    lines = [f"{compact(k)}:{compact(v)}" for k, v in golden.items() if not isinstance(v, list)]
    for key in ("tables", "graphical_holm"):
        items = ",\n".join(compact(item) for item in golden[key])
        lines.append(f"{compact(key)}:[\n{items}\n]")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--commit", default=V0_COMMIT, help="a commit holding tests/stats_v0")
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "data" / "compare-golden.json")
    args = parser.parse_args()
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--verify", f"{args.commit}^{{commit}}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        extract(commit, Path(tmp))
        sys.path[:0] = [str(Path(tmp) / "tests"), str(Path(tmp) / "src")]
        golden = generate(commit)
    text = dump(golden)
    args.out.write_text(text)
    print(f"{args.out}: {len(golden['tables'])} tables, {len(text) / 1e3:.0f} kB")


if __name__ == "__main__":
    main()
