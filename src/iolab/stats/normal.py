"""The standard normal distribution's CDF and quantile, from the standard library.

Why not scipy: importing `scipy.special` alone takes about as long as all of `iolab compare`
may (bench/compare_speed.py), and the rank tests need only these two functions.  The CDF is
written as Cephes' `ndtr` is (erf near 0, erfc in the tails, so small tail probabilities keep
their relative precision) on the C library's erf/erfc; it agrees with scipy's to ~1e-10
relative in the far tail and to the last bit or two elsewhere
(tests/test_compare_equivalence.py).
"""

from __future__ import annotations

import math
from functools import lru_cache

_SQRT1_2 = math.sqrt(0.5)


def ndtr(x: float) -> float:
    """P(Z <= x) for a standard normal Z (x may be ±inf; nan gives nan)."""
    if math.isnan(x):
        return math.nan
    t = x * _SQRT1_2
    z = abs(t)
    if z < _SQRT1_2:
        return 0.5 + 0.5 * math.erf(t)
    y = 0.5 * math.erfc(z)
    return 1.0 - y if t > 0 else y


@lru_cache(maxsize=64)  # a table asks for the same few levels again and again
def ppf(p: float) -> float:
    """The x with P(Z <= x) = p, 0 < p < 1 (Wichura's AS241, as `statistics` computes it).

    `statistics.NormalDist().inv_cdf` hands the work to the C function of `_statistics`;
    calling that directly gives the same bits without the 5-10 ms `statistics` costs to
    import (fractions, decimal, random), which every comparison with an inconclusive
    verdict would otherwise pay.  An interpreter without the accelerator takes the
    documented path."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"ppf needs 0 < p < 1, got {p}")
    try:
        from _statistics import _normal_dist_inv_cdf  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - CPython always builds it
        from statistics import NormalDist

        return NormalDist().inv_cdf(p)
    return float(_normal_dist_inv_cdf(p, 0.0, 1.0))
