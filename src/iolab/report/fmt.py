"""Number and unit formatting shared by the text formats (one rule, so every format shows
the same digits for the same figure)."""

from __future__ import annotations

from iolab.stats.types import MetricComparison

_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
_BIN = ((2.0**40, "Ti"), (2.0**30, "Gi"), (2.0**20, "Mi"), (2.0**10, "Ki"))
_TIME = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"))


def sig(v: float, digits: int = 4) -> str:
    """`digits` significant digits, no exponent for ordinary magnitudes."""
    if v == 0:
        return "0"
    text = f"{v:.{digits}g}"
    if "e" in text:
        mantissa, exp = text.split("e")
        if -5 < int(exp) < digits + 3:
            return f"{v:.{max(0, digits - 1 - int(exp))}f}"
        return f"{mantissa}e{int(exp)}"
    return text


def num(v: float) -> str:
    """12600 → 12.6k, 1234567 → 1.235M, 7.891 → 7.891."""
    for limit, suffix in _SI:
        if abs(v) >= limit:
            return f"{sig(v / limit)}{suffix}"
    return sig(v)


def value(v: float, unit: str) -> str:
    """A value with its unit, scaled: ns → µs/ms/s, bytes → KiB/MiB…, others SI."""
    if unit == "ns":
        for limit, name in _TIME:
            if abs(v) >= limit:
                return f"{sig(v / limit)}{name}"
        return f"{sig(v)}ns"
    if unit in ("B", "B/s"):
        rest = unit[1:]
        for limit, prefix in _BIN:
            if abs(v) >= limit:
                return f"{sig(v / limit)}{prefix}B{rest}"
        return f"{sig(v)}B{rest}"
    if unit == "%":
        return f"{sig(v, 3)}%"
    if unit in ("s", "ms"):
        return f"{sig(v)}{unit}"
    return num(v)


def pct(v: float | None, signed: bool = True) -> str:
    """A relative change: +3.21%, -12.3%; "—" when unknown."""
    if v is None:
        return "—"
    digits = 2 if round(abs(v), 2) < 10 else 1
    return f"{v:+.{digits}f}%" if signed else f"{v:.{digits}f}%"


def ci(lo: float | None, hi: float | None) -> str:
    if lo is None or hi is None:
        return "—"
    return f"[{pct(lo)}, {pct(hi)}]"


def sequence_ci(lo: float | None, hi: float | None) -> str:
    """A confidence sequence's interval (`iolab ab`, `bisect`): a side still at the edge of the
    range the sequence searches (stats.sequential.edge_pct) has not been measured, so
    it is shown unbounded — "[+12.0%, ≥+300.0%]", not "[+12.0%, +300.0%]"."""
    if lo is None or hi is None:
        return "—"
    from iolab.stats.sequential import edge_pct

    edge_lo, edge_hi = edge_pct()
    low = f"≤{pct(lo)}" if lo <= edge_lo + 1e-9 else pct(lo)
    high = f"≥{pct(hi)}" if hi >= edge_hi - 1e-9 else pct(hi)
    return f"[{low}, {high}]"


def p_value(p: float | None) -> str:
    if p is None:
        return "—"
    if p < 1e-300:
        return "<1e-300"  # underflowed: smaller than a double can say
    return f"{p:.1e}" if p < 0.001 else f"{p:.3f}"


def cv(v: float | None) -> str:
    return "—" if v is None else f"{100 * v:.1f}%"


def verdict(m: MetricComparison) -> str:
    """The verdict as a reader wants it: with the margin, or what would settle it."""
    if m.verdict == "no change":
        return f"no change (±{m.margin_pct:g}%)"
    if m.verdict == "inconclusive":
        if m.runs_needed is not None:
            return f"inconclusive (~{m.runs_needed} more runs/side)"
        return "inconclusive"
    return m.verdict


def brief_number(value: float | None) -> str:
    """A metric in a listing: thousands separated from 100 up, 3 significant digits below."""
    if value is None:
        return ""
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"
