"""Monitor parsers and derivations on real kernel text (captured on a 6.18 kernel)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iolab.errors import PlanError
from iolab.model.metrics import metric_info
from iolab.monitors import registry
from iolab.monitors.bpftrace import FLUSH_PID, parse_maps, program
from iolab.monitors.cpu_sys import derive as cpu_derive
from iolab.monitors.cpu_sys import parse_stat
from iolab.monitors.diskstats import derive as disk_derive
from iolab.monitors.diskstats import parse_diskstats
from iolab.monitors.jbd2 import derive as jbd2_derive
from iolab.monitors.jbd2 import parse_info
from iolab.monitors.tracepoints import PROBES, probes_for, summarize
from iolab.monitors.vmstat import derive as vm_derive

# /proc/fs/jbd2/loop0-8/info on a fresh mount, and after a 1 s fsync-heavy fio job
INFO_FRESH = "0 transactions (0 requested), each up to 2730 blocks\n"
INFO_AFTER = """594 transactions (594 requested), each up to 2730 blocks
average:
  0ms waiting for transaction
  0ms request delay
  0ms running transaction
  0ms transaction was being locked
  0ms flushing data (in ordered mode)
  0ms logging transaction
  2926us average transaction commit time
  2 handles per transaction
  1 blocks per transaction
  3 logged blocks per transaction
""".replace("average:", "average: ")  # the kernel prints a trailing space there
# a busier journal (figures of a report on linux-ext4, plus a request delay), the "after" of
# a second sample
INFO_LATER = """2092 transactions (2091 requested), each up to 8192 blocks
average:
  0ms waiting for transaction
  4ms request delay
  20ms running transaction
  0ms transaction was being locked
  0ms flushing data (in ordered mode)
  20ms logging transaction
  15981us average transaction commit time
  67 handles per transaction
  1 blocks per transaction
  2 logged blocks per transaction
""".replace("average:", "average: ")


def test_jbd2_fresh_mount_gives_the_files_own_means() -> None:
    reading = jbd2_derive(parse_info(INFO_FRESH), parse_info(INFO_AFTER))
    m = reading.metrics
    assert m["jbd2.transactions"] == 594
    assert m["jbd2.handles_per_txn"] == 2
    assert m["jbd2.logged_blocks_per_txn"] == 3
    assert m["jbd2.avg_commit_ms"] == pytest.approx(2.926)
    assert reading.warnings == []


def test_jbd2_weighted_means_and_resolution_warning() -> None:
    before, after = parse_info(INFO_AFTER), parse_info(INFO_LATER)
    reading = jbd2_derive(before, after)
    m = reading.metrics
    assert m["jbd2.transactions"] == 2092 - 594
    assert m["jbd2.handles_per_txn"] == pytest.approx((67 * 2092 - 2 * 594) / (2092 - 594))
    assert m["jbd2.running_ms"] == pytest.approx(20 * 2092 / (2092 - 594))
    # request delay is a mean over requested transactions
    assert m["jbd2.request_delay_ms"] == pytest.approx(4 * 2091 / (2091 - 594))
    # the commit time is the kernel's running average at the end, not a weighted mean
    assert m["jbd2.avg_commit_ms"] == pytest.approx(15.981)
    assert any("±" in w for w in reading.warnings)


def test_jbd2_no_transactions_and_backwards_counters() -> None:
    same = jbd2_derive(parse_info(INFO_AFTER), parse_info(INFO_AFTER))
    assert same.metrics["jbd2.transactions"] == 0
    assert "jbd2.handles_per_txn" not in same.metrics
    back = jbd2_derive(parse_info(INFO_LATER), parse_info(INFO_AFTER))
    assert back.metrics == {} and back.warnings


def test_jbd2_rejects_other_text() -> None:
    with pytest.raises(ValueError, match="not a jbd2 info file"):
        parse_info("hello\n")


# /proc/diskstats lines of this machine: 20 fields (flush present) and a 4.x 14-field line
DISK_BEFORE = (
    "   7       0 loop0 2009948 3 19373688 54755 1179476 4958 49646568 249542 0 48652 "
    "309968 6 0 2228242 0 223405 5670\n"
    "   8       0 sda 10 0 80 5 20 2 400 30 0 40 35\n"
)
DISK_AFTER = (
    "   7       0 loop0 2009950 3 19373700 54756 1180476 5058 49662568 249642 1 49152 "
    "310968 6 0 2228242 0 223905 5690\n"
    "   8       0 sda 10 0 80 5 30 2 480 30 0 50 45\n"
)


def test_diskstats_deltas_gauge_and_derived() -> None:
    reading = disk_derive(
        parse_diskstats(DISK_BEFORE), parse_diskstats(DISK_AFTER), ["loop0", "sda"], 2.0
    )
    m = reading.metrics
    assert m["diskstats.loop0.write_ios"] == 1000
    assert m["diskstats.loop0.write_sectors"] == 16000
    assert m["diskstats.loop0.write_kb_per_io"] == pytest.approx(8.0)
    assert m["diskstats.loop0.in_flight"] == 1  # a gauge: the value at the end
    assert m["diskstats.loop0.flush_ios"] == 500
    assert m["diskstats.loop0.util_pct"] == pytest.approx(500 / 2000 * 100)
    assert m["diskstats.sda.write_kb_per_io"] == pytest.approx(4.0)
    assert "diskstats.sda.flush_ios" not in m
    missing = disk_derive(parse_diskstats(DISK_BEFORE), parse_diskstats(DISK_AFTER), ["sdz"], 1)
    assert missing.warnings and not missing.metrics


def test_cpu_sys_seconds() -> None:
    before = parse_stat("cpu  20589 0 14107 70788 1717 0 1411 49 0 0\ncpu0 1 2 3 4 5 6 7 8 9 0\n")
    after = parse_stat("cpu  20689 0 14207 70988 1717 0 1411 49 0 0\n")
    m = cpu_derive(before, after, 100.0).metrics
    assert m["cpu_sys.user_s"] == pytest.approx(1.0)
    assert m["cpu_sys.idle_s"] == pytest.approx(2.0)
    assert m["cpu_sys.busy_pct"] == pytest.approx(50.0)


def test_vmstat_counters_and_gauges() -> None:
    before = {"nr_dirtied": 100, "pgpgout": 10, "nr_dirty": 50, "nr_dirty_threshold": 9}
    after = {"nr_dirtied": 160, "pgpgout": 30, "nr_dirty": 5, "nr_dirty_threshold": 10}
    m = vm_derive(before, after, {"nr_dirty": 70}).metrics
    assert m["vmstat.nr_dirtied_pages"] == 60
    assert m["vmstat.pgpgout_kb"] == 20
    assert m["vmstat.nr_dirty_pages.end"] == 5
    assert m["vmstat.nr_dirty_pages.max"] == 70
    assert m["vmstat.nr_dirty_threshold_pages.end"] == 10
    assert "vmstat.nr_written_pages" not in m


# trace lines read from a tracefs instance on this machine
TRACE_LINES = [
    "           iolab-3871    [001] .....  1386.578572: ext4_writepages_result: dev 254,0 ino "
    "778343 ret 0 pages_written 1 pages_skipped 0 sync_mode 1 writeback_index 6",
    "    jbd2/loop0-8-10208   [000] ...1.  1387.178474: jbd2_run_stats: dev 7,0 tid 2 wait 0 "
    "request_delay 0 running 124 locked 0 flushing 0 logging 4 handle_count 6 blocks 6 "
    "blocks_logged 8",
    "           mount-10207   [000] .....  1386.524209: block_rq_issue: 7,0 RA 4096 () 262016 "
    "+ 8 be,0,4 [mount]",
]


def test_tracefs_text_patterns_read_real_lines() -> None:
    got = {}
    for probe in PROBES:
        for line in TRACE_LINES:
            m = probe.text.search(line)
            if m:
                got[probe.hist] = (int(m[1]), int(m[2]), int(m[3]))
    assert got == {
        "ext4_writepages_pages": (254, 0, 1),
        "jbd2_handles_per_txn": (7, 0, 6),
        "rq_issue_bytes": (7, 0, 4096),
    }


def test_bpftrace_program_and_map_output() -> None:
    text = program(list(PROBES), [7 << 20 | 3], 4242)
    assert "tracepoint:ext4:ext4_writepages_result /args->dev == 7340035/" in text
    assert "@rq_issue_bytes[args->bytes] = count();" in text
    assert "/pid == 4242/" in text
    # the flush sentinel prints every map before bpftrace is asked to exit
    flush = next(ln for ln in text.splitlines() if "sys_enter_getpgid" in ln)
    assert f"args->pid == {FLUSH_PID}" in flush
    assert all(f"print(@{p.hist});" in flush for p in PROBES)
    lines = [
        json.dumps({"type": "attached_probes", "data": {"probes": 4}}),
        "",
        json.dumps({"type": "map", "data": {"@rq_issue_bytes": {"4096": 3, "0": 2}}}),
        json.dumps({"type": "map", "data": {"@jbd2_handles_per_txn": {"2": 5}}}),
    ]
    hists = parse_maps(lines, list(PROBES))
    assert hists["hist.rq_issue_bytes"] == {4096.0: 3, 0.0: 2}
    assert hists["hist.jbd2_handles_per_txn"] == {2.0: 5}
    assert hists["hist.ext4_writepages_pages"] == {}


def test_summary_and_probe_selection(tmp_path: Path) -> None:
    assert summarize("hist.x_bytes", {4096.0: 3, 0.0: 1}) == {
        "hist.x_bytes.count": 4.0,
        "hist.x_bytes.mean": 3072.0,
    }
    assert summarize("hist.y", {}) == {"hist.y.count": 0.0}
    from iolab.monitors.base import MonitorContext

    class NoJournal:
        def record(self, kind: str, **undo: str) -> int:
            raise AssertionError

        def undone(self, entry_id: int) -> None:
            raise AssertionError

    raw = MonitorContext(["loop9"], None, None, NoJournal(), tmp_path)
    assert [p.hist for p in probes_for(raw)] == ["rq_issue_bytes"]


def test_registry() -> None:
    assert {"jbd2", "diskstats", "vmstat", "cpu_sys", "hist"} <= set(registry.available_names())
    monitors = registry.create(["jbd2", "hist@tracefs", "jbd2"])
    assert [m.name for m in monitors] == ["jbd2", "hist"]
    with pytest.raises(PlanError, match="unknown monitor 'iostat'"):
        registry.create(["iostat"])


@pytest.mark.parametrize(
    ("name", "unit"),
    [
        ("jbd2.running_ms", "ms"),
        ("jbd2.handles_per_txn", "count"),
        ("diskstats.loop3.write_kb_per_io", "KiB"),
        ("diskstats.loop3.write_sectors", "sectors"),
        ("diskstats.loop3.util_pct", "%"),
        ("vmstat.nr_dirty_pages.max", "pages"),
        ("vmstat.pgpgout_kb", "KiB"),
        ("cpu_sys.iowait_s", "s"),
        ("cpu_sys.busy_pct", "%"),
        ("hist.rq_issue_bytes.mean", "B"),
        ("hist.ext4_writepages_pages.mean", "pages"),
        ("hist.jbd2_handles_per_txn.count", "count"),
    ],
)
def test_monitor_metric_units(name: str, unit: str) -> None:
    assert metric_info(name).unit == unit


def test_tracefs_reader_joins_lines_split_across_reads() -> None:
    """trace_pipe hands out bytes, not lines: a record cut between two reads counts once."""
    import os

    from iolab.monitors.tracefs import TracefsSession

    session = TracefsSession(list(PROBES), [7 << 20 | 0], journal=None)  # type: ignore[arg-type]
    r, w = os.pipe()
    os.set_blocking(r, False)
    session._fd = r
    try:
        text = ("\n".join(TRACE_LINES) + "\n").encode()
        cut = text.index(b"handle_count") + 5
        os.write(w, text[:cut])
        assert session._drain()
        os.write(w, text[cut:])
        while session._drain():
            pass
    finally:
        os.close(w)
        os.close(r)
        session._fd = None
    # the ext4 line is of another device (254,0) and is left out
    assert session._bins == {
        "hist.ext4_writepages_pages": {},
        "hist.jbd2_handles_per_txn": {6.0: 1},
        "hist.rq_issue_bytes": {4096.0: 1},
    }
