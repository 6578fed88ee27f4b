"""`iolab bisect --format table|markdown`: the answer first, then how it was reached.

User text (commit subjects, authors) is printed with control characters replaced, and
escaped for markdown tables."""

from __future__ import annotations

from iolab.model.bisect import Commit, TestSummary
from iolab.report.bisect_model import BisectReport
from iolab.report.fmt import pct, sequence_ci
from iolab.report.model import SIGNIFICANT

# evidence rows shown; the JSON and `iolab compare` have them all
MAX_EVIDENCE = 12

_HEADLINE = {
    "found": "FOUND",
    "range": "RANGE",
    "no regression": "NO REGRESSION BETWEEN THE ENDS",
    "not known": "NOT KNOWN",
}


def _safe(text: str) -> str:
    return "".join(ch if ch.isprintable() else "?" for ch in text)


def _c(c: Commit | None) -> str:
    if c is None:
        return "?"
    return f"{c.sha[:12]} {_safe(c.subject)!r} ({c.author_date[:10]})"


def _interval(lo: float | None, hi: float | None) -> str:
    """The confidence sequence; a side still at the searched range's edge is unbounded."""
    return "[?, ?]" if lo is None or hi is None else sequence_ci(lo, hi)


def _test(t: TestSummary | None, what: str) -> str | None:
    if t is None:
        return None
    return (
        f"{what}: {pct(t.estimate_pct)} {_interval(t.ci_low_pct, t.ci_high_pct)} "
        f"{t.verdict} after {t.blocks} blocks (evidence {t.e_value:.3g}, need {1 / t.alpha:g})"
    )


_GRADED = {"classify": "between the ends", "randomized": "by randomization"}


def sections(r: BisectReport) -> tuple[list[str], list[list[str]], list[list[str]]]:
    """(summary lines, step rows, evidence rows)."""
    o = r.outcome
    lines = [
        f"iolab bisect run {r.run_id} ({r.status}): {r.kpi}, {r.direction} is better, "
        f"alpha {r.alpha:g}, {r.search} search, steps graded {_GRADED[r.grade]}",
        f"good {_c(r.good)}",
        f"bad  {_c(r.bad)}",
        f"{r.candidates} candidate commit(s) on bad's first-parent history",
        "",
        f"{_HEADLINE[o.kind]}: {_safe(o.reason)}",
    ]
    if o.kind == "found":
        culprit, parent = r.commit(o.first), r.commit((o.first or 0) - 1)
        lines += [f"culprit {_c(culprit)}", f"  author {_safe(culprit.author) if culprit else '?'}"]
        lines.append(f"parent  {_c(parent)}")
    elif o.first is not None and o.last is not None:
        lines.append(f"the first bad commit is one of {o.last - o.first + 1}:")
        for i in range(o.first, o.last + 1):
            why = " (unbuildable)" if i in o.unbuildable else ""
            lines.append(f"  {_c(r.commit(i))}{why}")
    for t, what in ((o.ends, "ends (bad vs good)"), (o.verify, "verification (vs parent)")):
        text = _test(t, what)
        if text:
            lines.append(text)
    lines.append(f"{o.samples} runs in {o.blocks} blocks")
    for i in o.unbuildable:
        c = r.commits.get(i)
        if c is not None:
            lines.append(f"unbuildable {c.sha[:12]}: {_safe(r.builds.get(c.sha, ''))}")
    lines += [f"warning: {_safe(w)}" for w in o.warnings]
    lines += [f"recorded on regression {n} (iolab regressions)" for n in r.registry]
    steps = [
        [
            str(s.step),
            _c(r.commit(s.index)),
            str(s.blocks),
            pct(s.vs_good_pct),
            pct(s.vs_bad_pct),
            f"{s.e_like_bad:.3g} / {s.e_like_good:.3g}",
            f"{s.alpha:.3g}",
            s.verdict,
        ]
        for s in o.steps
    ]
    moved: list[list[str]] = []
    if r.evidence is not None:
        for g in r.evidence.groups:
            # the KPIs, then counters (mechanism), then the rest; largest moves first
            ranked = sorted(
                (m for m in g.comparison.metrics if m.verdict in SIGNIFICANT),
                key=lambda m: (not m.kpi, m.direction.value != "neutral", -abs(m.change_pct or 0)),
            )
            for m in ranked:
                if True:
                    moved.append(
                        [
                            m.name,
                            pct(m.change_pct),
                            f"[{pct(m.ci_low_pct)}, {pct(m.ci_high_pct)}]",
                            m.verdict,
                        ]
                    )
            for h in g.comparison.histogram_shifts:
                if h.verdict == "changed":
                    moved.append(
                        [
                            h.name,
                            f"TV {h.total_variation:.2f}",
                            f"mean {h.mean_a:.3g}→{h.mean_b:.3g}"
                            if h.mean_a is not None and h.mean_b is not None
                            else "",
                            h.verdict,
                        ]
                    )
    return lines, steps, moved


STEP_HEADERS = [
    "step",
    "commit",
    "blocks",
    "vs good",
    "vs bad",
    "evidence bad/good",
    "alpha",
    "verdict",
]
EVIDENCE_HEADERS = ["metric", "change", "interval", "verdict"]


def _table(headers: list[str], rows: list[list[str]], sep: str) -> list[str]:
    widths = [max(len(x) for x in col) for col in zip(headers, *rows, strict=False)]
    fmt = [row for row in [headers, *rows]]
    out = [
        sep.join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in fmt
    ]
    return out


def render_table(r: BisectReport) -> str:
    lines, steps, moved = sections(r)
    out = list(lines)
    if steps:
        out += ["", "steps (candidate against both ends, randomized blocks):"]
        out += ["  " + x for x in _table(STEP_HEADERS, steps, "  ")]
    if moved:
        out += ["", "what moved between parent and culprit (iolab compare, corrected):"]
        out += ["  " + x for x in _table(EVIDENCE_HEADERS, moved[:MAX_EVIDENCE], "  ")]
        if len(moved) > MAX_EVIDENCE:
            out.append(f"  ... {len(moved) - MAX_EVIDENCE} more: {compare_hint(r)}")
    return "\n".join(out) + "\n"


def compare_hint(r: BisectReport) -> str:
    v = r.outcome.verify
    if v is None:
        return ""
    a, b = r.commits[v.a].sha, r.commits[v.b].sha
    return f"iolab compare run:{r.run_id}/variant={a} run:{r.run_id}/variant={b}"


def _md_row(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def render_markdown(r: BisectReport) -> str:
    lines, steps, moved = sections(r)
    title = f"iolab bisect run {r.run_id}: {_HEADLINE[r.outcome.kind].lower()}"
    out = [title, "=" * len(title), ""]
    out += [f"{line}  " if line else "" for line in lines[1:]]
    for heading, headers, rows in (
        ("Steps", STEP_HEADERS, steps),
        ("What moved between parent and culprit", EVIDENCE_HEADERS, moved),
    ):
        if rows:
            out += [
                "",
                heading,
                "-" * len(heading),
                "",
                _md_row(headers),
                "|" + "---|" * len(headers),
            ]
            out += [_md_row(row) for row in rows]
    return "\n".join(out) + "\n"
