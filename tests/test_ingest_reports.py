"""The comparison-table readers on real robot and peer mails (tests/data/reports, sources
in its SOURCES.md): rows checked field by field, robot facts, and mangled copies (re-wrapped
by a mail client, quoted, CRLF) reading the same as the originals."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from iolab.ingest.comparisons import find_comparisons
from iolab.model.comparison import Comparison, Row

DATA = Path(__file__).parent / "data" / "reports"


def tables(name: str, text: str | None = None) -> list[Comparison]:
    path = DATA / name
    return find_comparisons(path.read_text() if text is None else text, str(path))


def fields(r: Row) -> tuple[object, ...]:
    return (
        r.metric,
        r.cell,
        r.base,
        r.base_stddev_pct,
        r.change_pct,
        r.change_abs,
        r.new,
        r.new_stddev_pct,
    )


def seen(*values: object) -> tuple[object, ...]:
    """The values as a plain tuple, to compare with one holding pytest.approx."""
    return values


def row(t: Comparison, metric: str, cell: str | None = None) -> Row:
    (found,) = [r for r in t.rows if r.metric == metric and r.cell == cell]
    return found


def _rewrapped(text: str, width: int = 72) -> str:
    """What a mail client does: long lines broken at spaces, nothing else touched."""
    out = []
    for line in text.splitlines():
        if len(line) <= width:
            out.append(line)
            continue
        out += textwrap.wrap(line, width, break_long_words=False, break_on_hyphens=False)
    return "\n".join(out) + "\n"


# --- 0-day / LKP ----------------------------------------------------------------------


def test_lkp_2026_fio_write_iops_every_fact_and_row() -> None:
    (t,) = tables("lkp/2026-btrfs-fio-write-iops.txt")
    assert t.format == "lkp" and len(t.rows) == 63
    assert t.columns == ["34308187395ff01f", "4e159150a9a56d66d247f4b5510"]
    robot = t.robot
    assert robot is not None
    assert robot.commit == "4e159150a9a56d66d247f4b5510bed46fe58aa1c"
    assert robot.subject == (
        "btrfs: do not strictly require dirty metadata threshold for metadata writepages"
    )
    assert (robot.base, robot.base_subject) == (
        "3430818739",
        "btrfs: add extra device item checks at mount",
    )
    assert robot.branch == "https://git.kernel.org/cgit/linux/kernel/git/torvalds/linux.git master"
    assert (robot.testcase, robot.config, robot.compiler) == (
        "fio-basic",
        "x86_64-rhel-9.4",
        "gcc-14",
    )
    assert robot.machine == (
        "64 threads 2 sockets Intel(R) Xeon(R) Gold 6346 CPU @ 3.10GHz (Ice Lake) with 256G memory"
    )
    assert robot.parameters == {
        "runtime": "300s",
        "disk": "1HDD",
        "fs": "btrfs",
        "nr_task": "1",
        "test_size": "128G",
        "rw": "write",
        "bs": "4k",
        "ioengine": "pvsync2",
        "cpufreq_governor": "performance",
    }
    (h,) = robot.headlines
    assert (h.metric, h.change_pct, h.direction) == ("fio.write_iops", -6.5, "regression")
    assert robot.link == "https://lore.kernel.org/oe-lkp/202602122319.d71b793c-lkp@intel.com"
    assert t.dimensions["tbox_group"] == "lkp-icl-2sp9" == t.testbox
    assert t.dimensions["rootfs"] == "debian-13-x86_64-20250902.cgz"
    assert len(t.dimensions) == 14
    assert fields(t.rows[0]) == ("cpuidle..usage", None, 25998829, None, -6.1, None, 24422371, None)
    assert fields(row(t, "meminfo.Dirty")) == ("meminfo.Dirty", None, 1215, 3, -10.1, None, 1093, 3)
    assert fields(row(t, "turbostat.Busy%")) == (
        "turbostat.Busy%",
        None,
        1.32,
        None,
        None,
        -0.1,
        1.26,
        None,
    )
    assert fields(row(t, "fio.write_clat_stddev")) == (
        "fio.write_clat_stddev",
        None,
        250398,
        2,
        31.1,
        None,
        328384,
        None,
    )
    assert fields(row(t, "perf-stat.i.branch-instructions")) == (
        "perf-stat.i.branch-instructions",
        None,
        5.513e8,
        None,
        -4.8,
        None,
        5.247e8,
        None,
    )
    assert fields(row(t, "fio.latency_1000us%")) == (
        "fio.latency_1000us%",
        None,
        0.01,
        None,
        None,
        0.0,
        0.02,
        12,
    )
    last = t.rows[-1]
    assert fields(last) == (
        "perf-profile.self.cycles-pp.btrfs_csum_file_blocks",
        None,
        0.02,
        141,
        None,
        0.0,
        0.06,
        9,
    )


def test_lkp_2019_quoted_rewrapped_rows_take_their_pushed_down_names() -> None:
    (t,) = tables("lkp/2019-btrfs-fio-quoted-rewrapped.txt")
    assert len(t.rows) == 54  # the fail:runs block (with its wrapped names) is not rows
    assert not [r for r in t.rows if r.metric is None or r.metric.startswith("dmesg")]
    assert fields(row(t, "fio.time.file_system_outputs")) == (
        "fio.time.file_system_outputs",
        None,
        1.017e8,
        None,
        -28.5,
        None,
        72701525,
        None,
    )
    assert fields(row(t, "numa-numastat.node1.numa_hit")) == (
        "numa-numastat.node1.numa_hit",
        None,
        7768618,
        12,
        -26.9,
        None,
        5681573,
        6,
    )
    assert fields(row(t, "fio.write_bw_MBps")) == (
        "fio.write_bw_MBps",
        None,
        247.91,
        None,
        -28.6,
        None,
        176.96,
        None,
    )
    assert fields(row(t, "fio.latency_4ms%")) == (
        "fio.latency_4ms%",
        None,
        66.81,
        None,
        None,
        -5.9,
        60.90,
        2,
    )
    robot = t.robot
    assert robot is not None and robot.commit == "8d47a0d8f7947422dd359ac8e462687f81a7a137"
    assert robot.subject == "btrfs: Do mandatory tree block check before submitting bio"
    assert robot.base_subject == "btrfs: tree-checker: Remove comprehensive root owner check"
    assert robot.machine == "72 threads Intel(R) Xeon(R) CPU E5-2699 v3 @ 2.30GHz with 256G memory"
    assert robot.parameters["nr_task"] == "50%" and robot.parameters["ucode"] == "0x3d"
    assert t.dimensions["time_based"] == "tb" and t.dimensions["tbox_group"] == "lkp-hsw-ep2"
    (h,) = robot.headlines
    assert (h.metric, h.change_pct, h.direction) == ("fio.write_bw_MBps", -28.6, "regression")
    # the robot's own message is the thread's first reference
    assert robot.link == "https://lore.kernel.org/r/20190513031733.GI31424@shao2-debian"


def test_lkp_2023_two_parameter_sets_and_two_headlines() -> None:
    stress, fio = tables("lkp/2023-btrfs-stress-ng-quoted.txt")
    assert (len(stress.rows), len(fio.rows)) == (21, 48)
    assert stress.dimensions["testcase"] == "stress-ng" and stress.testbox == "lkp-skl-d08"
    assert fio.dimensions["testcase"] == "fio-basic" and fio.testbox == "lkp-icl-2sp9"
    assert fio.dimensions["ioengine"] == "ftruncate" and fio.dimensions["nr_task"] == "100%"
    assert fields(row(stress, "iostat.cpu.iowait")) == (
        "iostat.cpu.iowait",
        None,
        0.13,
        4,
        742.3,
        None,
        1.12,
        12,
    )
    assert fields(row(fio, "numa-meminfo.node0.Unevictable")) == (
        "numa-meminfo.node0.Unevictable",
        None,
        261078,
        138,
        486.3,
        None,
        1530767,
        78,
    )
    assert fields(fio.rows[-1]) == ("fio.write_iops", None, 395291, None, -11.2, None, 350824, None)
    robot = stress.robot
    assert robot is not None and robot is fio.robot
    main, impact = robot.headlines
    assert (main.metric, main.change_pct, main.testcase) == (
        "stress-ng.sync-file.ops_per_sec",
        -44.2,
        "stress-ng",
    )
    assert (impact.metric, impact.change_pct, impact.testcase) == (
        "fio.write_iops",
        -11.2,
        "fio-basic",
    )
    assert impact.machine is not None and impact.machine.startswith("64 threads 2 sockets")
    assert impact.parameters == {
        "bs": "4k",
        "cpufreq_governor": "performance",
        "disk": "1HDD",
        "fs": "btrfs",
        "ioengine": "ftruncate",
        "nr_task": "100%",
        "runtime": "300s",
        "rw": "write",
        "test_size": "128G",
    }
    assert robot.base == "d80879b7d6"


def test_lkp_2014_tilde_layout_cells_and_totals() -> None:
    found = tables("lkp/2014-map-pages.txt")
    assert len(found) == 23 and sum(len(t.rows) for t in found) == 51
    first = found[0]
    assert [fields(r) for r in first.rows] == [
        ("proc-vmstat.pgfault", "lkp-t410/micro/netperf/120s-200%-TCP_MAERTS",
         591248, 0, -56.1, None, 259664, 0),
        ("proc-vmstat.pgfault", "lkp-ws02/micro/dd-write/11HDD-JBOD-cfq-ext4-10dd",
         5090162, 0, -55.4, None, 2272005, 0),
        ("proc-vmstat.pgfault", "TOTAL", 5681411, 0, -55.4, None, 2531670, 0),
    ]  # fmt: skip
    l1 = found[14].rows[-1]
    assert fields(l1) == ("perf-stat.L1-icache-load-misses", "TOTAL", 3.698e11, 0, -11.3, None,
                          3.28e11, 0)  # fmt: skip
    robot = first.robot
    assert robot is not None and robot.commit == "66431c4de9921a9b3c7f3556bada4285912aedb7"
    (h,) = robot.headlines  # from the subject: "66431c4de99: -55.4% proc-vmstat.pgfault"
    assert (h.metric, h.change_pct, h.direction) == ("proc-vmstat.pgfault", -55.4, "change")


# The 2014 ext4 dd-write mail (Fengguang Wu, linux-mm): one table per metric, its test cells
# (dd-write on an 11-disk JBOD, ext4) and a TOTAL row; a `+Inf%` change over a base of 0.
# (cell, base, base ~sd%, change %, new, new ~sd%) per metric, as the mail prints them.
_DD_WRITE_EXT4_2014 = {
    "fileio.request_latency_max_ms": [
        ("snb-drag/sysbench/fileio/600s-100%-1HDD-ext4-64G-1024-seqwr-sync",
         864.70, 5, -27.5, 627.28, None),
        ("snb-drag/sysbench/fileio/600s-100%-1HDD-xfs-64G-1024-rndwr-sync",
         178.20, 104, -99.9, 0.13, None),
        ("TOTAL", 1042.90, 22, -39.8, 627.41, None),
    ],
    "last_state.is_incomplete_run": [
        ("lkp-a04/fake/boot/1", 0, None, "+Inf%", 1, 0),
        ("TOTAL", 0, None, "+Inf%", 1, 0),
    ],
    "ftrace.writeback_single_inode.sdg.age": [
        ("lkp-ws02/micro/dd-write/11HDD-JBOD-cfq-ext4-10dd", 10, 10, 1560.0, 166, None),
        ("TOTAL", 10, 10, 1560.0, 166, None),
    ],
    "cpuidle.POLL.time": [
        ("lkp-snb01/micro/hackbench/1600%-process-socket", 9662, 19, 17955.3, 1744594, None),
        ("lkp-snb01/micro/hackbench/1600%-threads-socket", 4235, 22, 6497.6, 279443, None),
        ("lkp-snb01/micro/hackbench/50%-process-pipe", 3842, 4, 1468.7, 60278, None),
        ("lkp-snb01/micro/hackbench/50%-process-socket", 17181, 3, 393.1, 84722, None),
        ("TOTAL", 34922, 10, 6111.0, 2169037, None),
    ],
    "ftrace.balance_dirty_pages.sdl.period": [
        ("lkp-ws02/micro/dd-write/11HDD-JBOD-cfq-ext4-10dd", 34, 1, 61.8, 56, None),
        ("TOTAL", 34, 1, 61.8, 56, None),
    ],
    "vmstat.memory.buff": [
        ("snb-drag/sysbench/fileio/600s-100%-1HDD-xfs-64G-1024-rndwr-sync",
         312, 0, -10.4, 280, None),
        ("TOTAL", 312, 0, -10.4, 280, None),
    ],
    "interrupts.125:PCI-MSI-edge.eth1-TxRx-4": [
        ("lkp-ws02/micro/dd-write/11HDD-JBOD-cfq-ext4-100dd", 350, 3, 3056.4, 11057, None),
        ("lkp-ws02/micro/dd-write/11HDD-JBOD-cfq-ext4-10dd", 340, 2, 1792.2, 6443, None),
        ("TOTAL", 690, 3, 2433.3, 17500, None),
    ],
    "interrupts.127:PCI-MSI-edge.eth1-TxRx-6": [
        ("lkp-ws02/micro/dd-write/11HDD-JBOD-cfq-ext4-1dd", 310, 1, 2021.3, 6595, None),
        ("TOTAL", 310, 1, 2021.3, 6595, None),
    ],
    "interrupts.101:PCI-MSI-edge.eth1-TxRx-1": [
        ("lkp-sb03/micro/nepim/300s-100%-udp", 157, 4, 118.4, 344, None),
        ("TOTAL", 157, 4, 118.4, 344, None),
    ],
    "boottime.dhcp": [
        ("lkp-a05/fake/boot/1", 40.55, 0, -50.6, 20.02, None),
        ("TOTAL", 40.55, 0, -50.6, 20.02, None),
    ],
    "boottime.boot": [
        ("lkp-a05/fake/boot/1", 60.79, 0, -47.8, 31.74, None),
        ("TOTAL", 60.79, 0, -47.8, 31.74, None),
    ],
    "boottime.idle": [
        ("lkp-a05/fake/boot/1", 186, 0, -46.1, 100, None),
        ("TOTAL", 186, 0, -46.1, 100, None),
    ],
    "interrupts.50:PCI-MSI-edge.eth0-tx-0": [
        ("lkp-a05/micro/iperf/300s-tcp", 157, 3, 84.7, 290, None),
        ("TOTAL", 157, 3, 84.7, 290, None),
    ],
    "interrupts.LOC": [
        ("lkp-sb03/micro/nepim/300s-25%-udp", 212639, 1, 48.1, 314887, None),
        ("TOTAL", 212639, 1, 48.1, 314887, None),
    ],
    "interrupts.47:PCI-MSI-edge.eth0-rx-1": [
        ("lkp-a05/micro/iperf/300s-tcp", 207, 2, 35.8, 282, None),
        ("TOTAL", 207, 2, 35.8, 282, None),
    ],
}  # fmt: skip


@pytest.mark.parametrize(
    "mangle",
    [
        pytest.param(lambda s: s, id="as-sent"),
        pytest.param(lambda s: "".join(f"> {line}\n" for line in s.splitlines()), id="quoted"),
        # a mail client's re-wrap pushes long cells, and the metric of `TOTAL metric`, down
        pytest.param(_rewrapped, id="rewrapped"),
        pytest.param(lambda s: _rewrapped(s, 60), id="rewrapped-60"),
        pytest.param(lambda s: s.replace("\n", "\r\n"), id="crlf"),
    ],
)
def test_lkp_2014_dd_write_ext4_every_row(mangle: object) -> None:
    name = "lkp/2014-fengguang-dd-write-ext4-jbod.txt"
    body = (DATA / name).read_text().split("\n\n", 1)[1]
    assert callable(mangle)
    text = mangle(body)
    found = tables(name, text)
    got = {
        t.rows[0].metric: [
            (r.cell, r.base, r.base_stddev_pct,
             r.change_printed if r.change_pct is None else r.change_pct, r.new, r.new_stddev_pct)
            for r in t.rows
        ]
        for t in found
    }  # fmt: skip
    assert got == _DD_WRITE_EXT4_2014
    assert list(got) == list(_DD_WRITE_EXT4_2014)  # in the mail's order
    assert sum(len(t.rows) for t in found) == 35
    for t in found:
        assert t.columns == ["v3.14", "685561ea2d015cb90c45504ec"]
        assert {r.metric for r in t.rows} == {t.rows[0].metric}
        assert all(r.change_abs is None for r in t.rows)


def test_rewrapping_pushes_the_2014_total_metric_down() -> None:
    body = (DATA / "lkp/2014-fengguang-dd-write-ext4-jbod.txt").read_text().split("\n\n", 1)[1]
    assert "\nfileio.request_latency_max_ms\n" in _rewrapped(body)
    assert "\n1HDD-ext4-64G-1024-seqwr-sync\n" not in _rewrapped(body)


def test_lkp_2025_ext4_on_md_raid0_facts_and_rows() -> None:
    """aim7 on ext4 over an md RAID0 of 4 ramdisks: the `\\ | \\` layout, a negative base,
    absolute changes for percentage metrics, a second headline in the impact box."""
    (t,) = tables("lkp/2025-ext4-large-folio-aim7-raid0.txt")
    assert len(t.rows) == 129 and t.columns == ["01e807e18fd87937", "7ac67301e82f02b77a5c8e7377a"]
    robot = t.robot
    assert robot is not None
    assert robot.commit == "7ac67301e82f02b77a5c8e7377a1f414ef108b84"
    assert robot.subject == "ext4: enable large folio for regular file"
    assert (robot.base, robot.testcase) == ("01e807e18f", "aim7")
    assert robot.parameters == {
        "disk": "4BRD_12G", "md": "RAID0", "fs": "ext4", "test": "creat-clo", "load": "1000",
        "cpufreq_governor": "performance",
    }  # fmt: skip
    assert [(h.metric, h.change_pct, h.direction) for h in robot.headlines] == [
        ("aim7.jobs-per-min", -22.9, "regression"),
        ("filebench.sum_operations/s", 13.9, "improvement"),
    ]
    assert robot.link == "https://lore.kernel.org/oe-lkp/202506032249.cd0b4bc-lkp@intel.com"
    assert t.dimensions["md"] == "RAID0" and t.testbox == "lkp-csl-2sp3"
    assert fields(t.rows[0]) == ("cpuidle..time", None, 1.039e10, 33, 141.0, None, 2.504e10, None)
    assert fields(row(t, "aim7.jobs-per-min")) == (
        "aim7.jobs-per-min", None, 12003, 6, -22.9, None, 9255, None,
    )  # fmt: skip
    assert fields(row(t, "mpstat.cpu.all.idle%")) == (
        "mpstat.cpu.all.idle%", None, 21.11, 23, None, 19.0, 40.15, None,
    )  # fmt: skip
    assert fields(row(t, "sched_debug.cpu.nr_uninterruptible.min")) == (
        "sched_debug.cpu.nr_uninterruptible.min", None, -436.21, None, 166.4, None, -1162, None,
    )  # fmt: skip
    assert fields(t.rows[-1]) == ("sched_debug.sched_clk", None, 289382, 5, 24.5, None, 360266, 4)


@pytest.mark.parametrize(
    "mangle",
    [
        pytest.param(lambda s: s, id="as-sent"),
        pytest.param(lambda s: "".join(f"> {line}\n" for line in s.splitlines()), id="quoted"),
        pytest.param(_rewrapped, id="rewrapped"),
        pytest.param(lambda s: _rewrapped(s).replace("\n", "\r\n"), id="rewrapped-crlf"),
    ],
)
def test_lkp_2011_writeback_matrix_over_jbod_raid0_and_thresholds(mangle: object) -> None:
    """Fengguang Wu's 2011 dd writeback matrix (the family of the missing ext4 RAID thread):
    seven tables named by the line above them, cells over JBOD/RAID0/NFS and dirty
    thresholds, a TOTAL row in five; the ext4 rows and the RAID0 table checked exactly."""
    name = "lkp/2011-fengguang-ioless-jbod-raid0.txt"
    assert callable(mangle)
    found = tables(name, mangle((DATA / name).read_text().split("\n\n", 1)[1]))
    assert [(t.caption, len(t.rows)) for t in found] == [
        ("USB stick", 5), ("single disk", 41), ("single disk, different dd block sizes", 9),
        ("JBOD", 51), ("software RAID0", 4), ("NFS", 13),
        ("the NFS smooth patch may cut the regressions by half", 13),
    ]  # fmt: skip
    assert all(t.columns == ["3.1.0-rc4-vanilla+", "3.1.0-rc8-ioless6+"] for t in found[:6])
    assert found[6].columns == ["3.1.0-rc8-ioless6+", "3.1.0-rc4-nfs-smooth+"]
    assert all(r.metric is None and r.change_abs is None for t in found for r in t.rows)
    raid0 = [(r.cell, r.base, r.change_pct, r.new) for r in found[4].rows]
    assert raid0 == [
        ("RAID0-10HDD-16G/xfs-1000dd-1M-24p-16384M-20:10-X", 562.90, -2.3, 549.79),
        ("RAID0-10HDD-16G/xfs-100dd-1M-24p-16384M-20:10-X", 662.22, -0.5, 659.09),
        ("RAID0-10HDD-16G/xfs-10dd-1M-24p-16384M-20:10-X", 645.99, 0.7, 650.40),
        ("TOTAL", 1871.12, -0.6, 1859.27),
    ]
    ext4 = [
        (r.cell, r.base, r.change_pct, r.new) for r in found[1].rows if "/ext4-" in (r.cell or "")
    ]
    assert ext4 == [
        ("thresh=100M/ext4-10dd-4k-8p-4096M-100M:10-X", 47.59, -0.2, 47.50),
        ("thresh=100M/ext4-1dd-4k-8p-4096M-100M:10-X", 56.83, 2.4, 58.18),
        ("thresh=100M/ext4-2dd-4k-8p-4096M-100M:10-X", 54.81, 1.8, 55.79),
        ("thresh=1G/ext4-100dd-4k-8p-4096M-1024M:10-X", 53.25, -3.3, 51.47),
        ("thresh=1G/ext4-10dd-4k-8p-4096M-1024M:10-X", 56.17, 0.0, 56.19),
        ("thresh=1G/ext4-1dd-4k-8p-4096M-1024M:10-X", 58.11, 0.5, 58.41),
    ]
    jbod_ext4 = [r for r in found[3].rows if "/ext4-" in (r.cell or "")]
    assert len(jbod_ext4) == 20
    assert (jbod_ext4[0].cell, jbod_ext4[0].base, jbod_ext4[0].new) == (
        "JBOD-10HDD-6G/ext4-100dd-1M-16p-8192M-20:10-X", 330.97, 335.62,
    )  # fmt: skip
    assert fields(found[3].rows[-1]) == (None, "TOTAL", 19621.76, None, 1.8, None, 19968.81, None)
    assert all(r.base_stddev_pct is None and r.new_stddev_pct is None for r in found[3].rows)


def test_lkp_2011_kernel_columns_cells_and_a_row_without_change() -> None:
    summary, bw, reclaim = tables("lkp/2011-fengguang-per-zone-dirty.txt")
    assert summary.columns == [
        "3.1.0-rc9-ioless-full-nfs-wq5-next-20111014+",
        "3.1.0-rc9-ioless-full-per-zone-dirty-next-20111014+",
    ]
    assert [fields(r) for r in summary.rows] == [
        ("write_bw", "TOTAL", 2056.51, None, 1.0, None, 2076.29, None),
        ("nr_vmscan_immediate_reclaim", "TOTAL", 32260625.0, None, -86.0, None, 4532517.0, None),
        ("cpu_user", "TOTAL", 90.44, None, 25.7, None, 113.67, None),
        ("cpu_system", "TOTAL", 113.05, None, 9.9, None, 124.25, None),
    ]
    assert len(bw.rows) == 49 and {r.metric for r in bw.rows} == {"write_bw"}
    assert fields(bw.rows[0]) == (
        "write_bw", "thresh=1000M/btrfs-100dd-4k-8p-4096M-1000M:10-X", 52.43, None, 1.3, None,
        53.12, None,
    )  # fmt: skip
    assert len(reclaim.rows) == 24  # the archive's copy ends inside this table: no TOTAL
    xfs = row(reclaim, None, "thresh=100M/xfs-1dd-4k-8p-4096M-100M:10-X")  # type: ignore[arg-type]
    assert (xfs.base, xfs.change_pct, xfs.new) == (716571.0, None, 0.0)
    assert summary.robot is None  # a person's mail, not the robot's


# --- mangled copies ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "mangle",
    [
        pytest.param(lambda s: s.replace("\n", "\r\n"), id="crlf"),
        pytest.param(lambda s: "".join(f"> {line}\n" for line in s.splitlines()), id="quoted"),
        pytest.param(lambda s: "".join(f">> {line}\n" for line in s.splitlines()), id="quoted2"),
        pytest.param(_rewrapped, id="rewrapped"),
        pytest.param(lambda s: _rewrapped(s).replace("\n", "\r\n"), id="rewrapped-crlf"),
        # a web archive's rendering (hypermail at lkml.iu.edu shows the 2026 mail this way):
        # every line's indent stripped
        pytest.param(lambda s: "\n".join(line.lstrip() for line in s.split("\n")), id="lstrip"),
    ],
)
@pytest.mark.parametrize(
    "name",
    [
        "lkp/2026-btrfs-fio-write-iops.txt",
        "lkp/2023-btrfs-stress-ng-quoted.txt",
        "lkp/2025-ext4-large-folio-aim7-raid0.txt",
    ],
)
def test_mangled_copies_read_the_same(name: str, mangle: object) -> None:
    original = (DATA / name).read_text()
    body = original.split("\n\n", 1)[1]  # a pasted copy: the body, without the headers
    want_tables = tables(name, body)
    want = [[fields(r) for r in t.rows] for t in want_tables]
    assert callable(mangle)
    got_tables = tables(name, mangle(body))
    got = [[fields(r) for r in t.rows] for t in got_tables]
    assert got == want and sum(map(len, want)) > 60
    assert [t.dimensions for t in got_tables] == [t.dimensions for t in want_tables]
    robot, want_robot = got_tables[0].robot, want_tables[0].robot
    assert robot is not None and want_robot is not None
    assert (robot.commit, robot.subject, robot.base, robot.link) == (
        want_robot.commit, want_robot.subject, want_robot.base, want_robot.link,
    )  # fmt: skip
    assert [h.to_json() for h in robot.headlines] == [h.to_json() for h in want_robot.headlines]
    assert robot.parameters == want_robot.parameters


def test_rewrapping_really_pushes_names_down() -> None:
    body = (DATA / "lkp/2026-btrfs-fio-write-iops.txt").read_text().split("\n\n", 1)[1]
    wrapped = _rewrapped(body)
    assert "\nperf-profile.calltrace.cycles-pp.try_to_block_task" in wrapped


# --- mmtests ------------------------------------------------------------------------------


def test_mmtests_five_kernel_columns() -> None:
    (t,) = tables("mmtests/2020-specjbb-five-kernels.txt")
    assert t.change_kind == "gain" and len(t.rows) == 40
    assert t.columns == [
        "5.6.0-rc1 baseline-v3",
        "5.6.0-rc1 loadavg-v3",
        "5.6.0-rc1 lbidle-v3",
        "5.6.0-rc1 classify-v3",
        "5.6.0-rc1 stopsearch-v3",
    ]
    r = row(t, "tput-2")
    assert (r.stat, r.values, r.changes_pct, r.marks) == (
        "Hmean",
        [95692.84, 93196.89, 92287.78, 92397.06, 91859.96],
        [0.0, -2.61, -3.56, -3.44, -4.01],
        [False, True, True, True, True],
    )
    assert (r.base, r.new, r.change_pct, r.significant) == (95692.84, 91859.96, -4.01, True)
    r = row(t, "tput-16")
    assert r.changes_pct == [0.0, -35.33, -2.26, 0.20, 1.41]
    assert r.marks == [False, True, False, False, False]


def test_mmtests_headers_captions_and_statistics() -> None:
    hack, tbench = tables("mmtests/2021-hackbench-tbench.txt")
    assert hack.caption == "config-workload-hackbench-process-pipes"
    assert hack.columns == ["5.16-rc1", "5.16-rc1+patch"] == tbench.columns
    assert (hack.rows[0].stat, hack.rows[0].metric) == ("Amean", "1")
    assert [(r.base, r.new, r.change_pct, r.significant) for r in hack.rows[-3:]] == [
        (6.8677, 6.6241, 3.55, True),
        (10.3759, 9.5785, 7.69, True),
        (13.4606, 12.3713, 8.09, True),
    ]
    disk, large = tables("mmtests/2021-reaim-quoted.txt")
    assert (disk.caption, disk.columns, len(disk.rows)) == ("reaim-io-disk-xfs", [], 18)
    s = next(r for r in disk.rows if r.stat == "Hmean" and r.metric == "disk-121")
    assert (s.base, s.new, s.change_pct, s.significant) == (
        373456.79, 309199.32, -17.21, True,
    )  # fmt: skip
    sd = next(r for r in disk.rows if r.stat == "Stddev" and r.metric == "disk-121")
    assert (sd.base, sd.new, sd.change_pct, sd.significant) == (5730.56, 11714.34, -104.42, False)
    assert large.caption == "reaim-io-disk-large-xfs"
    sky, cascade, pf = tables("mmtests/2022-highpcp-quoted.txt")
    assert sky.caption == "1-socket Skylake" and len(sky.columns) == 3
    assert [r.stat for r in sky.rows] == [
        "Min", "Amean", "Stddev", "CoeffVar", "Max", "BAmean-50", "BAmean-95", "BAmean-99",
    ]  # fmt: skip
    cv = sky.rows[3]
    assert (cv.values, cv.changes_pct, cv.marks) == (
        [0.89, 0.0, 0.0], [0.0, 100.0, 100.0], [False, False, False],
    )  # fmt: skip
    am = cascade.rows[1]
    assert (am.values, am.changes_pct, am.marks) == (
        [529.0, 521.0, 516.0], [0.0, 1.51, 2.46], [False, False, True],
    )  # fmt: skip
    assert pf.columns == ["5.17.0-rc3 vanilla", "5.17.0-rc3 mm-highpcpopt-v1r4"]
    r79 = row(pf, "page_fault1-processes-79")  # a `<---` after the row
    assert (r79.base, r79.new, r79.change_pct) == (25928742.64, 25920933.41, -0.03)


# --- fsperf -------------------------------------------------------------------------------


def test_fsperf_with_and_without_stdev() -> None:
    dbench, empty, untar = tables("fsperf/2021-delalloc-stdev-quoted.txt")
    assert dbench.caption == "dbench60 results" and len(dbench.rows) == 17
    r = row(dbench, "flush")
    assert (r.base, r.new, r.stddev, r.change_pct, r.significant) == (
        22292.41, 35005.49, 15197.94, 57.03, None,
    )  # fmt: skip
    r = row(empty, "write_bw_bytes")
    assert (r.base, r.new, r.stddev, r.change_pct) == (1.83e8, 1.77e8, 5516543.33, -3.19)
    assert [fields(x) for x in untar.rows] == [
        ("elapsed", None, 46.89, None, -0.29, None, 46.75, None)
    ]
    found = tables("fsperf/2021-preemptive-flushing-no-stdev.txt")
    assert [len(t.rows) for t in found] == [17, 17, 17, 1]
    close = row(found[0], "close")  # "-13.91%å": a stray byte after the diff
    assert (close.base, close.new, close.change_pct, close.stddev) == (1.90, 1.64, -13.91, None)
    dio = row(found[2], "write_bw_bytes")
    assert (dio.base, dio.new, dio.change_pct) == (74302497.38, 90667585, 22.02)


def test_fsperf_stars_and_rows_wrapped_over_lines() -> None:
    (t,) = tables("fsperf/2025-xarray-writeback-stars-wrapped.txt")
    assert t.caption == "smallfiles100k results" and len(t.rows) == 19
    got = {r.metric: (r.base, r.new, r.stddev, r.change_pct, r.significant) for r in t.rows}
    assert got["avg_commit_ms"] == (68.58, 58.44, 3.35, -14.79, True)
    assert got["commits"] == (270.60, 254.70, 16.24, -5.88, False)
    assert got["dev_write_kbytes"] == (10939976.40, 10605701.20, 351330.32, -3.06, False)
    assert got["end_state_mount_ns"] == (41251498.80, 35773220.70, 2531205.32, -13.28, True)
    assert got["end_state_umount_ns"] == (1.90e9, 1.50e9, 14186226.85, -21.38, True)
    assert got["write_bw_bytes"] == (42935768.20, 64318451.10, 1609415.05, 49.80, True)
    assert got["write_lat_ns_max"] == (1.01e8, 90516129, 3910102.06, -10.29, True)
    assert got["write_lat_ns_mean"] == (366556.19, 243308.48, 14154.51, -33.62, True)


# --- benchstat ----------------------------------------------------------------------------


def test_benchstat_old_format() -> None:
    time, alloc, allocs = tables("benchstat/wazero-old-format.txt")
    assert time.rows[0].unit == "time/op" and len(time.rows) == 3
    same = time.rows[0]  # "~ (p=0.114 n=4+4)": no significant change, no delta printed
    assert seen(same.metric, same.base, same.new, same.change_pct, same.significant) == (
        "KatexStartStop/PoolSize1-10", pytest.approx(0.0157), pytest.approx(0.0165), None, False,
    )  # fmt: skip
    assert (same.base_stddev_pct, same.new_stddev_pct, same.p_value, same.n) == (3, 3, 0.114, "4+4")
    r = time.rows[1]
    assert seen(r.base, r.new, r.change_pct, r.significant, r.p_value) == (
        pytest.approx(0.0923), pytest.approx(0.0201), -78.23, True, 0.029,
    )  # fmt: skip
    assert (alloc.rows[2].base, alloc.rows[2].new) == (203e6, 93e6)
    assert (allocs.rows[0].base, allocs.rows[0].new, allocs.rows[0].change_pct) == (
        19800, 25800, 30.0,
    )  # fmt: skip
    _t, a, n = tables("benchstat/tidb-old-format-zero.txt")
    assert (a.rows[0].base, a.rows[0].new, a.rows[0].new_stddev_pct) == (56.0, 0.0, None)
    assert (n.rows[0].change_pct, n.rows[0].n) == (-100.0, "10+10")


def test_benchstat_new_format() -> None:
    sec, mem, allocs = tables("benchstat/ccf-new-format.txt")
    assert sec.columns == ["bench_json_events_48k.log", "bench_ccf_events_48k.log"]
    assert [r.metric for r in sec.rows] == [
        "EncodeBatchEvents-20", "DecodeBatchEvents-20", "geomean",
    ]  # fmt: skip
    enc = sec.rows[0]
    assert seen(enc.unit, enc.base, enc.new, enc.base_stddev_pct, enc.new_stddev_pct) == (
        "sec/op", pytest.approx(0.09661), pytest.approx(0.07073), 4, 3,
    )  # fmt: skip
    assert (enc.change_pct, enc.p_value, enc.n, enc.significant) == (-26.79, 0.0, "10", True)
    geo = sec.rows[2]
    assert (geo.change_pct, geo.p_value, geo.significant) == (-57.81, None, None)
    dec = mem.rows[1]
    assert dec.unit == "B/op"
    assert dec.base == pytest.approx(234.97 * 2**20) and dec.new == pytest.approx(56.16 * 2**20)
    assert allocs.rows[1].base == pytest.approx(4.746e6) and allocs.rows[1].new == 1.288e6


# --- every row, against the line it came from ---------------------------------------------

_FIGURE = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?%?$")


def _figures(line: str) -> list[float]:
    """The figures of a source line by plain splitting — independent of the readers' regexes:
    `±`, `~` and `(`/`)`/`*` are separators, a trailing `%` is dropped."""
    for mark in ("±", "~", "(", ")", "*"):
        line = line.replace(mark, " ")
    return [float(w.rstrip("%")) for w in line.split() if _FIGURE.match(w)]


def _unquoted(path: Path) -> list[str]:
    return [re.sub(r"^(?:> ?|>> ?)+", "", line) for line in path.read_text().split("\n")]


@pytest.mark.parametrize("path", sorted((DATA / "lkp").glob("*.txt")), ids=lambda p: p.name)
def test_every_lkp_row_is_its_source_line(path: Path) -> None:
    lines = _unquoted(path)
    found = find_comparisons(path.read_text(), str(path))
    assert found
    for t in found:
        for r in t.rows:
            text = lines[r.line - 1]
            want = [
                x
                for x in (
                    r.base,
                    r.base_stddev_pct,
                    r.change_pct,
                    r.change_abs,
                    r.new,
                    r.new_stddev_pct,
                )
                if x is not None
            ]
            name = r.metric if r.cell is None else r.cell
            if r.cell == "TOTAL":
                name = "TOTAL" if r.metric is None else f"TOTAL {r.metric}"
            if name is not None and not text.rstrip().endswith(name):  # wrapped: name below
                assert lines[r.line].strip() == name, (path.name, r.line, text)
                assert _figures(text) == want, (path.name, r.line, text)
            else:
                assert _figures(text.rsplit(None, 1)[0]) == want, (path.name, r.line, text)


def _table_rows_in_source(lines: list[str], start: int) -> int:
    """Rows under a dash line by a plain count: lines whose first word is a figure, up to the
    first blank line after them (fail:runs rows start with `:N` or `N:M` and do not count)."""
    count = 0
    for line in lines[start:]:
        if not line.strip():
            if count:
                break
            continue
        first = line.split()[0]
        if _FIGURE.match(first):
            count += 1
    return count


@pytest.mark.parametrize("path", sorted((DATA / "lkp").glob("*.txt")), ids=lambda p: p.name)
def test_lkp_row_counts_match_a_plain_count(path: Path) -> None:
    lines = _unquoted(path)
    for t in find_comparisons(path.read_text(), str(path)):
        assert len(t.rows) == _table_rows_in_source(lines, t.line), (path.name, t.line)


@pytest.mark.parametrize("path", sorted((DATA / "mmtests").glob("*.txt")), ids=lambda p: p.name)
def test_every_mmtests_row_is_its_source_line(path: Path) -> None:
    lines = _unquoted(path)
    for t in find_comparisons(path.read_text(), str(path)):
        for r in t.rows:
            text = lines[r.line - 1].split("<---")[0]
            label = text.split()[1]
            assert label == r.metric
            printed = _figures(text.split(None, 2)[2])
            want = [x for pair in zip(r.values, r.changes_pct, strict=True) for x in pair]
            assert printed == want, (path.name, r.line)
            assert r.marks == ["*" in cell for cell in re.findall(r"[(*][^)*]*%[)*]", text)]


_SPECJBB_KERNELS = [
    "5.6.0-rc1 baseline-v3", "5.6.0-rc1 loadavg-v3", "5.6.0-rc1 lbidle-v3",
    "5.6.0-rc1 classify-v3", "5.6.0-rc1 stopsearch-v3",
]  # fmt: skip


@pytest.mark.parametrize(
    "mangle",
    [
        pytest.param(_rewrapped, id="rewrapped"),
        pytest.param(lambda s: _rewrapped("".join(f"> {x}\n" for x in s.splitlines())), id="q"),
        pytest.param(lambda s: _rewrapped(s).replace("\n", "\r\n"), id="rewrapped-crlf"),
    ],
)
def test_mmtests_rewrapped_header_keeps_its_kernels(mangle: object) -> None:
    """A re-wrap at 72 columns breaks each 150-column header row (five versions, five names)
    over two lines: the kernels are still read, in order, and so is the caption above."""
    name = "mmtests/2020-specjbb-five-kernels.txt"
    assert callable(mangle)
    text = mangle((DATA / name).read_text())
    assert "\n5.6.0-rc1              5.6.0-rc1              5.6.0-rc1" in text.replace(
        "\r", ""
    ).replace("> ", "")  # the version row really is broken: its end is on a line of its own
    (t,) = tables(name, text)
    assert t.columns == _SPECJBB_KERNELS and len(t.rows) == 40
    skylake, cascade, pf = tables(
        "mmtests/2022-highpcp-quoted.txt",
        mangle((DATA / "mmtests/2022-highpcp-quoted.txt").read_text()),
    )
    assert skylake.caption == "1-socket Skylake"
    assert skylake.columns == [
        "5.17.0-rc3 vanilla", "5.17.0-rc3 mm-reverthighpcp-v1r1", "5.17.0-rc3 mm-highpcpopt-v1",
    ]  # fmt: skip
    assert cascade.caption == "2-socket CascadeLake"
    assert pf.columns == ["5.17.0-rc3 vanilla", "5.17.0-rc3 mm-highpcpopt-v1r4"]


def _saved_base64_crlf(body: str) -> str:
    """The body saved as a message whose base64 text decodes to CRLF lines."""
    import base64

    encoded = base64.encodebytes(body.replace("\n", "\r\n").encode()).decode()
    return (
        "From: someone@example.org\nSubject: numbers\n"
        "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: base64\n\n" + encoded
    )


@pytest.mark.parametrize(
    "mangle",
    [
        pytest.param(lambda s: s.replace("\n", "\r\n"), id="crlf"),
        pytest.param(lambda s: "".join(f"> {line}\n" for line in s.splitlines()), id="quoted"),
        pytest.param(_rewrapped, id="rewrapped"),
        pytest.param(_saved_base64_crlf, id="saved-base64-crlf"),
    ],
)
@pytest.mark.parametrize(
    "name",
    [
        "mmtests/2020-specjbb-five-kernels.txt",
        "mmtests/2022-highpcp-quoted.txt",
        "fsperf/2021-delalloc-stdev-quoted.txt",
        "benchstat/ccf-new-format.txt",
        "benchstat/wazero-old-format.txt",
    ],
)
def test_mangled_peer_tables_read_the_same(name: str, mangle: object) -> None:
    def cells(found: list[Comparison]) -> tuple[list[list[tuple[object, ...]]], list[object]]:
        rows = [[(*fields(r), r.values, r.marks, r.stddev) for r in t.rows] for t in found]
        return rows, [(t.columns, t.caption) for t in found]

    body = (DATA / name).read_text()
    if body.startswith(("From:", "Date:", "Subject:")):
        body = body.split("\n\n", 1)[1]  # a pasted copy: the body, without the headers
    want = cells(tables(name, body))
    assert callable(mangle)
    assert cells(tables(name, mangle(body))) == want
    assert sum(map(len, want[0])) >= 6


def test_a_saved_quoted_printable_robot_message_reads_the_same() -> None:
    """A robot mail saved as .eml with a quoted-printable body (`±` as `=C2=B1`)."""
    from email.message import EmailMessage

    name = "lkp/2026-btrfs-fio-write-iops.txt"
    text = (DATA / name).read_text()
    head, body = text.split("\n\n", 1)
    msg = EmailMessage()
    for line in head.splitlines():
        key, _, value = line.partition(": ")
        msg[key] = value
    msg.set_content(body, cte="quoted-printable")
    raw = msg.as_string()
    assert "=C2=B1" in raw
    (plain,) = tables(name)
    (eml,) = tables(name, raw)
    assert [fields(r) for r in eml.rows] == [fields(r) for r in plain.rows]
    assert eml.robot is not None and plain.robot is not None
    assert eml.robot.to_json() == plain.robot.to_json()
