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
from hypothesis import HealthCheck, event, given, settings
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
JUNK = ["±", "~", "%", "*", "│", "(", ")", "1e999", "-", "nan", "", "0:4", "TOTAL", "\t", ">",
        "+Inf%", "-Inf", "Inf%", "|", "improvement", "13.9%"]  # fmt: skip


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


_BAD = st.one_of(
    st.sampled_from(["f2fs", "", "4k\nexec_prerun=touch /tmp/x", "a b", "1e9", "-1", "4x"]),
    st.text(max_size=12),
)
_GOOD = {
    "rw": ["write", "randwrite", "read", "randrw"],
    "bs": ["4k", "64k", "2M"],
    "ioengine": ["sync", "libaio", "pvsync2", "mmap"],
    "iodepth": ["1", "32"],
    "direct": ["0", "direct", "1"],
    "nr_task": ["1", "2", "50%", "100%"],
    "fs": ["ext4", "xfs", "btrfs"],
    "test_size": ["128G", "1G", "64M"],
    "runtime": ["300s", "60"],
    "time_based": ["tb", ""],
    "disk": ["1HDD", "2pmem"],
    "raw_disk": ["0"],
}
_PARAMS = st.fixed_dictionaries(
    {},
    optional={k: st.one_of(st.sampled_from(v), st.sampled_from(v), _BAD) for k, v in _GOOD.items()},
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_PARAMS, st.one_of(st.just("8 threads 1 sockets"), st.text(max_size=40)))
def test_robot_parameters_give_a_plan_that_loads_or_one_error(
    params: dict[str, str], machine: str
) -> None:
    """Whatever a mail's parameters say: one IolabError, or a plan iolab's loader accepts
    (with fio's own check of the job, `fio --parse-only`), never an injected fio option."""
    from iolab.errors import IolabError
    from iolab.model.comparison import RobotMail
    from iolab.plan import load_plan
    from iolab.reproduce.robot import fio_basic_plan

    params = {"test_size": "1G", **params}
    robot = RobotMail(commit=machine, base=machine, subject=machine, link=machine)
    try:
        plan = fio_basic_plan(params, machine=machine, robot=robot)
    except IolabError as exc:
        event("refused by the mapping")
        assert "\n" not in str(exc)
        return
    assert "exec_" not in plan.text
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "plan.yaml"
        path.write_text(plan.text)
        try:
            load_plan(str(path))
            event("loaded")
        except IolabError as exc:  # e.g. fio refusing a value it does not know
            event("refused by the plan loader")
            assert "\n" not in str(exc), str(exc)


def _rewrap(text: str, width: int) -> str:
    import textwrap

    out: list[str] = []
    for line in text.splitlines():
        out += textwrap.wrap(line, width, break_long_words=False) or [""]
    return "\n".join(out)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mangled(), st.integers(20, 100))
def test_rewrapped_mangled_tables(text: str, width: int) -> None:
    """Any re-wrap width over mangled real tables: the wrapped-name, wrapped-TOTAL,
    cut-impact-row and wrapped-mmtests-header paths never raise nor invent a figure, and an
    mmtests table's kernels are one per column or none."""
    found = find_comparisons(_rewrap(text, width), "fuzz")
    _finite(found)
    for t in found:
        if t.format == "mmtests":
            assert t.columns == [] or len(t.columns) == len(t.rows[0].values)


_ROWS = [line for line in LINES if line.lstrip("> ").startswith(("Hmean", "Amean", "Stddev"))]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.text(alphabet=st.sampled_from("ab5.-+ \t>|*%()"), max_size=40), max_size=6),
    st.sampled_from(_ROWS),
)
def test_mmtests_header_of_any_lines_above_a_row(above: list[str], row: str) -> None:
    (t,) = [t for t in find_comparisons("\n".join([*above, row]), "fuzz") if t.format == "mmtests"]
    assert t.columns == [] or len(t.columns) == len(t.rows[0].values)
    assert all(c.strip() for c in t.columns)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.sampled_from([
            "Content-Type: text/plain; charset=us-ascii", "Content-Type: text/plain",
            "Content-Type: text/plain; charset=utf-8", 'Content-Type: text/plain; charset="x"',
            "Content-Transfer-Encoding: 8bit", "Content-Transfer-Encoding: 7bit",
            "Content-Transfer-Encoding: quoted-printable", "Content-Transfer-Encoding: base64",
            "Content-Type: multipart/mixed; boundary=b", "MIME-Version: 1.0", "Subject: ±",
        ]),
        max_size=4,
    ),
    st.text(max_size=200),
)  # fmt: skip
def test_message_text_of_any_saved_header_block(headers: list[str], body: str) -> None:
    """Any header block over any body: message_text returns text and never raises; without a
    transfer encoding or a multipart type, a single part's body comes back as it was."""
    from iolab.ingest.mail import message_text

    text = "\n".join(["From: a <a@example.org>", "Subject: s", *headers, "", body])
    out = message_text(text)
    assert isinstance(out, str)
    plain = not any("Transfer-Encoding" in h or "multipart" in h for h in headers)
    if plain and "\r" not in body and "\x0b" not in body and "\x0c" not in body:
        assert out.rstrip("\n") == body.rstrip("\n") or out == text
