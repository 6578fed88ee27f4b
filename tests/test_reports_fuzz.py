"""Property tests of the comparison-table readers: whatever the text — arbitrary, or real
robot/mmtests/fsperf/benchstat mails cut, spliced, re-wrapped and with figures replaced by
junk — they return tables (every number finite, or None) and never raise; `iolab parse` and
`iolab regressions import` end with exit 0, or 2 and one line on stderr, never a traceback."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iolab.cli.main import cli
from iolab.ingest.comparisons import find_comparisons
from iolab.model.comparison import Comparison

REPORTS = Path(__file__).parent / "data" / "reports"
LINES = [
    line
    for path in sorted(REPORTS.glob("*/*.txt"))
    for line in path.read_text().splitlines()
    if line.strip()
]
JUNK = ["±", "~", "%", "*", "│", "(", ")", "1e999", "-", "nan", "", "0:4", "TOTAL", "\t", ">"]


def _finite(tables: list[Comparison]) -> None:
    for t in tables:
        json.dumps(t.to_json(), allow_nan=False)  # raises on inf/nan anywhere
        for r in t.rows:
            for x in (r.base, r.new, r.change_pct, r.change_abs, r.stddev, *r.values):
                assert x is None or math.isfinite(x)


@st.composite
def mangled(draw: st.DrawFn) -> str:
    start = draw(st.integers(0, len(LINES) - 1))
    chunk = LINES[start : start + draw(st.integers(1, 60))]
    out: list[str] = []
    for line in chunk:
        words = line.split(" ")
        if draw(st.booleans()) and words:
            words[draw(st.integers(0, len(words) - 1))] = draw(st.sampled_from(JUNK))
        if draw(st.integers(0, 9)) == 0:
            cut = draw(st.integers(0, len(line)))
            out += [" ".join(words)[:cut], " ".join(words)[cut:]]
        else:
            out.append(" ".join(words))
    prefix = draw(st.sampled_from(["", "> ", ">> ", "> > "]))
    end = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    return end.join(prefix + line for line in out)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=2000))
def test_arbitrary_text(text: str) -> None:
    _finite(find_comparisons(text, "fuzz"))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mangled())
def test_mangled_real_tables(text: str) -> None:
    _finite(find_comparisons(text, "fuzz"))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mangled())
def test_cli_ends_in_one_line_or_success(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        mail = Path(tmp) / "mail.txt"
        mail.write_text(text, encoding="utf-8", errors="surrogatepass")
        for args in (
            ["parse", "--json", str(mail)],
            ["--db", str(Path(tmp) / "r.db"), "regressions", "import", str(mail)],
        ):
            out = CliRunner().invoke(cli, args)
            assert out.exit_code in (0, 2), (args, out.stdout, out.stderr, out.exception)
            assert "Traceback" not in out.stderr
            if out.exit_code == 2:
                assert len(out.stderr.splitlines()) == 1, out.stderr
            elif args[0] == "parse":
                json.loads(out.stdout)
