"""The fast comparison path gives the numbers the old one gave (issue 21).

`iolab compare` no longer imports scipy.stats and computes each metric's tests once.  What the
old path (the statistics as they were, scipy throughout) computed on fixed random tables is
stored in tests/data/compare-golden.json (made once by tests/make_compare_golden.py from the
commit that still held the old code): paired and unpaired, with and without ties, small (exact
with ties), mid-sized (exact without ties) and large (normal approximation), a block without a
partner, values <= 0, constant sides, KPIs with proportional partners, histograms, both
corrections, several alphas and margins, and `compare_metric` at two interval levels.

Today's code must print the same, character for character, in every format: the stored
results are rendered beside today's by today's renderers.  Every field must agree, too:
strings and integers exactly, floats to 1e-12 relative.  The stored floats are the old ones
to the bit; on the machine that made them today's agree to the bit, but for p-values of the
normal approximation (the standard library's erfc now, scipy's Cephes erfc then: <= 1e-14
relative), and the tolerance lets another platform's libm differ in the last bits, too.  The
JSON format prints floats whole, so it is compared field by field at the same tolerance.

One difference is on purpose: with many ties the old path could show a change outside its
own interval (`+0.00% [+0.35%, +9.1%]`: the median breakpoint was 0 while the rank test
rejected at 0); today the change is the interval's end nearest to it (`stats.shift.inside`).
The stored rows are read with that one change (`_held_inside`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import typing
from typing import Any

import pytest

import compare_golden as cg
from iolab.model.metrics import Direction
from iolab.report import FORMATS, RenderOptions, render
from iolab.report.model import Group, Report
from iolab.stats import comparison as new
from iolab.stats.histogram import HistogramInput
from iolab.stats.types import Comparison, MetricComparison, MetricInput

GOLDEN = cg.load()
TABLES: list[dict[str, Any]] = GOLDEN["tables"]
FIELDS: dict[str, list[str]] = GOLDEN["fields"]
REL_TOL = 1e-12  # seen: p-values of the normal approximation differ by <= 1e-14 relative
PARTS = 4  # the tables, in this many tests


def _close(x: float, y: float) -> bool:
    return x == y or (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=REL_TOL)


def _same(path: str, was: Any, now: Any) -> None:
    """was == now field by field (dataclasses, or the JSON format's dicts), floats to the
    tolerances above."""
    if dataclasses.is_dataclass(was) and not isinstance(was, type):
        assert type(was) is type(now), path
        for f in dataclasses.fields(was):
            if f.name in FIELDS[type(was).__name__]:  # the old path's fields (others: new)
                _same(f"{path}.{f.name}", getattr(was, f.name), getattr(now, f.name))
    elif isinstance(was, dict):
        assert isinstance(now, dict) and was.keys() <= now.keys(), path
        for key in was:
            _same(f"{path}.{key}", was[key], now[key])
    elif isinstance(was, tuple | list):
        assert isinstance(now, tuple | list) and len(was) == len(now), path
        for i, (u, v) in enumerate(zip(was, now, strict=True)):
            _same(f"{path}[{i}]", u, v)
    elif isinstance(was, float) and isinstance(now, float):
        assert _close(was, now), (path, was, now)
    else:
        assert type(was) is type(now) and was == now, (path, was, now)


def _options(table: dict[str, Any]) -> dict[str, Any]:
    """The stored options, in today's names: the old path's "holm" (per-metric Holm inside
    the graphical split) is today's "holm-marginal"; today's "holm" corrects the secondary
    metrics jointly (stats.maxt), a different procedure on purpose.  The old path tested
    metrics equal in every sample one by one: today's `fold_equal=False`."""
    options = dict(table["options"], fold_equal=False)
    if options.get("correction", "holm") == "holm":
        options["correction"] = "holm-marginal"
    return options


def _inputs(table: dict[str, Any]) -> tuple[list[MetricInput], list[HistogramInput]]:
    metrics, histograms = cg.inputs(table, MetricInput, HistogramInput, Direction)
    return metrics, histograms


def _held_inside(row: MetricComparison) -> MetricComparison:
    """An old row with its change held inside its interval (the module's docstring)."""
    change, lo, hi = row.change_pct, row.ci_low_pct, row.ci_high_pct
    if change is None:
        return row
    held = lo if lo is not None and change < lo else hi if hi is not None and change > hi else None
    if held is None:
        return row
    said = f"a change of {change:+.2f}%"  # the margin's warning names the change
    warnings = tuple(w.replace(said, f"a change of {held:+.2f}%") for w in row.warnings)
    return dataclasses.replace(row, change_pct=held, warnings=warnings)


def _stored(table: dict[str, Any]) -> Comparison:
    stored: Comparison = cg.from_json(Comparison, table["compare"], FIELDS)
    metrics = tuple(_held_inside(m) for m in stored.metrics)
    return dataclasses.replace(stored, metrics=metrics)


def _report(comparison: Comparison, alpha: float, margin_pct: float) -> Report:
    group = Group(a_name="old", b_name="new", cell={}, comparison=comparison)
    return Report(a="A", b="B", groups=(group,), alpha=alpha, margin_pct=margin_pct)


@pytest.mark.parametrize("part", range(PARTS))
def test_compare_equals_the_old_path(part: int) -> None:
    for number, table in enumerate(TABLES[part::PARTS]):
        options = _options(table)
        now = new.compare(*_inputs(table), **options)
        # named as today names the same procedure (it prints beside the figures)
        was = dataclasses.replace(
            _stored(table), correction=now.correction, procedure=now.procedure
        )
        _same(f"table {part + PARTS * number}", was, now)
        for name in FORMATS:
            for show_all in (False, True):
                render_options = RenderOptions(show_all=show_all)
                before, after = (
                    render(
                        _report(c, options["alpha"], options["margin_pct"]), name, render_options
                    )
                    for c in (was, now)
                )
                if name == "json":  # every digit of every float: compared as the fields are
                    _same(f"json {part + PARTS * number}", json.loads(before), json.loads(after))
                else:
                    assert before == after, (part + PARTS * number, name, show_all)


def test_compare_metric_equals_the_old_path() -> None:
    """`compare_metric` (history, the registry) at alpha and at a stricter interval level.
    Stored as the fields in which its result differs from the table's row."""
    hints = typing.get_type_hints(MetricComparison)
    for number, table in enumerate(TABLES):
        options = table["options"]
        rows = _stored(table).metrics
        metrics, _ = _inputs(table)
        for item, row, deltas in zip(metrics, rows, table["compare_metric"], strict=True):
            levels = cg.interval_levels(options["alpha"])
            for level, delta in zip(levels, deltas, strict=True):
                was = _held_inside(
                    dataclasses.replace(
                        row, **{k: cg.from_json(hints[k], v, FIELDS) for k, v in delta.items()}
                    )
                )
                now = new.compare_metric(
                    item,
                    alpha=options["alpha"],
                    margin_pct=options["margin_pct"],
                    interval_alpha=level,
                )
                _same(f"table {number} {item.name} at {level:g}", was, now)


def test_graphical_holm_equals_the_old_path() -> None:
    """The per-family form of the graphical Holm procedure against the old k x k matrix
    form: family sizes 0 to 40, tied p-values, shares 0 to 0.5."""
    from iolab.stats.multiple import graphical_holm

    for number, case in enumerate(GOLDEN["graphical_holm"]):
        now = graphical_holm(case["primary"], case["secondary"], case["share"])
        _same(f"case {number}", case["adjusted"], list(now))


def _kinds(table: dict[str, Any], comparison: Comparison) -> set[str]:
    """The kinds of case one table holds (what `test_the_tables_cover_every_kind` counts)."""
    options = table["options"]
    kinds = {f"correction {options['correction']}", f"alpha {options['alpha']:g}"}
    for item, row in zip(table["metrics"], comparison.metrics, strict=True):
        values = item["a"] + item["b"]
        paired = item["blocks_a"] is not None
        ties = "ties" if 1 < len(set(values)) < len(values) else "no ties"  # not constant
        size = "> 60 values" if len(values) > 60 else "<= 60 values"
        kinds.add(f"{'paired' if paired else 'unpaired'}, {ties}, {size}")
        kinds.add(f"verdict {row.verdict}")
        conditions = {
            "a block without a partner": paired and item["blocks_a"] != item["blocks_b"],
            "n <= 3": len(item["a"]) <= 3,
            "a side of zero variance": len(set(item["a"])) == 1 or len(set(item["b"])) == 1,
            "values <= 0": min(values) <= 0,
            "a direction given": item["direction"] is not None,
            "proportional KPIs": row.same_as is not None,
        }
        kinds.update(kind for kind, holds in conditions.items() if holds)
    if comparison.histogram_shifts:
        kinds.add("histograms")
    return kinds


def test_the_tables_cover_every_kind() -> None:
    """The stored tables reach every kind of case the random tables are drawn for."""
    seen: set[str] = set()
    for table in TABLES:
        seen |= _kinds(table, _stored(table))
    wanted = {
        f"{pairing}, {ties}, {size}"
        for pairing in ("paired", "unpaired")
        for ties in ("ties", "no ties")
        for size in ("> 60 values", "<= 60 values")
    }
    wanted |= {f"verdict {v}" for v in ("regression", "improvement", "no change", "changed")}
    wanted |= {"verdict inconclusive", "correction holm", "correction bh", "histograms"}
    wanted |= {"alpha 0.01", "alpha 0.05", "alpha 0.1", "a block without a partner", "n <= 3"}
    wanted |= {"a side of zero variance", "values <= 0", "a direction given", "proportional KPIs"}
    assert wanted <= seen, sorted(wanted - seen)
    assert any(len(h) == 1 for t in TABLES for h in (x["runs_b"] for x in t["histograms"]))


def test_normal_cdf_and_quantile_match_scipy() -> None:
    """The standard library's normal functions against scipy's, tails included."""
    import numpy as np
    from scipy import special

    from iolab.stats.normal import ndtr, ppf

    zs = np.concatenate([np.linspace(-38, 38, 2001), [0.0, -0.0, np.inf, -np.inf]])
    for z in zs:
        assert math.isclose(ndtr(float(z)), float(special.ndtr(z)), rel_tol=1e-9, abs_tol=1e-300)
    for p in (1e-12, 0.001, 0.025, 0.05, 0.2, 0.5, 0.8, 0.95, 0.975, 0.999):
        assert math.isclose(ppf(p), float(special.ndtri(p)), rel_tol=1e-14)
    assert math.isnan(ndtr(math.nan))


def test_quantile_is_the_standard_library_s_to_the_bit() -> None:
    """ppf calls the C function behind `statistics.NormalDist().inv_cdf` directly (no
    `statistics` import): the same bits, and the same refusal of p outside (0, 1)."""
    from statistics import NormalDist

    from iolab.stats.normal import ppf

    for p in (1e-300, 1e-12, 0.001, 0.0125, 0.025, 0.05, 0.2, 0.5, 0.8, 0.975, 1 - 1e-16):
        assert ppf(p) == NormalDist().inv_cdf(p)
    for bad in (0.0, 1.0, -0.5, 2.0):
        with pytest.raises(ValueError):
            ppf(bad)
