"""The site's pages beyond the runs: the history of every label with enough runs (series
with their change points) and the regression registry.  Each is a `site.Section`: one
function that writes its pages and returns the link the index shows.

Read-only: history is built with `record=False`, so publishing never opens registry entries.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from iolab.errors import IolabError
from iolab.history.service import history, regressions
from iolab.history.types import Series
from iolab.publish.files import write_atomically
from iolab.report import fmt, html, plots
from iolab.store.store import Store

MIN_RUNS = 3  # a label with fewer runs has no history worth a page
MAX_SERIES = 24  # per page: the KPI series; `iolab history` shows every metric


@dataclass(frozen=True)
class SeriesView:
    title: str
    case: str
    svg: str
    points: int
    change_points: tuple[tuple[str, str, str], ...]  # (where, change, kind)


@dataclass(frozen=True)
class HistoryLink:
    label: str
    href: str
    runs: int
    series: int
    change_points: int


def _case_text(s: Series) -> str:
    c = s.case
    parts = [f"plan {c.plan}" if c.plan else "", f"variant {c.variant}" if c.variant else ""]
    parts.append(",".join(f"{k}={v}" for k, v in sorted(c.cell.items())))
    parts.append(f"host {c.host}" if c.host else "")
    return " · ".join(p for p in parts if p) or "all results"


def _series_view(s: Series, salt: str) -> SeriesView:
    cps = tuple(
        (
            f"{cp.before.ref} → {cp.after.ref}",
            f"{fmt.pct(cp.change_pct)}"
            + (
                f" [{fmt.pct(cp.ci_low_pct)}, {fmt.pct(cp.ci_high_pct)}]"
                if cp.ci_low_pct is not None and cp.ci_high_pct is not None
                else ""
            ),
            cp.kind,
        )
        for cp in s.change_points
    )
    return SeriesView(s.metric, _case_text(s), plots.history_figure(s, salt), len(s.points), cps)


def history_section(store: Store, out: Path) -> tuple[str, str] | None:
    """history/index.html and one page per label with at least MIN_RUNS runs."""
    counts: dict[str, int] = {}
    for run in store.runs():
        if run.label:
            counts[run.label] = counts.get(run.label, 0) + 1
    labels = [label for label, n in counts.items() if n >= MIN_RUNS and '"' not in label]
    folder = out / "history"
    if not labels:
        return None
    folder.mkdir(exist_ok=True)
    links: list[HistoryLink] = []
    written = set()
    for i, label in enumerate(sorted(labels), start=1):
        try:
            h = history(store, f'label:"{label}"', record=False)
        except IolabError:
            continue  # nothing to draw for this label (e.g. no metric in common)
        kpi = [s for s in h.series if s.kpi][:MAX_SERIES]
        views = [_series_view(s, f"iolab-h{i}-{j}") for j, s in enumerate(kpi)]
        name = f"{i}.html"
        text = html.render_page(
            "history.html.j2",
            label=label,
            history=h,
            views=views,
            more=max(0, sum(1 for s in h.series if s.kpi) - len(kpi)),
            links=(("all runs", "../index.html"), ("history", "index.html")),
        )
        write_atomically(folder / name, text)
        written.add(name)
        links.append(
            HistoryLink(
                label,
                name,
                counts[label],
                len(views),
                sum(len(v.change_points) for v in views),
            )
        )
    write_atomically(
        folder / "index.html",
        html.render_page(
            "history_index.html.j2",
            entries=links,
            min_runs=MIN_RUNS,
            links=(("all runs", "../index.html"),),
        ),
    )
    for stale in folder.glob("*.html"):
        if stale.name != "index.html" and stale.name not in written:
            stale.unlink()
    return ("history", "history/index.html")


def registry_section(store: Store, out: Path) -> tuple[str, str] | None:
    """registry.html: every regression entry with its status, size and log."""
    entries = regressions(store)
    if not entries:
        (out / "registry.html").unlink(missing_ok=True)
        return None
    text = html.render_page(
        "registry.html.j2", entries=entries, links=(("all runs", "index.html"),)
    )
    write_atomically(out / "registry.html", text)
    return ("regressions", "registry.html")
