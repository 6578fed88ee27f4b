"""The terminal table lays out as rich's `Table` did, without rich.

`iolab compare` printed its table through rich until rich's import and layout engine were a
fifth of the command's time; `iolab.report.table` now computes the same layout itself.  The
oracle here is the old renderer, rich itself, on the same blocks: random tables (words of
every length, single-width Unicode and East Asian wide characters, empty cells, one to nine
columns, right-aligned columns) at widths from 30 to 220 cells, and the real report of a
100-metric comparison at the widths a terminal has.  Colour is the same text with SGR codes
around the words."""

from __future__ import annotations

import io
import random
import re
from pathlib import Path

import pytest
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from iolab.analysis.build import Options, pair_report
from iolab.analysis.select import parse_selector
from iolab.model.sample import Sample
from iolab.report.layout import Block, blocks
from iolab.report.model import Report
from iolab.report.options import RenderOptions
from iolab.report.table import cells, render, render_blocks
from iolab.store import open_store


def rich_render(report_blocks: list[Block], width: int) -> str:
    """The renderer iolab used before (rich), kept as the oracle: plain text, no colour."""
    out = io.StringIO()
    console = Console(
        file=out,
        force_terminal=False,
        no_color=True,
        color_system=None,
        width=width,
        highlight=False,
        emoji=False,
    )
    for block in report_blocks:
        if block.kind == "title":
            console.print(Text(block.text, style="bold"))
            for line in block.lines:
                console.print(Text(line))
        elif block.kind == "heading":
            console.print()
            console.rule(Text(block.text, style="bold"), align="left")
        elif block.kind == "table":
            console.print()
            table = Table(
                title=block.text or None,
                title_justify="left",
                title_style="bold",
                box=box.SIMPLE_HEAD,
                show_edge=False,
                pad_edge=False,
            )
            for i, header in enumerate(block.headers):
                table.add_column(
                    header,
                    justify="right" if i in block.right else "left",
                    no_wrap=i == 0,
                    overflow="fold",
                )
            for row in block.rows:
                table.add_row(*(Text(cell) for cell in row))
            console.print(table)
        else:
            console.print()
            if block.text:
                console.print(Text(block.text, style="bold"))
            for line in block.lines:
                console.print(Text(f"  {line}"))
    return "".join(line.rstrip() + "\n" for line in out.getvalue().splitlines())


# words as a comparison table has them, and some that are not (wide characters, long runs)
WORDS = (
    "write.clat_ns.p99.99",
    "no change (±1%)",
    "regression",
    "+4.95%",
    "[+2.08%, +7.88%]",
    "1.418KiB/s",
    "µs",
    "—",
    "α",
    "Westfall–Young",
    "8.5e-05",
    "50",
    "A",
    "",
    "x" * 37,
    "读写延迟",
    "ｆｕｌｌ",
    "a  b",
    " lead",
    "trail ",
)


def random_text(rng: random.Random, most: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, most))).strip(" ")


def random_blocks(rng: random.Random) -> list[Block]:
    out = [
        Block(kind="title", text=random_text(rng, 3), lines=[random_text(rng, 12)]),
        Block(kind="heading", text=random_text(rng, 6)),
    ]
    for _ in range(rng.randint(1, 3)):
        n = rng.randint(1, 9)
        rows = [[random_text(rng, 4) for _ in range(n)] for _ in range(rng.randint(0, 6))]
        out.append(
            Block(
                kind="table",
                text=random_text(rng, 8),
                headers=[random_text(rng, 2) or "h" for _ in range(n)],
                rows=rows,
                right={i for i in range(n) if rng.random() < 0.5},
                verdict_column=rng.randrange(n),
            )
        )
    out.append(Block(kind="lines", text=random_text(rng, 2), lines=[random_text(rng, 30)]))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_random_blocks_lay_out_as_rich_did(seed: int) -> None:
    rng = random.Random(seed)
    report_blocks = random_blocks(rng)
    for width in (30, 41, 57, 80, 100, 140, 220):
        assert render_blocks(report_blocks, width, False) == rich_render(report_blocks, width)


def test_cells_counts_terminal_columns() -> None:
    assert cells("abc") == 3
    assert cells("±1% µs –") == 8
    assert cells("读写") == 4
    assert cells("e\u0301") == 1  # a combining accent takes no cell


@pytest.fixture(scope="module")
def wide_report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    """A comparison of 80 metrics x 12 samples per side, some moved, some counters."""
    db = str(Path(tmp_path_factory.mktemp("table")) / "s.db")
    rng = random.Random(7)
    names = [f"write.clat_ns.p{p}" for p in (1, 5, 10, 50, 90, 99, 99.9)] + [
        f"vmstat.metric_{i}" for i in range(70)
    ]
    names += ["write.iops", "write.bw_bytes", "read.iops"]
    with open_store(db) as store:
        for label, shift in (("old", 1.0), ("new", 1.05)):
            run = store.create_run("import", label=label)
            for i in range(12):
                metrics = {
                    name: round(
                        10 ** (k % 6) * (shift if k % 3 == 0 else 1.0) * rng.uniform(0.95, 1.05), 3
                    )
                    for k, name in enumerate(names)
                }
                store.add_sample(
                    Sample(run_id=run, tool="fio", source=f"{label}-{i}", metrics=metrics)
                )
            store.finish_run(run)
        return pair_report(
            store, parse_selector("label:old"), parse_selector("label:new"), Options()
        )


@pytest.mark.parametrize("width", [80, 100, 120, 140, 200])
@pytest.mark.parametrize("show_all", [False, True])
def test_a_real_report_lays_out_as_rich_did(
    wide_report: Report, width: int, show_all: bool
) -> None:
    report_blocks = blocks(wide_report, show_all)
    ours = render(wide_report, RenderOptions(width=width, show_all=show_all))
    assert ours == rich_render(report_blocks, width)
    assert max(cells(line) for line in ours.splitlines()) <= width


def test_colour_is_the_same_text_with_sgr_codes(wide_report: Report) -> None:
    plain = render(wide_report, RenderOptions(width=140))
    coloured = render(wide_report, RenderOptions(width=140, color=True))
    assert "\x1b[1;31m" in coloured or "\x1b[1;32m" in coloured  # a verdict in colour
    assert "\x1b[1mKPIs\x1b[0m" in coloured
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == plain
