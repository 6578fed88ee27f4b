"""fio's normal (human) output, every generation, also as pasted into mail.

Generations read: fio <= 2.16 (`write: io=431280KB, bw=7186.3KB/s, iops=449, runt= 60015msec`,
KB meaning KiB), 2.17–2.99 and 3.x (`write: IOPS=1884, BW=236MiB/s (247MB/s)(138GiB/600319msec)`).
Lines arrive un-quoted (ingest.mail) but possibly wrapped by a mail client and with their
indentation damaged, so every line is matched by its content, and a line whose known complete
form is cut short is re-joined with the lines after it.  Several fio runs in one text are told
apart by fio's version line, by a new job after a run's group/disk summary, and by prose
written between two jobs (a caption).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from iolab.errors import IngestError
from iolab.ingest import numbers
from iolab.ingest.aggregate import aggregate_jobs
from iolab.ingest.mail import is_prose
from iolab.model.metrics import percentile_name
from iolab.model.result import Job, Result

FORMAT = "fio-text"
_NUM = r"\d+(?:\.\d+)?"
_SUF = r"[kKMGTPE]?"
_LAT_UNIT = r"(?P<unit>nsec|usec|msec|sec)"
_DIRS = r"(?P<dir>read|write|trim|mixed)"

# Starts of the lines the reader knows, matched on the stripped line, first match wins.
_STARTS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern))
    for kind, pattern in (
        ("version", r"^fio-(?P<version>\d[\w.+~-]*)$"),
        ("options", r"^(?P<name>\S.*?): \(g=\d+\): rw=(?P<rw>\w+)"),
        ("header", r"^(?P<name>\S.*?): \(groupid=\d"),
        ("dir3", rf"^(?:\S+\s+){{0,3}}?{_DIRS}\s*:\s*IOPS="),
        ("dir2", rf"^(?:\S+\s+){{0,3}}?{_DIRS}\s*:\s*io=\s*\d"),
        ("lat", rf"^(?P<kind>clat|slat|lat|sync)\s*\({_LAT_UNIT}\)\s*:\s*min="),
        ("pct", rf"^(?P<kind>clat|slat|lat|sync)\s+percentiles\s*\({_LAT_UNIT}\)"),
        ("pctrow", r"^\|"),
        ("fsync", r"^fsync/"),
        ("cpu", r"^cpu\s*:"),
        ("issued", r"^issued\b"),
        ("group", r"^Run status group (?P<group>\d{1,9})"),
        ("gdir", r"^(?P<dir>READ|WRITE|TRIM|MIXED)\s*:\s*(?:bw|io)="),
        ("diskhdr", r"^Disk stats"),
        ("disk", r"^(?P<dev>[^\s:=]+):\s*ios="),
        (
            "other",
            r"^(?:bw\s*\(|iops\s*:|lat\s*\(\w+\)\s*:|IO depths|submit\s*:|complete\s*:|"
            r"latency\s*:|clat prio|Starting \d|Jobs:\s*\d|\.\.\.$|\S.*: Laying out|fio:)",
        ),
    )
)


def _disk_complete(text: str) -> bool:
    if "aggr" in text:
        return re.search(r"aggrutil=\s*[\d.]+%", text) is not None
    return re.search(r"\butil=\s*[\d.]+%", text) is not None


def _search(pattern: str) -> Callable[[str], bool]:
    compiled = re.compile(pattern)
    return lambda text: compiled.search(text) is not None


# A known line is complete when this holds; until then the lines after it are its wrapped tail.
_COMPLETE: dict[str, Callable[[str], bool]] = {
    "options": _search(r"iodepth=\d+\s*$"),
    "header": lambda text: "pid=" in text and re.search(r"\d{4}\s*$", text) is not None,
    "dir3": _search(r"msec\s*\)"),
    "dir2": _search(r"runt=\s*\d+\s*msec"),
    "lat": _search(rf"stdev=\s*{_NUM}{_SUF}\s*$"),
    "cpu": _search(r"minf=\s*\d+"),
    "issued": _search(r"drop\w*=[\d,/rwd=]*\d\s*$"),
    "gdir": _search(r"(?:run=\s*\d+\s*-\s*\d+|maxt=\s*\d+)\s*msec"),
    "disk": _disk_complete,
}
_MAX_JOIN = 4

_HEADER = re.compile(
    r"^(?P<name>\S.*?): \(groupid=(?P<group>\d{1,9}),\s*jobs=\s*\d+\)\s*:\s*err=\s*(?P<err>\d{1,9})"
    r"(?:\s*\((?P<detail>.*?)\)\s*:\s*pid=|.*)"
)
# A direction line may carry, before it, a few words of the line above that a mail client
# re-flowed onto it (`2019 write: IOPS=…` from a job header cut before its year).
_DIR3 = re.compile(
    rf"^(?:\S+\s+){{0,3}}?{_DIRS}\s*:\s*IOPS=\s*(?P<iops>{_NUM}{_SUF})\s*,\s*BW=\s*(?P<bw>{_NUM}\s*\w*/s)"
    rf"\s*(?:\([^)]*\))?\s*\(\s*(?P<io>{_NUM}\s*\w*?)\s*/\s*(?P<run>\d{{1,15}})\s*msec\s*\)"
)
_DIR2 = re.compile(
    rf"^(?:\S+\s+){{0,3}}?{_DIRS}\s*:\s*io=\s*(?P<io>{_NUM}\s*\w*?)\s*,\s*bw=\s*(?P<bw>{_NUM}\s*\w*/s)\s*,"
    rf"\s*iops=\s*(?P<iops>{_NUM}{_SUF})\s*,\s*runt=\s*(?P<run>\d{{1,15}})\s*msec"
)
_LAT = re.compile(
    rf"^(?P<kind>clat|slat|lat|sync)\s*\({_LAT_UNIT}\)\s*:\s*min=\s*(?P<min>{_NUM}{_SUF})\s*,"
    rf"\s*max=\s*(?P<max>{_NUM}{_SUF})\s*,\s*avg=\s*(?P<avg>{_NUM}{_SUF})\s*,"
    rf"\s*stdev=\s*(?P<stdev>{_NUM}{_SUF})"
)
_PCT_ENTRY = re.compile(rf"(?P<p>{_NUM})th\s*=\s*\[\s*(?P<v>{_NUM}{_SUF})\s*\]")
_PCT_CONTENT = re.compile(r"^[|\d\s.th=\[\],kKMGTPE]+$")
_CPU = re.compile(
    rf"usr=\s*(?P<usr>{_NUM})%\s*,\s*sys=\s*(?P<sys>{_NUM})%\s*,\s*ctx=\s*(?P<ctx>{_NUM}{_SUF})"
    rf"(?:\s*,\s*majf=\s*(?P<majf>{_NUM}{_SUF}))?(?:\s*,\s*minf=\s*(?P<minf>{_NUM}{_SUF}))?"
)
_ISSUED3 = re.compile(r"total=(?P<total>\d+(?:,\d+){2,3})\s*,?\s*short=(?P<short>\d+(?:,\d+){2,3})")
_ISSUED2 = re.compile(
    r"total=r=(?P<r>\d+)/w=(?P<w>\d+)(?:/d=(?P<t>\d+))?\s*,\s*"
    r"short=r=(?P<sr>\d+)/w=(?P<sw>\d+)(?:/d=(?P<st>\d+))?"
)
_GDIR3 = re.compile(
    rf"^(?P<dir>READ|WRITE|TRIM|MIXED)\s*:\s*bw=\s*(?P<bw>{_NUM}\s*\w*/s).*?"
    rf"io=\s*(?P<io>{_NUM}\s*\w*?)\s*(?:\([^)]*\))?\s*,\s*run=\s*\d+\s*-\s*(?P<run>\d{{1,15}})\s*msec"
)
_GDIR2 = re.compile(
    rf"^(?P<dir>READ|WRITE|TRIM|MIXED)\s*:\s*io=\s*(?P<io>{_NUM}\s*\w*?)\s*,"
    rf"\s*aggrb=\s*(?P<bw>{_NUM}\s*\w*/s).*?maxt=\s*(?P<run>\d{{1,15}})\s*msec"
)
_DISK = re.compile(
    r"^(?P<dev>[^\s:=]+):\s*ios=(?P<rios>\d+)/(?P<wios>\d+)\s*,\s*merge=(?P<rm>\d+)/(?P<wm>\d+)"
    r"\s*,\s*ticks=(?P<rt>\d+)/(?P<wt>\d+)\s*,\s*in_queue=(?P<q>\d+)\s*,\s*util=(?P<util>[\d.]+)%"
)
# fio's own complaints when a job could not even start (no job block follows).
_FIO_ERROR = re.compile(
    r"^(?:\S+: (?:failed|error|unable)\b.*|fio: .*\berr(?:or|=).*)$", re.IGNORECASE
)
_OPTION = re.compile(r"\b(?P<key>ioengine|iodepth)=(?P<value>[\w.-]+)")
# A shell command pasted above its output (`$ fio job | grep IOPS`, `# fio ...`,
# `user@host:~$ fio ...`): what follows is the output of another run.
COMMAND_LINE = re.compile(r"^(?:[$#]|[\w.-]+@[\w.-]+:[^\s$#]*[$#]|\[[^\]]*\][$#])\s+\S")


def is_direction_line(text: str) -> bool:
    """True for a complete fio direction line (`write: IOPS=…(…/…msec)`, or the 2.x form),
    which this reader reads; a shortened one (`write: IOPS=11.1k, BW=43.2MiB/s`) is not."""
    stripped = text.strip()
    return _DIR3.match(stripped) is not None or _DIR2.match(stripped) is not None


@dataclass
class _Line:
    """One logical line: a physical line with the wrapped tail re-joined."""

    text: str
    first: int
    last: int
    kind: str | None
    match: re.Match[str] | None
    indented: bool


@dataclass
class _JobDraft:
    name: str
    group: int | None
    line: int
    metrics: dict[str, float] = field(default_factory=dict)
    options: dict[str, str] = field(default_factory=dict)
    directions: list[str] = field(default_factory=list)


@dataclass
class _Draft:
    """A fio run being read."""

    start: int
    version: str | None
    jobs: list[_JobDraft] = field(default_factory=list)
    group_metrics: dict[str, float] = field(default_factory=dict)
    disk: dict[str, float] = field(default_factory=dict)
    section: str = "jobs"  # "jobs" → "groups" → "disk"
    prose_since_job: bool = False
    last_group: int = -1  # the last `Run status group N` of this run
    group_dirs: set[str] = field(default_factory=set)  # directions read under that header
    when: datetime | None = None  # the first job header's date (fio's ctime, zone unknown)

    def has_content(self) -> bool:
        return bool(self.jobs or self.group_metrics)


_HEADER_DATE = re.compile(r"pid=\s*\d+\s*:\s*(\w{3} \w{3} +\d{1,2} \d\d:\d\d:\d\d \d{4})\s*$")


def _header_date(text: str) -> datetime | None:
    """The date fio prints at the end of a job header (`pid=123: Sat Nov 21 06:58:22 2026`).

    fio prints its machine's local time without a zone; it is kept as if it were UTC, which
    orders results of one machine correctly (docs/history.md).
    """
    match = _HEADER_DATE.search(text)
    if match is None:
        return None
    try:
        return datetime.strptime(" ".join(match.group(1).split()), "%a %b %d %H:%M:%S %Y").replace(
            tzinfo=UTC
        )
    except ValueError:
        return None


def find(lines: list[str], source: str) -> list[tuple[int, Result]]:
    """Every fio normal-text result in `lines` (un-quoted), with the line it starts at."""
    return _Reader(source).read(_logical_lines(lines))


def _classify(text: str) -> tuple[str | None, re.Match[str] | None]:
    for kind, pattern in _STARTS:
        match = pattern.match(text)
        if match:
            return kind, match
    return None, None


def _logical_lines(lines: list[str]) -> list[_Line]:
    out: list[_Line] = []
    i = 0
    while i < len(lines):
        raw = lines[i]
        text = raw.strip()
        kind, match = _classify(text)
        last = i
        complete = _COMPLETE.get(kind or "")
        if complete is not None:
            while not complete(text) and last + 1 < len(lines) and last - i < _MAX_JOIN:
                tail = lines[last + 1].strip()
                if not tail or _classify(tail)[0] is not None:
                    break
                text = f"{text} {tail}"
                last += 1
            if last > i:
                match = dict(_STARTS)[kind or ""].match(text)
        out.append(_Line(text, i, last, kind, match, raw[:1].isspace()))
        i = last + 1
    return out


class _Reader:
    def __init__(self, source: str) -> None:
        self.source = source
        self.drafts: list[_Draft] = []
        self.current: _Draft | None = None
        self.job: _JobDraft | None = None
        self.ddir: str | None = None
        self.version: str | None = None
        self.options: dict[str, dict[str, str]] = {}
        self.fio_seen = False  # a version line or a run summary: this text is fio output
        self.fio_error: _Line | None = None

    def read(self, lines: list[_Line]) -> list[tuple[int, Result]]:
        i = 0
        while i < len(lines):
            line = lines[i]
            try:
                if line.kind == "pct":
                    i = self._percentiles(lines, i)
                    continue
                self._line(line)
            except ValueError as exc:
                raise IngestError(
                    self.source, f"line {line.first + 1}: unreadable fio output ({exc})"
                ) from None
            i += 1
        self._close()
        results = []
        for draft in self.drafts:
            result = self._result(draft)
            if result is not None:
                results.append((draft.start, result))
        if not results and self.fio_seen and self.fio_error is not None:
            raise IngestError(
                self.source,
                f"line {self.fio_error.first + 1}: fio reported an error and no result: "
                f"{self.fio_error.text[:200]}",
            )
        return results

    # -- runs and jobs -------------------------------------------------------------------

    def _close(self) -> None:
        if self.current is not None and self.current.has_content():
            self.drafts.append(self.current)
        self.current, self.job, self.ddir = None, None, None

    def _run_for_job(self, line: _Line) -> _Draft:
        """The run a new job belongs to: the current one, or a new one when the current
        run has ended (its summary was printed) or prose separates the two jobs."""
        run = self.current
        if run is None or run.section != "jobs" or (run.jobs and run.prose_since_job):
            self._close()
            run = _Draft(start=line.first, version=self.version)
            self.version = None
            self.current = run
        return run

    def _new_job(self, line: _Line, name: str, group: int | None) -> _JobDraft:
        run = self._run_for_job(line)
        job = _JobDraft(name=name, group=group, line=line.first)
        job.options.update(self.options.get(name, {}))
        run.jobs.append(job)
        run.prose_since_job = False
        self.job, self.ddir = job, None
        return job

    def _line(self, line: _Line) -> None:
        kind, match, text = line.kind, line.match, line.text
        if kind in (None, "other") and self.fio_error is None and _FIO_ERROR.match(text):
            self.fio_error = line
        if kind is None:
            if COMMAND_LINE.match(text):
                self._close()  # the next output is another command's: never one run
                self.version = None
            elif text and self.current is not None and self.current.section != "jobs":
                self._close()  # fio prints nothing of its own after its summaries: a note
            elif text and not line.indented and is_prose(text) and self.current is not None:
                self.current.prose_since_job = True
            return
        if kind in ("version", "group"):
            self.fio_seen = True
        assert match is not None
        if kind == "version":
            if self.current is not None and self.current.has_content():
                self._close()
            self.version = match.group("version")
        elif kind == "options":
            options = {"rw": match.group("rw")}
            options.update((m.group("key"), m.group("value")) for m in _OPTION.finditer(text))
            self.options[match.group("name")] = options
        elif kind == "header":
            self._header(line)
        elif kind in ("dir3", "dir2"):
            self._direction(line)
        elif kind == "lat":
            self._latency(line)
        elif kind == "fsync":
            if self.job is not None:
                self.ddir = "sync"
        elif kind == "cpu":
            self._cpu(text)
        elif kind == "issued":
            self._issued(text)
        elif kind == "group":
            number = int(match.group("group"))
            run = self.current
            if (
                run is None
                or run.section == "disk"
                or (run.section == "groups" and number <= run.last_group)
            ):
                run = self._new_summary_run(line)  # group numbers only grow within a run
            run.section = "groups"
            run.last_group = number
            run.group_dirs = set()
            self.job, self.ddir = None, None
        elif kind == "gdir":
            self._group_direction(line)
        elif kind == "diskhdr":
            if self.current is not None:
                self.current.section = "disk"
                self.job, self.ddir = None, None
        elif kind == "disk":
            self._disk(text)

    def _new_summary_run(self, line: _Line) -> _Draft:
        self._close()
        self.current = _Draft(start=line.first, version=self.version)
        self.version = None
        return self.current

    def _header(self, line: _Line) -> None:
        match = _HEADER.match(line.text)
        if match is None:
            return  # a header cut short before its error code: nothing to read from it
        name = match.group("name")
        err = int(match.group("err"))
        if err != 0:
            detail = match.group("detail") or ""
            why = re.search(r"error=([^,)]+)", detail)
            reason = why.group(1).strip() if why else detail.strip() or "no detail"
            raise IngestError(
                self.source,
                f"line {line.first + 1}: fio job '{name}' reported error {err} ({reason})",
            )
        self._new_job(line, name, int(match.group("group")))
        if self.current is not None and self.current.when is None:
            self.current.when = _header_date(line.text)

    def _direction(self, line: _Line) -> None:
        legacy = line.kind == "dir2"
        match = (_DIR2 if legacy else _DIR3).match(line.text)
        if match is None:
            return
        ddir = match.group("dir")
        job = self.job
        if (
            job is None
            or ddir in job.directions
            or self.current is None
            or self.current.section != "jobs"
            or self.current.prose_since_job
        ):
            job = self._new_job(line, "job", None)  # a pasted job block without its header
        job.directions.append(ddir)
        self.ddir = ddir
        m = job.metrics
        m[f"{ddir}.iops"] = numbers.parse_count(match.group("iops"))
        m[f"{ddir}.bw_bytes"] = numbers.parse_rate(match.group("bw"), legacy_units=legacy)
        m[f"{ddir}.io_bytes"] = numbers.parse_size(match.group("io"), legacy_units=legacy)
        m[f"{ddir}.runtime_ms"] = float(match.group("run"))

    def _latency(self, line: _Line) -> None:
        match = _LAT.match(line.text)
        if match is None or self.job is None or self.ddir is None:
            return
        kind, unit = match.group("kind"), match.group("unit")
        ddir = self.ddir
        if kind == "sync" or ddir == "sync":
            if kind != "sync" or ddir != "sync":
                return
            prefix = "sync.lat_ns"
        else:
            prefix = f"{ddir}.{kind}_ns"
        m = self.job.metrics
        m[f"{prefix}.min"] = numbers.latency_ns(match.group("min"), unit)
        m[f"{prefix}.max"] = numbers.latency_ns(match.group("max"), unit)
        m[f"{prefix}.mean"] = numbers.latency_ns(match.group("avg"), unit)
        m[f"{prefix}.stddev"] = numbers.latency_ns(match.group("stdev"), unit)

    def _percentiles(self, lines: list[_Line], i: int) -> int:
        """Read a percentile block (header at i, rows possibly wrapped); the next index."""
        header = lines[i].match
        assert header is not None
        parts = [lines[i].text.split(":", 1)[1] if ":" in lines[i].text else ""]
        j = i + 1
        while j < len(lines) and lines[j].text and _PCT_CONTENT.match(lines[j].text):
            parts.append(lines[j].text)
            j += 1
        if self.job is None or self.ddir is None:
            return j
        kind, unit = header.group("kind"), header.group("unit")
        if (kind == "sync") != (self.ddir == "sync"):
            return j
        prefix = "sync.lat_ns" if kind == "sync" else f"{self.ddir}.{kind}_ns"
        for entry in _PCT_ENTRY.finditer(" ".join(parts)):
            try:
                p = numbers.parse_float(entry.group("p"))
                value = numbers.latency_ns(entry.group("v"), unit)
            except ValueError as exc:
                raise IngestError(
                    self.source, f"line {lines[i].first + 1}: unreadable fio percentile ({exc})"
                ) from None
            if 0 < p <= 100:
                self.job.metrics[f"{prefix}.{percentile_name(p)}"] = value
        return j

    def _cpu(self, text: str) -> None:
        match = _CPU.search(text)
        if match is None or self.job is None:
            return
        m = self.job.metrics
        m["cpu.usr_pct"] = numbers.parse_float(match.group("usr"))
        m["cpu.sys_pct"] = numbers.parse_float(match.group("sys"))
        for key in ("ctx", "majf", "minf"):
            if match.group(key) is not None:
                m[f"cpu.{key}"] = numbers.parse_count(match.group(key))

    def _issued(self, text: str) -> None:
        if self.job is None:
            return
        totals: list[float]
        shorts: list[float]
        match3 = _ISSUED3.search(text)
        match2 = _ISSUED2.search(text)
        if match3:
            totals = [float(v) for v in match3.group("total").split(",")]
            shorts = [float(v) for v in match3.group("short").split(",")]
        elif match2:
            totals = [float(match2.group(k) or 0) for k in ("r", "w", "t")]
            shorts = [float(match2.group(k) or 0) for k in ("sr", "sw", "st")]
        else:
            return
        m = self.job.metrics
        for index, ddir in enumerate(("read", "write", "trim")):
            if ddir in self.job.directions:
                m[f"{ddir}.total_ios"] = totals[index]
                m[f"{ddir}.short_ios"] = shorts[index]
        if "mixed" in self.job.directions:
            m["mixed.total_ios"] = sum(totals[:3])
            m["mixed.short_ios"] = sum(shorts[:3])
        if len(totals) > 3 and (totals[3] > 0 or "sync.lat_ns.mean" in m):
            m["sync.total_ios"] = totals[3]

    def _group_direction(self, line: _Line) -> None:
        """A `READ:`/`WRITE:` group line; pasted without its `Run status group` header it
        starts a run of its own, and a direction seen again under the same header does too
        (two summaries pasted one after the other)."""
        text = line.text
        run = self.current
        ddir_name = text.split(":", 1)[0].strip().lower()
        if run is None or run.section == "disk" or ddir_name in run.group_dirs:
            run = self._new_summary_run(line)
        run.section = "groups"
        run.group_dirs.add(ddir_name)
        self.job, self.ddir = None, None
        legacy = _GDIR2.match(text)
        match = legacy or _GDIR3.match(text)
        if match is None:
            return
        ddir = match.group("dir").lower()
        units = legacy is not None
        g = run.group_metrics
        bw = numbers.parse_rate(match.group("bw"), legacy_units=units)
        io = numbers.parse_size(match.group("io"), legacy_units=units)
        g[f"{ddir}.bw_bytes"] = g.get(f"{ddir}.bw_bytes", 0.0) + bw
        g[f"{ddir}.io_bytes"] = g.get(f"{ddir}.io_bytes", 0.0) + io
        run_ms = float(match.group("run"))
        g[f"{ddir}.runtime_ms"] = max(g.get(f"{ddir}.runtime_ms", 0.0), run_ms)

    def _disk(self, text: str) -> None:
        run = self.current
        if run is None or run.section != "disk":
            return
        match = _DISK.match(text)
        if match is None:
            return
        prefix = f"disk.{match.group('dev')}"
        for key, group in (
            ("read_ios", "rios"),
            ("write_ios", "wios"),
            ("read_merges", "rm"),
            ("write_merges", "wm"),
            ("read_ticks", "rt"),
            ("write_ticks", "wt"),
            ("in_queue", "q"),
        ):
            run.disk[f"{prefix}.{key}"] = float(match.group(group))
        run.disk[f"{prefix}.util_pct"] = numbers.parse_float(match.group("util"))

    # -- results -------------------------------------------------------------------------

    def _result(self, draft: _Draft) -> Result | None:
        jobs = [
            Job(name=j.name, metrics=j.metrics, options=j.options, group=j.group)
            for j in draft.jobs
            if j.metrics
        ]
        if jobs:
            metrics, _ = aggregate_jobs(jobs)
            for key, value in draft.group_metrics.items():
                ddir = key.split(".", 1)[0]
                if not any(_is_direction_metric(k, ddir) for k in metrics):
                    metrics[key] = value  # the job block's direction line was unreadable
        else:
            metrics = dict(draft.group_metrics)
        if not metrics:
            return None
        metrics.update(draft.disk)
        return Result(
            tool="fio",
            format=FORMAT,
            source=self.source,
            tool_version=draft.version,
            metrics=metrics,
            jobs=jobs,
            started_at=draft.when,
        )


def _is_direction_metric(key: str, ddir: str) -> bool:
    """`write.iops`, or per group `group1.write.iops`."""
    parts = key.split(".")
    in_group = len(parts) > 2 and parts[0].startswith("group") and parts[1] == ddir
    return parts[0] == ddir or in_group
