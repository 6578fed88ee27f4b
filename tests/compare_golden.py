"""The golden outputs of the old comparison path, and what reads and writes them.

Issue 21 made `iolab compare` fast (no scipy.stats; each metric's tests computed once) on the
condition that its p-values and intervals stay those of the old scipy path.  That path is no
longer in the tree: what it computed on fixed random tables was stored once, in
tests/data/compare-golden.json, and tests/test_compare_equivalence.py holds today's code to
it.  This module holds what the test and the generator (tests/make_compare_golden.py) share:
the random tables, and the result dataclasses written as JSON and read back.

The generator imports this module with the old commit's `iolab` first on sys.path, so
nothing here may import `iolab` at module level.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

GOLDEN = Path(__file__).parent / "data" / "compare-golden.json"
TABLES = 60  # random tables, each compared whole and metric by metric at two levels
HOLM_CASES = 100  # graphical Holm families
DIGITS = 9  # significant digits of the stored samples (short JSON; ties stay rare)

KINDS = ("plain", "plain", "ties", "signed", "constant")
NAMES = ("write.iops", "write.bw_bytes", "read.iops", "write.clat_ns.p99", "cpu.sys_pct")


def _short(values: Any) -> list[float]:
    return [float(f"{float(v):.{DIGITS}g}") for v in values]


def _side(rng: np.random.Generator, n: int, level: float, cv: float, kind: str) -> list[float]:
    values = level * np.exp(rng.normal(0.0, cv, n))
    if kind == "ties":
        values = np.round(values / level * 12.0)  # small integers around 12
    elif kind == "signed":
        values = values - level  # zero and negative values: the raw scale
    elif kind == "constant":
        values = np.full(n, level)
    return _short(values)


def random_table(rng: np.random.Generator) -> dict[str, Any]:
    """One table as JSON: paired or not (sometimes a block without a partner), n from 2 to
    70 per side, ties, values <= 0, constant sides, shifts of 0 to -10%, proportional KPIs,
    a higher-is-better override, histograms, both corrections, several alphas and margins."""
    n_a = int(rng.choice([2, 3, 5, 8, 12, 20, 30, 50, 70]))
    paired = bool(rng.random() < 0.5)
    n_b = n_a if paired else int(rng.choice([n_a, max(2, n_a - 3), n_a + 4]))
    blocks_a = list(range(n_a)) if paired else None
    blocks_b = list(range(n_b)) if paired else None
    if paired and rng.random() < 0.2:  # a block without a partner
        blocks_b = [*range(1, n_b), n_b + 7]
    names = [*NAMES, *(f"jbd2.metric{i}" for i in range(int(rng.integers(0, 8))))]
    metrics: list[dict[str, Any]] = []
    for i, name in enumerate(names):
        level = float(10 ** rng.uniform(0, 6))
        cv = float(rng.choice([0.002, 0.01, 0.05, 0.3]))
        kind = str(rng.choice(KINDS))
        a = _side(rng, n_a, level, cv, kind)
        moved = 1.0 + float(rng.choice([0.0, 0.0, 0.005, 0.03, -0.1]))
        b = _side(rng, n_b, level * moved, cv, kind)
        if name == "write.bw_bytes" and rng.random() < 0.5:  # proportional to write.iops
            a = [v * 4096.0 for v in metrics[0]["a"]]
            b = [v * 4096.0 for v in metrics[0]["b"]]
        higher = i == 2 and rng.random() < 0.5
        metrics.append(
            {
                "name": name,
                "a": a,
                "b": b,
                "kpi": i < 3,
                "direction": "higher" if higher else None,
                "blocks_a": blocks_a,
                "blocks_b": blocks_b,
            }
        )
    histograms = []
    for h in range(int(rng.integers(0, 3))):
        runs_a = [{f"{2**k}": int(c) for k, c in enumerate(rng.poisson(50, 5))} for _ in range(3)]
        runs_b = [
            {f"{2**k}": int(c) for k, c in enumerate(rng.poisson(50 + 10 * h, 5))}
            for _ in range(int(rng.choice([1, 3])))
        ]
        histograms.append({"name": f"hist.h{h}", "runs_a": runs_a, "runs_b": runs_b})
    options = {
        "alpha": float(rng.choice([0.05, 0.01, 0.1])),
        "margin_pct": float(rng.choice([1.0, 0.5, 5.0])),
        "correction": "bh" if rng.random() < 0.3 else "holm",
    }
    return {"metrics": metrics, "histograms": histograms, "options": options}


def random_holm_case(rng: np.random.Generator) -> dict[str, Any]:
    """A graphical Holm family: 0-5 KPIs, 0-39 secondary p-values (some tied), a share."""
    primary = _short(rng.uniform(0, 0.2, int(rng.integers(0, 6))))
    secondary = _short(rng.beta(0.3, 1.0, int(rng.integers(0, 40))))
    if secondary and rng.random() < 0.3:
        secondary[: len(secondary) // 2] = [secondary[0]] * (len(secondary) // 2)
    return {"primary": primary, "secondary": secondary, "share": float(rng.choice([0, 0.2, 0.5]))}


def interval_levels(alpha: float) -> tuple[float, float]:
    """The levels `compare_metric` is asked for (history and the registry choose their own)."""
    return alpha, alpha / 7


def to_json(value: Any, fields: dict[str, list[str]]) -> Any:
    """A result as JSON: a dataclass as the list of its field values (their names, once per
    type, go to `fields`), enums by value, tuples as lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = [f.name for f in dataclasses.fields(value)]
        fields.setdefault(type(value).__name__, names)
        return [to_json(getattr(value, name), fields) for name in names]
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, list | tuple):
        return [to_json(v, fields) for v in value]
    return value


@functools.cache
def _hints(kind: type) -> dict[str, Any]:
    return typing.get_type_hints(kind)


def from_json(kind: Any, value: Any, fields: Mapping[str, list[str]]) -> Any:
    """`to_json`'s inverse, into today's dataclasses (led by their type hints)."""
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        hints = _hints(kind)
        named = dict(zip(fields[kind.__name__], value, strict=True))
        return kind(**{k: from_json(hints[k], v, fields) for k, v in named.items()})
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        known = [k for k in args if k is not type(None)]
        return value if value is None or len(known) > 1 else from_json(known[0], value, fields)
    if origin is tuple:
        return tuple(from_json(args[0], v, fields) for v in value)
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return kind(value)
    return value  # numbers, strings, Literal values, lists and mappings of plain values


def inputs(table: Mapping[str, Any], metric: Any, histogram: Any, direction: Any) -> Any:
    """A stored table's MetricInputs and HistogramInputs, as the classes given make them."""
    metrics = [
        metric(**{**m, "direction": m["direction"] and direction(m["direction"])})
        for m in table["metrics"]
    ]
    return metrics, [histogram(**h) for h in table["histograms"]]


def load() -> dict[str, Any]:
    golden: dict[str, Any] = json.loads(GOLDEN.read_text())
    return golden
