"""The HTML report and the published site, opened in a real headless Chromium from disk:
no request leaves file://, no console message, the verdicts and figures are in the DOM, the
screenshot is not blank, and hostile labels show as text without running.

The store is built with known data (as in test_report_formats): B = 0.9 × A × exp(±0.1..0.5%)
per block, so every KPI verdict is a regression of -10% that the page must show.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from browser import Browser, chromium, not_blank, url
from iolab.analysis.build import Options
from iolab.analysis.select import Selector
from iolab.cli.main import cli
from iolab.model.sample import Sample
from iolab.publish import gather
from iolab.store import open_store

EPS = [-0.005, 0.004, -0.003, 0.002, -0.001, 0.001, -0.002, 0.003, -0.004, 0.005]
HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'
HOSTILE_VARIANT = "<b onmouseover=alert(3)>b</b>"
NIGHTLY = "<script>alert(4)</script> nightly"  # no '"': a selector cannot name such a label


def add_run(
    db: str,
    kind: str,
    *,
    blocks: int,
    label: str | None = None,
    variant_b: str = "b",
    tags: dict[str, str] | None = None,
) -> int:
    meta: dict[str, object] = {
        "kpis": [{"metric": "write.iops", "direction": "higher"}],
        "baseline": "a",
    }
    if kind == "ab":
        meta["ab"] = {"alpha": 0.05, "margin_pct": 1.0, "max_blocks": 40, "stake_blocks": 40}
    with open_store(db) as store:
        run_id = store.create_run(kind, label=label, tags=tags, meta=meta, host="testhost")
        for block in range(1, blocks + 1):
            a = 10000.0 * (1 + 0.05 * math.sin(block))
            b = a * 0.9 * math.exp(EPS[(block - 1) % len(EPS)])
            for variant, value, hist, lat in (
                ("a", a, {1.0: 80, 2.0: 15, 4.0: 5}, {1000.0: 50, 2000.0: 40, 10000.0: 10}),
                (variant_b, b, {1.0: 20, 2.0: 30, 4.0: 50}, {1000.0: 10, 2000.0: 40, 20000.0: 50}),
            ):
                store.add_sample(
                    Sample(
                        run_id=run_id,
                        variant=variant,
                        block=block,
                        metrics={"write.iops": value, "jbd2.handles_per_txn": 60 + block % 3},
                        histograms={"hist.writepages": hist, "write.clat_ns": lat},
                        provenance={
                            "kernel": "6.1.0-test",
                            "filesystem": "ext4",
                            "mkfs_options": ["-m", "1"],
                            "mount_options": ["rw,noatime"],
                            "fio_version": "3.33",
                            "settings": {"vm.dirty_ratio": "20" if variant == "a" else "10"},
                        },
                    )
                )
        store.finish_run(run_id)
    return run_id


def add_import(db: str, label: str) -> int:
    with open_store(db) as store:
        run_id = store.create_run("import", label=label)
        for v in (100.0, 104.0, 98.0):
            store.add_sample(Sample(run_id=run_id, metrics={"write.iops": v}, source="r.json"))
        store.finish_run(run_id)
    return run_id


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("html")
    db = str(root / "store.db")
    ab = add_run(db, "ab", blocks=16, label="fdatasync vs fsync")
    lab = add_run(
        db, "lab", blocks=8, label=HOSTILE, variant_b=HOSTILE_VARIANT, tags={"k": HOSTILE}
    )
    imp = add_import(db, "baseline import")
    return {"root": root, "db": db, "ab": ab, "lab": lab, "import": imp}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as b:
        yield b


def invoke(db: str, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--db", db, *args])
    return result.exit_code, result.stdout, result.stderr


def expected_verdicts(db: str, run_id: int, sequential: bool) -> list[str]:
    with open_store(db) as st:
        page = gather.by_html(
            st,
            Selector(f"run:{run_id}", run_id=run_id),
            "variant",
            None,
            Options(),
            sequential=sequential,
        )
    return [m.verdict for _, m in page.report.kpis()]


# ------------------------------------------------------------------------ without a browser


def test_report_is_reproducible_and_self_contained(store: dict[str, object]) -> None:
    db, root = str(store["db"]), Path(str(store["root"]))
    first, second = root / "one.html", root / "two.html"
    for path in (first, second):
        code, _, err = invoke(db, "report", str(store["ab"]), "--html", str(path))
        assert code == 0, err
    text = first.read_text()
    assert text == second.read_text()
    assert "<script" not in text.lower()
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:|//)""", text)
    assert "@import" not in text and "url(http" not in text
    ids = re.findall(r'\bid="([^"]+)"', text)
    assert len(ids) == len(set(ids)), "two figures share an SVG id"


def test_sequential_path_ends_where_the_decision_ended(store: dict[str, object]) -> None:
    with open_store(str(store["db"])) as st:
        run_id = int(str(store["ab"]))
        page = gather.by_html(
            st,
            Selector(f"run:{run_id}", run_id=run_id),
            "variant",
            None,
            Options(),
            sequential=True,
        )
    (detail,) = page.details
    (trace,) = detail.traces
    (_, kpi) = page.report.kpis()[0]
    assert trace.verdict == kpi.verdict == "regression"
    assert trace.stopped_at is not None and trace.points[-1].block == trace.stopped_at
    assert trace.points[-1].estimate_pct == pytest.approx(kpi.change_pct)
    assert trace.points[-1].ci_high_pct == pytest.approx(kpi.ci_high_pct)


def test_moved_alone_but_not_after_the_correction_is_shown_apart(tmp_path: Path) -> None:
    """Six blocks where 30 counters rise tenfold in every block while the KPI stays: each
    paired test alone gives p = 2/64, and so does the joint correction (2 of the 64 joint
    sign flips match), above the 0.2 x 0.05 the evidence gets while the KPI is undecided.
    The page lists them apart (with p and p adj) instead of leaving only "none after the
    correction"; a counter that did not move is not among them."""
    db = str(tmp_path / "alone.db")
    with open_store(db) as st:
        run_id = st.create_run("lab", meta={"kpis": [{"metric": "write.iops"}], "baseline": "a"})
        for block in range(1, 7):
            for variant, scale in (("a", 1.0), ("b", 10.0)):
                metrics = {"write.iops": 1000.0 + block, "flat.counter": 5.0 + block % 2}
                metrics |= {f"moved.c{i:02d}": scale * (100.0 + i + block) for i in range(30)}
                st.add_sample(Sample(run_id=run_id, variant=variant, block=block, metrics=metrics))
        st.finish_run(run_id)
    page = tmp_path / "alone.html"
    code, _, err = invoke(db, "report", str(run_id), "--html", str(page))
    assert code == 0, err
    html = page.read_text()
    assert "none after the correction." in html
    assert "After Westfall–Young step-down max-T over all 64 joint sign flips" in html
    assert "on their own, not after the correction for the table" in html
    listed = set(re.findall(r"<code>(moved\.c\d\d)</code>", html))
    assert len(listed) == 12 and "flat.counter" not in html.split("on their own")[1]


def test_compare_html_and_bad_input(store: dict[str, object]) -> None:
    db, root = str(store["db"]), Path(str(store["root"]))
    run_id = store["ab"]
    code, out, _ = invoke(db, "compare", f"{run_id}:a", f"{run_id}:b", "--format", "html", "--ci")
    assert code == 10  # a KPI regressed
    assert "<svg" in out and "regression" in out
    target = root / "nothing.html"
    code, _, err = invoke(db, "report", "run:999", "--html", str(target))
    assert code == 2 and err.count("\n") == 1 and "no run 999" in err
    assert not target.exists()
    code, _, err = invoke(db, "report", str(run_id), "--html", str(root / "no/such/dir/r.html"))
    assert code == 2 and err.startswith("iolab: ") and "cannot write" in err


def test_publish_is_incremental(store: dict[str, object], tmp_path: Path) -> None:
    db = str(tmp_path / "copy.db")
    add_run(db, "lab", blocks=4, label="one")
    add_import(db, "two")
    site = tmp_path / "site"
    code, out, err = invoke(db, "publish", str(site))
    assert code == 0, err
    assert "2 page(s) written" in out
    code, out, _ = invoke(db, "publish", str(site))
    assert "0 page(s) written, 2 unchanged kept" in out
    add_import(db, "three")
    with open_store(db) as st:
        st.delete_run(1)
    code, out, _ = invoke(db, "publish", str(site))
    assert "1 page(s) written, 1 unchanged kept" in out
    assert sorted(p.name for p in (site / "runs").iterdir()) == ["2.html", "3.html"]
    manifest = json.loads((site / "site.json").read_text())
    assert sorted(manifest["runs"]) == ["2", "3"]
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    code, _, err = invoke(db, "publish", str(tmp_path / "other"))
    assert code == 2 and "not an iolab site" in err
    assert sorted(p.name for p in (tmp_path / "other").iterdir()) == ["notes.txt"]


# --------------------------------------------------------------------------- in Chromium


def test_report_in_chromium(store: dict[str, object], browser: Browser) -> None:
    db, root = str(store["db"]), Path(str(store["root"]))
    run_id = int(str(store["ab"]))
    path = root / "ab.html"
    assert invoke(db, "report", str(run_id), "--html", str(path))[0] == 0
    with browser.visit(url(path), height=1400) as visit:
        page = visit.page
        shown = page.locator("table.verdicts .verdict").all_inner_texts()
        assert shown == expected_verdicts(db, run_id, sequential=True) == ["regression"]
        # samples by block + distributions, the sequential path, the histogram shift
        assert page.locator("figure svg").count() == 3
        assert page.locator("figure svg").first.bounding_box()["width"] > 400
        assert "hist.writepages" in page.locator("body").inner_text()
        stddev, inked = not_blank(page.screenshot(full_page=True))
        assert stddev > 8 and inked > 0.01  # a blank page: 0 and 0
        visit.assert_clean()
        assert visit.requests == [url(path)]


def test_hostile_labels_show_as_text(store: dict[str, object], browser: Browser) -> None:
    db, root = str(store["db"]), Path(str(store["root"]))
    run_id = int(str(store["lab"]))
    site = root / "site"
    assert invoke(db, "publish", str(site))[0] == 0
    for page_path in (site / "runs" / f"{run_id}.html", site / "index.html"):
        with browser.visit(url(page_path)) as visit:
            page = visit.page
            text = page.locator("body").inner_text()
            assert HOSTILE in text  # the label, and the tag, as the user wrote them
            assert page.locator("img").count() == 0
            assert page.locator("script").count() == (1 if page_path.name == "index.html" else 0)
            assert page.evaluate("document.querySelectorAll('b[onmouseover]').length") == 0
            if page_path.name != "index.html":
                assert HOSTILE in page.title()
                # the variant name inside the figure's SVG legend is SVG text, not markup
                legend = page.locator("figure svg text").all_text_contents()
                assert HOSTILE_VARIANT in legend
            page.mouse.move(200, 200)
            visit.assert_clean()


def test_site_in_chromium(store: dict[str, object], browser: Browser) -> None:
    db, root = str(store["db"]), Path(str(store["root"]))
    site = root / "site2"
    code, _, err = invoke(db, "publish", str(site))
    assert code == 0, err
    with browser.visit(url(site / "index.html")) as visit:
        page = visit.page
        rows = page.locator("table.runs tr:not(.series)")
        assert rows.count() == 1 + 3  # header + runs, newest first
        assert rows.nth(1).locator("td").first.inner_text() == str(store["import"])
        ab_row = page.locator("tr", has=page.locator(f'a[href="runs/{store["ab"]}.html"]'))
        assert ab_row.locator(".verdict").all_inner_texts()[0].endswith("regression")
        assert f"data/run-{store['ab']}.js" not in " ".join(visit.requests)  # not yet
        ab_row.locator("button.samples").click()
        page.locator(f"#s{store['ab']} svg").wait_for()
        assert any(r.endswith(f"data/run-{store['ab']}.js") for r in visit.requests)
        stddev, inked = not_blank(page.screenshot())
        assert stddev > 8 and inked > 0.01  # a blank page: 0 and 0
        page.locator(f'a[href="runs/{store["ab"]}.html"]').click()
        page.wait_for_load_state("load")
        assert page.locator("figure svg").count() == 3
        assert page.locator("table.verdicts .verdict").all_inner_texts() == ["regression"]
        page.locator("nav a").click()
        page.wait_for_load_state("load")
        page.locator(f'a[href="runs/{store["import"]}.html"]').click()
        page.wait_for_load_state("load")
        assert "No comparison within this run" in page.locator("body").inner_text()
        visit.assert_clean()


def test_history_and_registry_pages(browser: Browser, tmp_path: Path) -> None:
    """A label whose runs step down 10% gets a history page with the change point; the
    regression `compare` recorded is on the registry page; both are linked from the index."""
    db = str(tmp_path / "h.db")
    start = datetime(2026, 11, 1, tzinfo=UTC)
    with open_store(db) as st:
        for i, v in enumerate([100, 102, 99, 101, 100, 98, 90, 91, 89, 90, 92, 90]):
            run_id = st.create_run("import", label=NIGHTLY)
            st.add_sample(
                Sample(
                    run_id=run_id,
                    metrics={"write.iops": v * 100.0},
                    source="r.json",
                    started_at=start + timedelta(days=i),
                )
            )
            st.finish_run(run_id)
    ab = add_run(db, "ab", blocks=16)
    assert invoke(db, "compare", f"{ab}:a", f"{ab}:b", "--record")[0] == 0  # the regression
    site = tmp_path / "site"
    assert invoke(db, "publish", str(site))[0] == 0
    with browser.visit(url(site / "index.html")) as visit:
        page = visit.page
        assert page.locator("nav a").all_inner_texts() == ["history", "regressions"]
        page.locator("nav a", has_text="history").click()
        page.wait_for_load_state("load")
        page.locator("table a").first.click()
        page.wait_for_load_state("load")
        assert NIGHTLY in page.locator("h1").inner_text()
        assert page.locator("figure svg").count() == 1
        assert page.locator("figcaption .verdict").all_inner_texts() == ["regression"]
        page.locator("nav a", has_text="all runs").click()
        page.wait_for_load_state("load")
        page.locator("nav a", has_text="regressions").click()
        page.wait_for_load_state("load")
        # compare's verdict; publishing never records (history's change point is not entered)
        assert page.locator("table .verdict").all_inner_texts() == ["open"]
        assert "compare" in page.locator("table").inner_text()
        assert page.locator("img").count() == 0
        visit.assert_clean()
