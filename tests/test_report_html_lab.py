"""A real quick `iolab ab` of the fsync/fdatasync example (real fio, ext4 on a loop device),
then its HTML report opened in Chromium; the sequential path the report replays from the
stored blocks ends exactly where the run's own decision ended (recorded in its meta)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from browser import chromium, not_blank, url
from iolab.analysis.build import Options
from iolab.analysis.select import Selector
from iolab.publish import gather
from iolab.store import open_store

pytestmark = pytest.mark.lab

PLAN = Path(__file__).parent.parent / "examples" / "ext4-fsync-vs-fdatasync.yaml"


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    env = dict(os.environ)
    env["IOLAB_DB"] = str(tmp_path / "store.db")
    env["IOLAB_JOURNAL_DIR"] = str(tmp_path / "journal")
    try:
        yield env
    finally:
        subprocess.run([sys.executable, "-m", "iolab", "cleanup"], env=env, capture_output=True)


def iolab(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "iolab", *args], env=env, capture_output=True, text=True, timeout=300
    )


def test_quick_ab_report_opens_in_chromium(env: dict[str, str], tmp_path: Path) -> None:
    done = iolab(env, "ab", "--quick", "--max-runs", "3", "-q", "--format", "json", str(PLAN))
    assert done.returncode == 0, done.stderr
    with open_store(env["IOLAB_DB"]) as store:
        (run,) = store.runs()
        page = gather.by_html(
            store,
            Selector(f"run:{run.id}", run_id=run.id),
            "variant",
            None,
            Options(),
            sequential=True,
        )
    (recorded,) = run.meta["ab_result"]["states"]
    (trace,) = page.details[0].traces
    last = trace.points[-1]
    assert (trace.verdict, last.block) == (recorded["verdict"], recorded["blocks"])
    assert last.estimate_pct == pytest.approx(recorded["estimate_pct"])
    assert last.ci_low_pct == pytest.approx(recorded["ci_low_pct"])

    report = tmp_path / "report.html"
    made = iolab(env, "report", str(run.id), "--html", str(report))
    assert made.returncode == 0, made.stderr
    with chromium() as browser, browser.visit(url(report), height=1600) as visit:
        shown = visit.page.locator("table.verdicts .verdict").all_inner_texts()
        assert shown == [recorded["verdict"]]
        assert visit.page.locator("figure svg").count() >= 2  # samples, sequential path
        for name in ("Provenance", "ext4", "fio 3", "Latency percentiles"):
            assert name in visit.page.locator("body").inner_text()
        stddev, inked = not_blank(visit.page.screenshot(full_page=True))
        assert stddev > 8 and inked > 0.01
        visit.assert_clean()
