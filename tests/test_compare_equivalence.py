"""The fast comparison path gives the numbers the old one gave (issue 21).

`iolab compare` no longer imports scipy.stats and computes each metric's tests once; the old
path (tests/stats_v0: the statistics as they were, scipy throughout) is run beside it on random
tables — paired and unpaired, with and without ties, small (exact with ties), mid-sized (exact
without ties) and large (normal approximation), values <= 0, KPIs with proportional partners,
histograms, both corrections, several alphas and margins.  Every printed output must be equal
character for character, and every field equal, bit for bit: intervals, estimates, summaries,
verdicts, runs needed, exact p-values.  The one exception is a p-value from the normal
approximation (ties among more than 60 values): the standard library's erfc and scipy's
Cephes erfc differ in the last bits, so those agree to 1e-9 relative (what any format prints
is still the same, which the rendered outputs check).
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import numpy as np
import pytest

from iolab.model.metrics import Direction
from iolab.report import FORMATS, RenderOptions, render
from iolab.report.model import Group, Report
from iolab.stats import comparison as new
from iolab.stats.histogram import HistogramInput
from iolab.stats.types import Comparison, Correction, MetricInput
from stats_v0 import comparison as old

P_FIELDS = {"p_value", "p_adjusted", "tost_p_value"}
ROUNDS = 120


def _side(rng: np.random.Generator, n: int, level: float, cv: float, kind: str) -> list[float]:
    values = level * np.exp(rng.normal(0.0, cv, n))
    if kind == "ties":
        values = np.round(values / level * 12.0)  # small integers around 12
    elif kind == "signed":
        values = values - level  # zero and negative values: the raw scale
    elif kind == "constant":
        values = np.full(n, level)
    return [float(v) for v in values]


def random_table(
    rng: np.random.Generator,
) -> tuple[list[MetricInput], list[HistogramInput], dict[str, Any]]:
    n_a = int(rng.choice([2, 3, 5, 8, 12, 20, 30, 50, 70]))
    paired = bool(rng.random() < 0.5)
    n_b = n_a if paired else int(rng.choice([n_a, max(2, n_a - 3), n_a + 4]))
    blocks_a = list(range(n_a)) if paired else None
    blocks_b = list(range(n_b)) if paired else None
    if paired and rng.random() < 0.2:  # a block without a partner
        blocks_b = [*range(1, n_b), n_b + 7]
    names = ["write.iops", "write.bw_bytes", "read.iops", "write.clat_ns.p99", "cpu.sys_pct"]
    names += [f"jbd2.metric{i}" for i in range(int(rng.integers(0, 8)))]
    metrics: list[MetricInput] = []
    for i, name in enumerate(names):
        level = float(10 ** rng.uniform(0, 6))
        cv = float(rng.choice([0.002, 0.01, 0.05, 0.3]))
        kind = str(rng.choice(["plain", "plain", "ties", "signed", "constant"]))
        a = _side(rng, n_a, level, cv, kind)
        moved = 1.0 + float(rng.choice([0.0, 0.0, 0.005, 0.03, -0.1]))
        b = _side(rng, n_b, level * moved, cv, kind)
        if name == "write.bw_bytes" and rng.random() < 0.5:  # proportional to write.iops
            a = [v * 4096.0 for v in metrics[0].a]
            b = [v * 4096.0 for v in metrics[0].b]
        metrics.append(
            MetricInput(
                name=name,
                a=a,
                b=b,
                kpi=i < 3,
                direction=Direction.HIGHER if i == 2 and rng.random() < 0.5 else None,
                blocks_a=blocks_a,
                blocks_b=blocks_b,
            )
        )
    histograms = []
    for h in range(int(rng.integers(0, 3))):
        runs_a = [{f"{2**k}": int(c) for k, c in enumerate(rng.poisson(50, 5))} for _ in range(3)]
        runs_b = [
            {f"{2**k}": int(c) for k, c in enumerate(rng.poisson(50 + 10 * h, 5))}
            for _ in range(int(rng.choice([1, 3])))
        ]
        histograms.append(HistogramInput(name=f"hist.h{h}", runs_a=runs_a, runs_b=runs_b))
    correction: Correction = "bh" if rng.random() < 0.3 else "holm"
    options = {
        "alpha": float(rng.choice([0.05, 0.01, 0.1])),
        "margin_pct": float(rng.choice([1.0, 0.5, 5.0])),
        "correction": correction,
    }
    return metrics, histograms, options


def _same(path: str, x: Any, y: Any, loose: bool) -> None:
    """x == y field by field; `loose`: p-values (and the summaries' achieved levels, now
    from exact binomial counts) may differ in their last bits."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        assert type(x) is type(y), path
        for f in dataclasses.fields(x):
            _same(f"{path}.{f.name}", getattr(x, f.name), getattr(y, f.name), loose)
    elif isinstance(x, tuple | list):
        assert len(x) == len(y), path
        for i, (u, v) in enumerate(zip(x, y, strict=True)):
            _same(f"{path}[{i}]", u, v, loose)
    elif isinstance(x, float) and isinstance(y, float):
        leaf = path.rsplit(".", 1)[-1]
        near = (leaf in P_FIELDS and loose) or (
            leaf == "ci_level" and path.endswith((".a.ci_level", ".b.ci_level"))
        )
        if near:
            assert x == y or math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-300), (path, x, y)
        else:
            assert x == y or (math.isnan(x) and math.isnan(y)), (path, x, y)
    else:
        assert x == y, (path, x, y)


def _same_json(path: str, x: Any, y: Any, loose: bool) -> None:
    if isinstance(x, dict):
        assert x.keys() == y.keys(), path
        for key in x:
            _same_json(f"{path}.{key}", x[key], y[key], loose)
    elif isinstance(x, list):
        assert len(x) == len(y), path
        for i, (u, v) in enumerate(zip(x, y, strict=True)):
            _same_json(f"{path}[{i}]", u, v, loose)
    elif isinstance(x, float) and isinstance(y, float):
        _same(path, x, y, loose)
    else:
        assert x == y, (path, x, y)


def _asymptotic(metrics: list[MetricInput]) -> bool:
    """Whether any test here may have used the normal approximation (> 60 values)."""
    return any(len(m.a) + len(m.b) > 60 for m in metrics)


def _report(comparison: Comparison, alpha: float, margin_pct: float) -> Report:
    group = Group(a_name="old", b_name="new", cell={}, comparison=comparison)
    return Report(a="A", b="B", groups=(group,), alpha=alpha, margin_pct=margin_pct)


@pytest.mark.parametrize("seed", range(4))
def test_new_path_equals_old_path(seed: int) -> None:
    rng = np.random.default_rng(2100 + seed)
    reached = {"asymptotic": 0, "exact": 0}
    for _ in range(ROUNDS // 4):
        metrics, histograms, options = random_table(rng)
        was = old.compare(metrics, histograms, **options)
        now = new.compare(metrics, histograms, **options)
        loose = _asymptotic(metrics)
        reached["asymptotic" if loose else "exact"] += 1
        _same("comparison", was, now, loose)
        for name in FORMATS:
            for show_all in (False, True):
                render_options = RenderOptions(show_all=show_all)
                before = render(
                    _report(was, options["alpha"], options["margin_pct"]), name, render_options
                )
                after = render(
                    _report(now, options["alpha"], options["margin_pct"]), name, render_options
                )
                if name == "json":  # every digit of every float: p-values loosely, as above
                    _same_json("json", json.loads(before), json.loads(after), loose)
                else:
                    assert before == after, name
    assert reached["asymptotic"] > 0 and reached["exact"] > 0  # both kinds of table were seen


def test_single_metric_path_equals_old() -> None:
    """`compare_metric` (history, the registry) at a chosen interval level, too."""
    rng = np.random.default_rng(77)
    for _ in range(60):
        metrics, _, options = random_table(rng)
        for item in metrics:
            for level in (options["alpha"], options["alpha"] / 7):
                was = old.compare_metric(
                    item,
                    alpha=options["alpha"],
                    margin_pct=options["margin_pct"],
                    interval_alpha=level,
                )
                now = new.compare_metric(
                    item,
                    alpha=options["alpha"],
                    margin_pct=options["margin_pct"],
                    interval_alpha=level,
                )
                _same(item.name, was, now, len(item.a) + len(item.b) > 60)


def test_normal_cdf_and_quantile_match_scipy() -> None:
    """The standard library's normal functions against scipy's, tails included."""
    from scipy import special

    from iolab.stats.normal import ndtr, ppf

    zs = np.concatenate([np.linspace(-38, 38, 2001), [0.0, -0.0, np.inf, -np.inf]])
    for z in zs:
        assert math.isclose(ndtr(float(z)), float(special.ndtr(z)), rel_tol=1e-9, abs_tol=1e-300)
    for p in (1e-12, 0.001, 0.025, 0.05, 0.2, 0.5, 0.8, 0.95, 0.975, 0.999):
        assert math.isclose(ppf(p), float(special.ndtri(p)), rel_tol=1e-14)
    assert math.isnan(ndtr(math.nan))


def test_graphical_holm_equals_old() -> None:
    """The per-family form of the graphical Holm procedure against the k x k matrix form,
    bit for bit: family sizes 0 to 40, tied p-values, shares 0 to 0.5."""
    from iolab.stats.multiple import graphical_holm
    from stats_v0.multiple import graphical_holm as old_holm

    rng = np.random.default_rng(5)
    for _ in range(300):
        primary = [float(v) for v in rng.uniform(0, 0.2, int(rng.integers(0, 6)))]
        secondary = [float(v) for v in rng.beta(0.3, 1.0, int(rng.integers(0, 40)))]
        if secondary and rng.random() < 0.3:
            secondary[: len(secondary) // 2] = [secondary[0]] * (len(secondary) // 2)
        share = float(rng.choice([0.0, 0.2, 0.5]))
        assert graphical_holm(primary, secondary, share) == old_holm(primary, secondary, share)
