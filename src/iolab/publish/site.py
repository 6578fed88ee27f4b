"""`iolab publish DIR`: a static site of a whole store, served by any static web server or
opened from disk.

    DIR/index.html, index-2.html, …   the runs, newest first, RUNS_PER_PAGE a page
    DIR/runs/N.html                   one self-contained report per run (as `iolab report N`)
    DIR/data/run-N.js                 a run's KPI samples, loaded by the index on demand
    DIR/history/…, registry.html      each label's history with change points; the registry
    DIR/site.json                     what was published: per run a fingerprint and its
                                      verdicts, so a re-publish skips finished runs that did
                                      not change and still lists their verdicts

No page holds more than one run's samples; the index loads a run's samples only when its
row is opened (a <script> element, which also works from file://, where fetch() does not).
Beyond the runs: the history of each label and the regression registry (`sections`); a new
kind of page is one template and one function in `_sections`.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from iolab import __version__
from iolab.analysis.build import Options
from iolab.analysis.select import Selector
from iolab.errors import IolabError, SelectorError
from iolab.model.sample import RunInfo
from iolab.publish import gather
from iolab.publish.files import write_atomically
from iolab.report import fmt, html, plots
from iolab.runs.meta import ab_settings
from iolab.store import open_store
from iolab.store.location import StoreLocation
from iolab.store.store import Store

RUNS_PER_PAGE = 100
MANIFEST = "site.json"
MAX_BADGES = 4  # KPI verdicts shown per run in the index; the run's page has them all


@dataclass(frozen=True)
class Brief:
    """One KPI verdict as the index shows it."""

    comparison: str
    metric: str
    change: str
    verdict: str
    css: str


@dataclass(frozen=True)
class Entry:
    """One row of the index."""

    id: int
    kind: str
    label: str
    status: str
    created: str
    samples: str
    tags: str
    host: str
    verdicts: tuple[Brief, ...]


@dataclass(frozen=True)
class Published:
    pages: int  # run pages written
    skipped: int  # unchanged finished runs whose page was kept
    runs: int
    seconds: float


@dataclass(frozen=True)
class Section:
    """A part of the site beyond the runs (history, registry): writes its pages, returns the
    link the header shows, or None when the store has nothing for it."""

    name: str
    build: Callable[[Store, Path], tuple[str, str] | None]


def _sections() -> tuple[Section, ...]:
    from iolab.publish import sections

    return (
        Section("history", sections.history_section),
        Section("regressions", sections.registry_section),
    )


def _site_version() -> str:
    """Pages depend on iolab and its templates: a new version re-renders everything."""
    digest = hashlib.sha256(__version__.encode())
    templates = Path(html.__file__).parent / "templates"
    for path in sorted(templates.glob("*.j2")):
        digest.update(path.read_bytes())
    here = Path(__file__).parent
    for module in (html.__file__, plots.__file__, gather.__file__, here / "sections.py"):
        digest.update(Path(module).read_bytes())
    return digest.hexdigest()[:16]


def _fingerprint(run: RunInfo) -> str:
    facts = [
        run.status,
        run.n_samples,
        run.n_failed,
        run.finished_at.isoformat() if run.finished_at else None,
        run.label,
        sorted(run.tags.items()),
        run.meta,
    ]
    return hashlib.sha256(json.dumps(facts, sort_keys=True, default=str).encode()).hexdigest()


def publish(db: StoreLocation, out_dir: str | Path, jobs: int | None = None) -> Published:
    """Write (or bring up to date) the site of store `db` in `out_dir`."""
    started = time.monotonic()
    out = Path(out_dir)
    if out.is_dir() and not (out / MANIFEST).exists() and _foreign(out):
        raise IolabError(f"{out}: holds files that are not an iolab site; give an empty directory")
    try:
        (out / "runs").mkdir(parents=True, exist_ok=True)
        (out / "data").mkdir(exist_ok=True)
    except OSError as exc:
        raise IolabError(f"{out}: cannot create the site directory ({exc.strerror})") from None
    version = _site_version()
    old = _read_manifest(out)
    old_runs: dict[str, Any] = old.get("runs", {}) if old.get("version") == version else {}
    store = open_store(db, must_exist=True)
    try:
        runs = store.runs()
        links = [link for s in _sections() if (link := s.build(store, out)) is not None]
    finally:
        store.close()
    todo: list[int] = []
    entries: dict[int, Entry] = {}
    prints: dict[int, str] = {}
    for run in runs:
        prints[run.id] = _fingerprint(run)
        known = old_runs.get(str(run.id))
        page = out / "runs" / f"{run.id}.html"
        if (
            known
            and known.get("fingerprint") == prints[run.id]
            and run.status != "running"
            and page.exists()
        ):
            entries[run.id] = _entry_from_json(known["entry"])
        else:
            todo.append(run.id)
    by_id = {r.id: r for r in runs}
    for run_id, verdicts in _render_all(db, out, todo, jobs):
        entries[run_id] = _entry(by_id[run_id], verdicts)
    keep = {f"{r.id}.html" for r in runs}
    for stale in (out / "runs").glob("*.html"):
        if stale.name not in keep:
            stale.unlink()
    ordered = [entries[r.id] for r in reversed(runs)]
    _write_index(out, ordered, links)
    manifest = {
        "version": version,
        "runs": {str(e.id): {"fingerprint": prints[e.id], "entry": asdict(e)} for e in ordered},
    }
    write_atomically(out / MANIFEST, json.dumps(manifest, indent=1))
    return Published(
        pages=len(todo),
        skipped=len(runs) - len(todo),
        runs=len(runs),
        seconds=time.monotonic() - started,
    )


def _foreign(out: Path) -> bool:
    ours = {"index.html", "runs", "data", "history", "registry.html", MANIFEST}
    return any(
        p.name not in ours and not (p.name.startswith("index-") and p.suffix == ".html")
        for p in out.iterdir()
    )


def _read_manifest(out: Path) -> dict[str, Any]:
    try:
        data = json.loads((out / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _entry_from_json(data: dict[str, Any]) -> Entry:
    return Entry(**{**data, "verdicts": tuple(Brief(**b) for b in data["verdicts"])})


def _entry(run: RunInfo, verdicts: Sequence[Brief]) -> Entry:
    samples = str(run.n_samples) + (f" ({run.n_failed} failed)" if run.n_failed else "")
    return Entry(
        id=run.id,
        kind=run.kind,
        label=run.label or "",
        status=run.status,
        created=run.created_at.strftime("%Y-%m-%d %H:%M"),
        samples=samples,
        tags=" ".join(f"{k}={v}" for k, v in sorted(run.tags.items())),
        host=run.host or "",
        verdicts=tuple(verdicts),
    )


# ------------------------------------------------------------------------------ run pages


def _render_all(
    db: StoreLocation, out: Path, run_ids: Sequence[int], jobs: int | None
) -> list[tuple[int, list[Brief]]]:
    """Render run pages, in worker processes when there are many (the statistics and the
    figures are CPU-bound; each worker opens the store itself)."""
    if not run_ids:
        return []
    workers = max(1, min(jobs or os.cpu_count() or 1, len(run_ids) // 4 or 1))
    if workers == 1:
        return _render_chunk(db, str(out), list(run_ids))
    chunks = [list(run_ids[i::workers]) for i in range(workers)]
    html.warm_up()  # import matplotlib/scipy once, before forking
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        results = pool.map(_render_chunk, [db] * workers, [str(out)] * workers, chunks)
        return [item for chunk in results for item in chunk]


def _render_chunk(
    db: StoreLocation, out_dir: str, run_ids: list[int]
) -> list[tuple[int, list[Brief]]]:
    out = Path(out_dir)
    done = []
    with open_store(db, must_exist=True) as store:
        for run_id in run_ids:
            done.append((run_id, _render_run(store, out, store.run(run_id))))
    return done


def _options(run: RunInfo) -> Options:
    """The run's own alpha and margin for ab runs (what it decided with), else defaults."""
    if run.kind == "ab":
        try:
            settings = ab_settings(run)
        except IolabError:
            return Options()
        return Options(alpha=settings.alpha, margin_pct=settings.margin_pct)
    return Options()


def _render_run(store: Store, out: Path, run: RunInfo) -> list[Brief]:
    links = (("all runs", "../index.html"),)
    sel = Selector(f"run:{run.id}", run_id=run.id)
    title = f"run {run.id}" + (f": {run.label}" if run.label else "")
    verdicts: list[Brief] = []
    text: str
    try:
        page = gather.by_html(
            store, sel, "variant", None, _options(run), title=title, sequential=run.kind == "ab"
        )
    except SelectorError:
        page = None
    if page is not None:
        page = html.with_links(page, links)
        text = html.render(page)
        several = len(page.report.groups) > 1
        for group, m in page.report.kpis():
            verdicts.append(
                Brief(
                    comparison=group.title if several else f"{group.b_name} vs {group.a_name}",
                    metric=m.name,
                    change=fmt.pct(m.change_pct),
                    verdict=m.verdict,
                    css=html.VERDICT_CLASS.get(m.verdict, "inconclusive"),
                )
            )
        write_atomically(out / "data" / f"run-{run.id}.js", _series_script(run.id, page))
    else:
        text = html.render_page("run.html.j2", page=gather.run_summary(store, run), links=links)
        (out / "data" / f"run-{run.id}.js").unlink(missing_ok=True)
    write_atomically(out / "runs" / f"{run.id}.html", text)
    return verdicts


def _series_script(run_id: int, page: Any) -> str:
    """The run's KPI samples (A and B by block) for the index's on-demand sparkline."""
    series = []
    for group, detail in zip(page.report.groups, page.details, strict=True):
        for ks in detail.samples:
            series.append(
                {
                    "title": f"{group.title}: {ks.metric}",
                    "a": [v for _, v in ks.a],
                    "b": [v for _, v in ks.b],
                }
            )
    payload = json.dumps({"run": run_id, "series": series}).replace("</", "<\\/")
    return f"window.iolabSeries && window.iolabSeries({payload});\n"


# ---------------------------------------------------------------------------------- index


def _write_index(out: Path, entries: Sequence[Entry], links: Sequence[tuple[str, str]]) -> None:
    pages = max(1, -(-len(entries) // RUNS_PER_PAGE))
    names = ["index.html", *(f"index-{i}.html" for i in range(2, pages + 1))]
    for i, name in enumerate(names):
        chunk = entries[i * RUNS_PER_PAGE : (i + 1) * RUNS_PER_PAGE]
        text = html.render_page(
            "site_index.html.j2",
            entries=chunk,
            total=len(entries),
            page_number=i + 1,
            page_names=names,
            links=links,
            max_badges=MAX_BADGES,
        )
        write_atomically(out / name, text)
    for extra in out.glob("index-*.html"):
        if extra.name not in names:
            extra.unlink()
