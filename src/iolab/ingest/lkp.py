"""The 0-day/LKP kernel test robot's mails: headline, commit and base, test facts, tables.

Every layout the robot has sent since 2011 is one row shape — `base [±|~ sd%]  change[%]
new [±|~ sd%]  name` — under a column head of the compared kernels or commits and a dash
line.  What changes over the years is around it:

- 2011–2014: a table per metric, rows are test cells (`lkp-ws02/micro/dd-write/…`,
  `thresh=1000M/ext4-10dd-…`) and a `TOTAL metric` row names the metric;
- since ~2015: `%stddev %change %stddev` and `\\ | /` under the dashes, one row per metric,
  a `fail:runs %reproduction` block first in some, and a slash-separated dimension header
  (`bs/compiler/…/testcase:` with its values line) above each parameter set.

Mail clients re-wrap long rows: a row whose name is missing takes the next line's single
word as its name (a long `perf-profile.…` or `numa-numastat.…` name pushed down), and a
`TOTAL` row whose metric was pushed down takes it from the next line.
The caller un-quotes (ingest.mail.unquote) and splits lines; CR line ends are stripped here.
"""

from __future__ import annotations

import re

from iolab.ingest.tables import NUM, caption_above, number
from iolab.model.comparison import Comparison, Headline, RobotMail, Row

_SD = r"(?:\s*[±~]\s*(\d+)%)?"
# the change may be `+Inf%` (a base of 0): kept as printed, no figure
_ROW = re.compile(
    rf"^\s*({NUM}){_SD}\s+(?:({NUM}|[+-]Inf)(%)?\s+)?({NUM}){_SD}(?:\s+(\S.*?))?\s*$",
)
_DASHES = re.compile(r"^\s*-{6,}(?:\s+-{6,})+\s*$")
_HEADER_NOISE = re.compile(r"^\s*(?:%stddev\b.*|fail:runs\b.*|[\\|/\s]+)$")
_FAIL_RUNS = re.compile(r"^\s*\d*:\d+\s+[+-]?\d+%\s+\d*:\d+(?:\s+(\S+))?\s*$")
_NAME_ONLY = re.compile(r"^\s*(\S+)\s*$")
_DIMENSIONS = re.compile(r"^\s*([\w.%-]+(?:/[\w.%-]+)+):\s*$")
_COMMIT = re.compile(r"^\s*commit:?\s+([0-9a-f]{7,40})\b(?:\s*\(\"(.*)\"\))?", re.I)
_SIDE = re.compile(r"^\s*([0-9a-f]{7,40})\s+\(\"(.*)\"\)\s*$")
_BRANCH = re.compile(r"^\s*((?:https?|git)://\S+(?:\s+\S+)?)\s*$")
_FIELDS = {"testcase": "testcase", "config": "config", "compiler": "compiler"}
_FIELDS["test machine"] = "machine"
_NOTICED = re.compile(
    rf"noticed (?:a|an)\s+({NUM})%\s+(regression|improvement)\s+of\s+(\S+?)[:.]?\s",
)
_SUBJECT_NEW = re.compile(rf":\s+(\S+)\s+({NUM})%\s+(regression|improvement)\s*$")
_SUBJECT_OLD = re.compile(rf":\s+({NUM})%\s+(\S+)\s*$")
_FACT = re.compile(
    r"^\s*(?:in\s+|on\s+)?(testcase|config|compiler|test machine|test-description|test-url):"
    r"\s*(.*?)\s*$"
)
_PARAMS = re.compile(r"^\s*(?:with following\s+)?parameters:\s*$")
_PARAM = re.compile(r"^\s*([\w.-]+):\s+(\S.*?)\s*$")
_LINK = re.compile(r"^\s*\|?\s*(?:Closes|Link):\s*(https?://\S+)?\s*$")
_URL = re.compile(r"^\s*\|?\s*(https?://\S+)\s*$")
_KEY = re.compile(r"^\s*[\w -]+:")
_IMPACT = re.compile(
    rf"^\s*\|\s*testcase: change\s*\|\s*([\w.-]+):\s+(\S+)\s+({NUM})%\s+(regression|improvement)"
)
# the same row cut by a mail client's re-wrap after the figure: its direction is below
_IMPACT_CUT = re.compile(rf"^\s*\|\s*testcase: change\s*\|\s*[\w.-]+:\s+\S+\s+{NUM}%\s*$")
# a box row `| key | value |`; a mail client's wrap may move the closing bar (or the end of
# the value) to the next line
_IMPACT_CELL = re.compile(r"^\s*\|\s*([^|]*?)\s*\|\s*([^|]*?)\s*(?:\|\s*)?$")
_BAR = re.compile(r"^\s*\|\s*$")


def looks_like(lines: list[str]) -> bool:
    """A dash line, and a row somewhere below it."""
    dash = next((i for i, line in enumerate(lines) if _DASHES.match(line)), None)
    return dash is not None and any(_ROW.match(line) for line in lines[dash + 1 :])


def find(lines: list[str], source: str, headers: dict[str, str] | None = None) -> list[Comparison]:
    """Every LKP table in the (un-quoted) lines, each carrying the mail's robot facts.

    `headers` (subject, message-id, in-reply-to; lower-case keys): those of a saved message
    whose body alone is in `lines`."""
    lines = [line.rstrip("\r") for line in lines]
    robot = _robot(lines, headers or {})
    tables: list[Comparison] = []
    dims: dict[str, str] = {}
    for i, line in enumerate(lines):
        if _DIMENSIONS.match(line):
            header = dimension_header(lines, i)
            dims = header[1] if header is not None else {}
            continue
        if not _DASHES.match(line) or i == 0:
            continue
        table = _table(lines, i, source)
        if table is None:
            continue
        table.dimensions, dims = dims, {}
        table.testbox = table.dimensions.get("tbox_group")
        table.robot = robot
        tables.append(table)
    if robot is not None:
        _signed_headlines(robot, tables)
    return tables


def _table(lines: list[str], dash: int, source: str) -> Comparison | None:
    columns = lines[dash - 1].split()
    if len(columns) < 2:
        return None
    rows: list[Row] = []
    stddev_layout = False
    i = dash + 1
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            if rows:
                break
            i += 1
            continue
        if _HEADER_NOISE.match(line):
            stddev_layout = stddev_layout or "%stddev" in line
            i += 1
            continue
        fail = _FAIL_RUNS.match(line)
        if fail:  # a fail:runs row; its wrapped name (if any) is the next line
            i += 2 if fail.group(1) is None and _next_is_name(lines, i) else 1
            continue
        m = _ROW.match(line)
        if not m:
            break
        row = _row(m, i + 1)
        if row.metric in (None, "TOTAL") and _next_is_name(lines, i):
            # a re-wrap pushed the name (or, in `TOTAL metric`, the metric) to the next line
            row.metric = " ".join(x for x in (row.metric, lines[i + 1].strip()) if x)
            i += 1
        rows.append(row)
        i += 1
    if not rows:
        return None
    _cells(rows, stddev_layout)
    table = Comparison(format="lkp", source=source, line=dash + 1, rows=rows, columns=columns)
    if not stddev_layout:
        table.caption = _old_caption(lines, dash - 1)
    return table


def _old_caption(lines: list[str], head: int) -> str | None:
    """2011–2014 mails name a table in a line of its own ending in `:` right above the
    column head ("JBOD:", "software RAID0:", "single disk, different dd block sizes:")."""
    j = head - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    if j < 0 or head - j > 2 or not lines[j].rstrip().endswith(":"):
        return None
    return caption_above(lines, head)


def _next_is_name(lines: list[str], i: int) -> bool:
    if i + 1 >= len(lines):
        return False
    nxt = lines[i + 1]
    return bool(_NAME_ONLY.match(nxt)) and not _ROW.match(nxt) and not _DASHES.match(nxt)


def _row(m: re.Match[str], line: int) -> Row:
    base, base_sd, change, percent, new, new_sd, name = m.groups()
    row = Row(
        metric=name,
        base=number(base),
        new=number(new),
        base_stddev_pct=number(base_sd),
        new_stddev_pct=number(new_sd),
        line=line,
    )
    if change is not None and change.endswith("Inf"):
        row.change_printed = change + (percent or "")
    elif change is not None:
        if percent:
            row.change_pct = number(change)
        else:
            row.change_abs = number(change)
    return row


def _cells(rows: list[Row], stddev_layout: bool) -> None:
    """Old layouts: rows are test cells of the metric the `TOTAL metric` row names."""
    for r in rows:
        if r.metric == "TOTAL":  # 2011: a bare TOTAL row of a table whose metric is unnamed
            r.cell, r.metric = "TOTAL", None
        elif r.metric is not None and r.metric.startswith("TOTAL "):
            r.cell, r.metric = "TOTAL", r.metric.removeprefix("TOTAL ").strip()
    totals = [r for r in rows if r.cell == "TOTAL"]
    if stddev_layout:
        return
    metrics = {r.metric for r in totals}
    metric = totals[-1].metric if len(metrics) == 1 else None
    for r in rows:
        if r.cell is None and r.metric and (totals or "/" in r.metric):
            r.cell, r.metric = r.metric, metric


def dimension_header(
    lines: list[str], i: int, end: int | None = None
) -> tuple[int, dict[str, str]] | None:
    """LKP's dimension header at `lines[i]` (`bs/compiler/…/testcase:`) and its values line
    below it (blank lines between allowed, before `end`): (values line index, name → value);
    None when `lines[i]` is not one or the values do not match the names.  The one reader of
    the header: ingest reads a table's cell with it, reproduce the lines a plan came from."""
    m = _DIMENSIONS.match(lines[i])
    if m is None:
        return None
    end = len(lines) if end is None else end
    j = i + 1
    while j < end and not lines[j].strip():
        j += 1
    if j >= end:
        return None
    names, values = m.group(1).split("/"), lines[j].strip().split("/")
    if len(names) != len(values):
        return None
    return j, dict(zip(names, values, strict=True))


def parameters_head(line: str) -> bool:
    """The `parameters:` line the robot's parameter block starts with."""
    return _PARAMS.match(line) is not None


def parameter_lines(
    lines: list[str], start: int, end: int | None = None
) -> list[tuple[int, str, str]]:
    """The robot's `key: value` parameter lines from `start` (after `parameters:`): (line
    index, key, value), up to the first blank line after one or a line of another shape
    (the robot indents them; web archives strip the indent)."""
    out: list[tuple[int, str, str]] = []
    stop = min(start + 40, len(lines) if end is None else end)
    for i in range(start, stop):
        if not lines[i].strip():
            if out:
                break
            continue
        m = _PARAM.match(lines[i])
        if not m:
            break
        out.append((i, m.group(1), m.group(2)))
    return out


def _joined(lines: list[str], i: int) -> str:
    """A `("subject")` that wrapped onto the next line, joined back."""
    line = lines[i]
    if '("' in line and '")' not in line and i + 1 < len(lines):
        return line.rstrip() + " " + lines[i + 1].strip()
    return line


def _robot(lines: list[str], headers: dict[str, str]) -> RobotMail | None:
    """The robot's facts; None when the text says nothing a robot mail says."""
    mail = RobotMail()
    sides: list[tuple[str, str | None]] = []
    subject = headers.get("subject", "")
    message_id = headers.get("message-id")
    in_reply_to = headers.get("in-reply-to")
    for i, line in enumerate(lines):
        if line.startswith("Subject:") and not subject:
            subject = line[8:].strip()
            if i + 1 < len(lines) and lines[i + 1].startswith((" ", "\t")):
                subject += " " + lines[i + 1].strip()
        elif line.lower().startswith("message-id:") and message_id is None:
            message_id = line.split(":", 1)[1].strip()
        elif line.lower().startswith("in-reply-to:") and in_reply_to is None:
            in_reply_to = line.split(":", 1)[1].strip()
        m = _COMMIT.match(_joined(lines, i))
        if m and mail.commit is None:
            mail.commit, mail.subject = m.group(1), m.group(2)
            where = _BRANCH.match(lines[i + 1]) if i + 1 < len(lines) else None
            if where is None and i > 0:
                where = _BRANCH.match(lines[i - 1])  # 2014: the tree's line comes first
            mail.branch = where.group(1) if where else None
        m = _SIDE.match(_joined(lines, i))
        if m and not sides and i > 0 and lines[i - 1].strip() in ("commit:", "commit"):
            sides.append((m.group(1), m.group(2)))
        m = _FACT.match(line)
        if m:
            _fact(mail, lines, i, m.group(1), m.group(2))
        if parameters_head(line) and not mail.parameters:
            mail.parameters = {key: value for _, key, value in parameter_lines(lines, i + 1)}
        m = _LINK.match(line)
        if m and mail.link is None:
            url = m.group(1)
            if url is None and i + 1 < len(lines):  # re-wrapped: the address on its own line
                wrapped = _URL.match(lines[i + 1])
                url = wrapped.group(1) if wrapped else None
            mail.link = url
        m, end = _IMPACT.match(line), i
        if m is None and _IMPACT_CUT.match(line) and i + 1 < len(lines):
            m, end = _IMPACT.match(f"{line} {lines[i + 1].strip()}"), i + 1  # re-wrapped
        if m and number(m.group(3)) is not None:
            mail.headlines.append(_impact(lines, end, m))
    if sides:
        mail.base, mail.base_subject = sides[0]
    main = _noticed(lines) or _subject_headline(subject)
    if main is not None:
        main.testcase, main.machine = mail.testcase, mail.machine
        main.parameters = dict(mail.parameters)
        mail.headlines.insert(0, main)
    if mail.link is None:  # the robot's own message: itself, or the thread's first
        root = (headers.get("references") or "").split()
        mail.link = (
            message_id
            if "lkp" in (message_id or "")
            else (root[0] if root else None) or in_reply_to or message_id
        )
    if mail.link and mail.link.startswith("<") and mail.link.endswith(">"):
        mail.link = f"https://lore.kernel.org/r/{mail.link[1:-1]}"  # lore finds any list's id
    if mail.commit is None and not mail.headlines and mail.testcase is None:
        return None
    return mail


def _fact(mail: RobotMail, lines: list[str], i: int, key: str, value: str) -> None:
    name = _FIELDS.get(key)
    if name is None or getattr(mail, name) is not None:
        return
    if key == "test machine" and i + 1 < len(lines):
        cont = lines[i + 1].strip()  # "with 256G memory" (2019), or a mail client's wrap
        if cont and not _KEY.match(cont) and "parameters" not in cont:
            value = f"{value} {cont}"
    setattr(mail, name, value)


def _noticed(lines: list[str]) -> Headline | None:
    """ "noticed a 6.5% regression of fio.write_iops", also where a client wrapped it."""
    m = _NOTICED.search(" ".join(line.strip() for line in lines) + " ")
    change = number(m.group(1)) if m else None
    if m is None or change is None:
        return None
    return Headline(m.group(3), change, m.group(2))


def _subject_headline(subject: str) -> Headline | None:
    m = _SUBJECT_NEW.search(subject)
    change = number(m.group(2)) if m else None
    if m and change is not None:
        return Headline(m.group(1), change, m.group(3))
    m = _SUBJECT_OLD.search(subject)
    change = number(m.group(1)) if m else None
    if m and change is not None:
        return Headline(m.group(2), change, "change")
    return None


def _impact(lines: list[str], i: int, m: re.Match[str]) -> Headline:
    """A row of "the commit also has significant impact on the following tests"; `i` is the
    row's last line."""
    head = Headline(m.group(2), number(m.group(3)) or 0.0, m.group(4), testcase=m.group(1))
    key = ""
    for line in lines[i + 1 : i + 60]:
        if _BAR.match(line):
            continue
        cell = _IMPACT_CELL.match(line)
        if cell is None:
            tail = line.strip().rstrip("|").strip()
            if key == "test machine" and tail and not line.lstrip().startswith(("+", "|")):
                head.machine = f"{head.machine} {tail}"  # the wrapped end of the machine
                continue
            break
        key = cell.group(1) or key
        value = cell.group(2)
        if key == "test machine":
            head.machine = value
        elif key == "test parameters" and "=" in value:
            name, _, val = value.partition("=")
            head.parameters[name] = val
    return head


def _signed_headlines(mail: RobotMail, tables: list[Comparison]) -> None:
    """A headline's change with its sign from the table ("6.5% regression" is -6.5%)."""
    for h in mail.headlines:
        for table in tables:
            found = [
                r
                for r in table.rows
                if r.metric == h.metric and r.change_pct is not None and r.cell in (None, "TOTAL")
            ]
            if found and (h.testcase is None or h.testcase == table.dimensions.get("testcase")):
                h.change_pct = found[0].change_pct  # type: ignore[assignment]
                break
