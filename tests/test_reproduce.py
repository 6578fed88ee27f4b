"""`iolab reproduce` on the seed threads (tests/data/threads): each gives a plan that loads,
with the mail's mkfs, mount, fio and xfs_io options and the variants the mail compares."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from iolab.cli.main import cli
from iolab.plan import load_plan
from iolab.plan.model import Plan

THREADS = Path(__file__).parent / "data" / "threads"


def iolab(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, env={"COLUMNS": "250"})


def reproduced(tmp_path: Path, seed: str) -> tuple[Plan, Plan, str, Result]:
    out = tmp_path / f"{seed}.yaml"
    done = iolab("reproduce", str(THREADS / f"{seed}.txt"), "-o", str(out))
    assert done.exit_code == 0, done.output
    return load_plan(str(out)), load_plan(str(out), "quick"), out.read_text(), done


def job_options(fio_text: str) -> list[str]:
    return [x for x in fio_text.splitlines() if x and not x.startswith("[")]


def comment_above(text: str, key: str) -> str:
    """The comment line right above the first line starting with `key`."""
    lines = text.splitlines()
    at = next(i for i, x in enumerate(lines) if x.lstrip().startswith(key))
    assert lines[at - 1].lstrip().startswith("#"), lines[at - 1]
    return lines[at - 1]


def test_ext4_iops_thread(tmp_path: Path) -> None:
    plan, quick, text, done = reproduced(tmp_path, "ext4-iops")
    case = plan.cases[0]
    assert case.filesystem is not None
    assert case.filesystem.type == "ext4"
    assert case.filesystem.mkfs_options == ("-m", "1", "-b", "4096")
    assert case.filesystem.mount_options == ("noatime", "nodiratime", "data=ordered")
    assert case.workload.fio_text is not None
    assert job_options(case.workload.fio_text) == [
        "directory={mnt}",
        "rw=randwrite",
        "ioengine=psync",
        "buffered=1",
        "bs=16k",  # ${blocksize}
        "numjobs=16",  # ${jobs}
        "runtime=60",
        "thread",
        "filename=file0",
        "filesize=1000000",  # ${filesize}
        "fsync=1",
        "group_reporting",
        "time_based",
    ]
    fill = case.prepare.fill
    assert fill is not None and fill.fio_text is not None
    assert "create_only=1" in fill.fio_text and "runtime=30" in fill.fio_text
    assert case.prepare.drop_caches
    # the mail compares 5.4 with 5.10, and 5.10 with the culprit reverted
    assert [(c.variant, c.kernel) for c in plan.cases] == [
        ("5.10", "5.10"),
        ("5.10+revert-6b8ed62008a4", "5.10+revert-6b8ed62008a4"),
        ("5.4", "5.4"),
    ]
    assert plan.baseline == "5.10"
    assert [k.metric for k in plan.kpis] == ["write.iops"]
    assert set(plan.requires) == {"cloud-volume", "cpu-arch"}
    assert (quick.repeat, quick.cases[0].vars["runtime"]) == (3, "2")
    assert comment_above(text, "mkfs_options").endswith(
        "# line 17: mke2fs -m 1 -t ext4 -b 4096 -L /mnt /dev/nvme1n1"
    )
    assert "line 36: sudo echo 1 > /proc/sys/vm/drop_caches" in comment_above(text, "drop_caches")
    listing = done.stdout
    assert re.search(r"line 25 +blocksize=\"16k\" +→ \$blocksize in the fio command", listing)
    assert re.search(r"line 28 +if \[\[ -n \$1 \]\]; then jobs=\$1; fi +— shell control", listing)
    assert re.search(r"line 38 +set -x +— a shell setting", listing)
    assert "note: line 17: mkfs -L /mnt: a volume label: left out" in listing
    for where in ("lines 31-34", "lines 40-43"):  # the pre-pass and the measured job
        assert f"note: {where}: fio --max-jobs=16: a command-line-only limit on jobs" in listing


def test_nodelalloc_thread(tmp_path: Path) -> None:
    plan, quick, text, _ = reproduced(tmp_path, "nodelalloc")
    case = plan.cases[0]
    assert case.filesystem is not None
    assert case.filesystem.mount_options == ("dioread_nolock", "nodelalloc")
    assert case.workload.argv == ("xfs_io", "-f", "-c", "pwrite -W 0 1G", "{mnt}/testfile")
    assert case.target.size_bytes >= (1 << 30) + (256 << 20)  # the 1 GiB file fits
    assert [(c.variant, c.kernel) for c in plan.cases] == [
        ("without-patch", None),
        ("with-patch", "patched"),
    ]
    assert quick.cases[0].workload.argv[3] == "pwrite -W 0 256M"
    assert comment_above(text, "without-patch").endswith("# line 15: w/o")
    assert comment_above(text, "with-patch").endswith("# line 18: w/")


def test_iversion_thread_runs_here(tmp_path: Path) -> None:
    plan, _, text, done = reproduced(tmp_path, "iversion")
    assert plan.elsewhere() is None
    assert [
        (c.variant, c.filesystem.mount_options if c.filesystem else None) for c in plan.cases
    ] == [
        ("iversion", ("iversion",)),
        ("noiversion", ("noiversion",)),
    ]
    fio = plan.cases[0].workload.fio_text or ""
    assert job_options(fio) == [
        "directory={mnt}",
        "rw=randwrite",
        "bs=4k",
        "size=64M",
        "ioengine=psync",
        "numjobs=4",
        "runtime=3",
        "time_based",
        "group_reporting",
    ]
    assert comment_above(text, "iversion:").endswith("# line 8: mount -o iversion /dev/loop0 /mnt")
    # the replies quote the commands twice more: said, not used twice
    assert done.stdout.count("a quoted copy of line 8") == 2
    assert "/mnt/test is a directory the author made" in done.stdout


def test_plan_to_stdout_listing_to_stderr() -> None:
    done = iolab("reproduce", "-", input=(THREADS / "nodelalloc.txt").read_text())
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith("# iolab reproduce: a plan drafted from <stdin>")
    assert "used (2 mail lines):" in done.stderr and "used" not in done.stdout.split("\n")[0]


def test_crlf_and_quoted_mail_give_the_same_plan(tmp_path: Path) -> None:
    text = (THREADS / "nodelalloc.txt").read_text()
    plain = iolab("reproduce", "-", input=text)
    quoted = iolab("reproduce", "-", input="".join(f"> {x}\r\n" for x in text.splitlines()))
    assert plain.exit_code == quoted.exit_code == 0, quoted.output
    assert plain.stdout == quoted.stdout


def test_oversize_is_scaled_and_said() -> None:
    mail = "Reproducer:\n\n  mount -o noatime /dev/sdb /mnt\n  xfs_io -f -c 'pwrite 0 40G' /mnt/f\n"
    done = iolab("reproduce", "-", input=mail)
    assert done.exit_code == 0, done.output
    assert "SCALED: the workload's files take 40G (line 4)" in done.stderr
    assert "size: 1433M" in done.stdout  # 0.7 of a 2G image


@pytest.mark.parametrize(
    ("mail", "message"),
    [
        ("just prose, no commands\n", "nothing to reproduce"),
        ("$ mount -o noatime /dev/sdb /mnt\n", "nothing to reproduce"),
        ("", "nothing to reproduce"),
    ],
)
def test_nothing_to_reproduce_is_one_line(mail: str, message: str) -> None:
    done = iolab("reproduce", "-", input=mail)
    assert done.exit_code == 2
    assert done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("iolab: <stdin>: ") and message in line


def test_run_needs_a_plan_file() -> None:
    done = iolab("reproduce", str(THREADS / "iversion.txt"), "--run")
    assert done.exit_code == 2
    assert done.stderr.strip() == "iolab: --run needs -o PLAN: ab runs a plan file"
    alone = iolab("reproduce", str(THREADS / "iversion.txt"), "--max-blocks", "3")
    assert alone.exit_code == 2
    assert alone.stderr.strip() == "iolab: --quick and --max-blocks go with --run"


def test_run_hands_the_plan_to_ab(tmp_path: Path) -> None:
    """--run starts `iolab ab` on the written plan; ab refuses a plan with requirements
    before anything touches the machine."""
    out = tmp_path / "iops.yaml"
    db = str(tmp_path / "s.db")
    done = iolab("--db", db, "reproduce", str(THREADS / "ext4-iops.txt"), "-o", str(out), "--run")
    assert done.exit_code == 3, done.output
    assert out.exists()
    assert f"iolab: {out}: refusing: the plan requires a target" in done.stderr


def test_docs_show_the_real_listing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/reproduce.md's listing of the ext4 IOPS thread is the command's own output."""
    monkeypatch.chdir(tmp_path)
    done = iolab("reproduce", str(THREADS / "ext4-iops.txt"), "-o", "plan.yaml")
    assert done.exit_code == 0, done.output
    docs = (Path(__file__).parent.parent / "docs" / "reproduce.md").read_text()
    assert done.stdout in docs


RAW_MAIL = """\
On our Samsung PM1733 NVMe drives we see a drop on 6.12-rc1 compared to 6.11:

# echo mq-deadline > /sys/block/nvme0n1/queue/scheduler
# fio --name=randwrite --ioengine=libaio --iodepth=32 --rw=randwrite --bs=4k \\
  --direct=1 --size=4G --numjobs=8 --runtime=60 --group_reporting \\
  --filename=/dev/nvme0n1
"""


def test_raw_device_mail(tmp_path: Path) -> None:
    out = tmp_path / "raw.yaml"
    done = iolab("reproduce", "-", "-o", str(out), input=RAW_MAIL)
    assert done.exit_code == 0, done.output
    plan = load_plan(str(out))
    case = plan.cases[0]
    assert case.filesystem is None
    assert case.queue == {"scheduler": "mq-deadline"}
    assert "filename={dev0}" in (case.workload.fio_text or "")
    # 4G of the device does not fit a 2G loop image in RAM: scaled, and said
    assert case.target.size_bytes == 2 << 30
    assert "size=2048M" in (case.workload.fio_text or "")
    assert "SCALED: the job spans 4G of each device (lines 4-6)" in done.stdout
    assert list(plan.requires) == ["device-model"]
    assert plan.baseline == "6.11"  # no revert: the older kernel is where it was good
    assert [c.kernel for c in plan.cases] == ["6.11", "6.12-rc1"]


XFS_MAIL = """\
Subject: Re: xfs: buffered write throughput halves with dirty_bytes=64M

> The recipe:
>
> $ sudo mkfs.xfs -f -b size=4096 -d agcount=4 /dev/sdb
> $ sudo mount -o noatime,logbsize=256k /dev/sdb /scratch
> $ sudo sysctl -w vm.dirty_bytes=67108864
> $ for i in 1 2 3; do sync; done
> $ dd if=/dev/zero of=/scratch/f bs=1M count=512 conv=fsync
> $ perf record -a -g -- sleep 5
"""


def test_quoted_xfs_dd_mail(tmp_path: Path) -> None:
    out = tmp_path / "xfs.yaml"
    done = iolab("reproduce", "-", "-o", str(out), input=XFS_MAIL)
    assert done.exit_code == 0, done.output
    plan = load_plan(str(out))
    case = plan.cases[0]
    assert case.filesystem is not None
    assert (case.filesystem.type, case.filesystem.mkfs_options) == (
        "xfs",
        ("-b", "size=4096", "-d", "agcount=4"),
    )
    assert case.filesystem.mount_options == ("noatime", "logbsize=256k")
    assert case.sysctls == {"vm.dirty_bytes": "67108864"}
    assert case.workload.argv == (
        "dd",
        "if=/dev/zero",
        "of={mnt}/f",
        "bs=1M",
        "count=512",
        "conv=fsync",
    )
    assert plan.name == "xfs-buffered-write-throughput-halves-with-dirty-bytes-64m"
    assert re.search(r"line 8 +for i in 1 2 3; do sync; done +— a shell loop around", done.stdout)
    assert re.search(r"line 10 +perf record -a -g -- sleep 5 +— perf is not one of", done.stdout)
    assert "mkfs -f: force" in done.stdout


JOB_FILE_MAIL = """\
Here is the job (seq.fio):

    [global]
    ioengine=psync
    directory=/data/test
    size=256m
    ; comment
    [seqwrite]
    rw=write
    bs=1m
    end_fsync=1

    [randread]
    stonewall
    rw=randread
    bs=4k

$ mkfs.btrfs -f /dev/sdc && mount /dev/sdc /data
$ fio seq.fio --output-format=json+
"""


def test_pasted_job_file_and_chained_commands(tmp_path: Path) -> None:
    out = tmp_path / "jf.yaml"
    done = iolab("reproduce", "-", "-o", str(out), input=JOB_FILE_MAIL)
    assert done.exit_code == 0, done.output
    case = load_plan(str(out)).cases[0]
    assert case.filesystem is not None and case.filesystem.type == "btrfs"
    assert case.workload.fio_text == (
        "[global]\nioengine=psync\ndirectory={mnt}\nsize=256m\n[seqwrite]\nrw=write\nbs=1m\n"
        "end_fsync=1\n[randread]\nstonewall\nrw=randread\nbs=4k\n"
    )
    # `mkfs … && mount …` is two commands; the mount point makes /data/test a subdirectory
    assert re.search(r"line 18 +mount /dev/sdc /data +→ the mount point", done.stdout)
    assert "/data/test is a directory the author made" in done.stdout
    assert re.search(
        r"line 19 +fio seq.fio --output-format=json\+ +→ runs the job file", done.stdout
    )


def test_robot_mail_has_nothing_here_and_other_readers_plug_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A test robot's report has parameters, not command lines: refused in one line unless a
    reader in OTHER_READERS (where the robot-mail reproduction plugs in) answers."""
    from iolab.reproduce import service

    robot = (
        "kernel test robot noticed a -34.9% regression of fio.write_iops on:\n\n"
        "testcase: fio-basic\nparameters:\n\n\truntime: 300s\n\tfs: xfs\n\trw: write\n\n"
        "To reproduce:\n\n        git clone https://github.com/intel/lkp-tests.git\n"
        "        cd lkp-tests\n        sudo bin/lkp install job.yaml\n"
    )
    done = iolab("reproduce", "-", input=robot)
    assert done.exit_code == 2
    assert done.stderr.strip() == (
        "iolab: <stdin>: no fio, xfs_io or dd command line and no fio job file in it: "
        "nothing to reproduce"
    )
    answer = service.Reproduction("name: robot\n", [], [], ["from parameters"], [], [])
    monkeypatch.setattr(service, "OTHER_READERS", [lambda text, source: answer])
    assert service.drafted(robot, "robot") is answer


def test_robot_fio_basic_mail_reproduces_through_its_parameters(tmp_path: Path) -> None:
    """A real 0-day fio-basic report has no command line: `reproduce` writes the plan its
    parameters imply (reproduce.robot), which loads, with the robot's fs, rw, bs and engine."""
    mail = Path(__file__).parent / "data" / "reports" / "lkp" / "2026-btrfs-fio-write-iops.txt"
    out = tmp_path / "robot.yaml"
    done = iolab("reproduce", str(mail), "-o", str(out))
    assert done.exit_code == 0, done.output
    plan = load_plan(str(out))
    quick = load_plan(str(out), "quick")
    fs = plan.cases[0].filesystem
    assert fs is not None and fs.type == "btrfs"
    job = plan.cases[0].workload.fio_text or ""
    for option in ("rw=write", "bs=4k", "ioengine=pvsync2", "filename=fio_testfile"):
        assert option in job, option
    assert quick.repeat < plan.repeat
    assert "scaled" in done.output


def test_robot_mail_lists_the_lines_it_used() -> None:
    """Not "used (0 mail lines)": the headline, the commit, the testcase, every line of the
    `parameters:` block with what it became, the dimension header and the compared sides."""
    from iolab.reproduce.service import reproduce

    mail = Path(__file__).parent / "data" / "reports" / "lkp" / "2026-btrfs-fio-write-iops.txt"
    text = mail.read_text()
    lines = text.split("\n")
    done = reproduce(text, str(mail))
    where = {w: (shown, what) for w, shown, what in done.used}
    assert [w for w, _, _ in done.used] == [
        "line 10", "line 13", "line 19", *(f"line {n}" for n in range(23, 34) if n != 24),
        "lines 50-51", "lines 54-55",
    ]  # fmt: skip
    for w, (shown, _) in where.items():
        first = int(w.split()[1].split("-")[0])
        assert shown.startswith(lines[first - 1].strip())
    assert where["line 10"][1] == "the plan's KPI (the headline)"
    assert where["line 31"] == ("bs: 4k", "fio bs")
    assert where["line 27"] == ("fs: btrfs", "the plan's filesystem")
    assert "not reproduced here" in where["line 26"][1]  # disk: 1HDD
    assert where["lines 50-51"][0].endswith("lkp-icl-2sp9/128G/fio-basic")
    assert done.ignored == []
    cli = iolab("reproduce", str(mail))
    assert cli.exit_code == 0 and "used (15 mail lines):" in cli.stderr
    assert "  line 32       ioengine: pvsync2  → fio ioengine" in cli.stderr


def test_robot_mail_with_another_testcase_first_uses_the_fio_basic_lines() -> None:
    """The 2023 mail's own headline and `parameters:` are stress-ng's: the plan's lines are
    the fio-basic impact row, its machine (nr_task 100% of its threads) and the fio-basic
    table's dimension header — not the stress-ng block."""
    from iolab.reproduce.service import reproduce

    mail = Path(__file__).parent / "data" / "reports" / "lkp" / "2023-btrfs-stress-ng-quoted.txt"
    done = reproduce(mail.read_text(), str(mail))
    got = [(w, what) for w, _, what in done.used]
    assert got == [
        ("line 27", "the commit to compare (a kernel to run on)"),
        ("line 64", "the plan's KPI (the headline)"),
        ("line 65", "its thread count: nr_task's share"),
        ("lines 129-130", got[3][1]),
        ("lines 133-134", "base and commit: the kernels compared"),
    ]
    assert "fio-basic: fio.write_iops -11.2% regression" in done.used[1][1]
    assert got[3][1].startswith("the plan's parameter set: bs, fs, ioengine, nr_task")
    assert not any("stress-ng" in shown for _, shown, _ in done.used[2:])


_SWEEP = "mkfs.ext4 -F /dev/nvme0n1\nmount -o noatime /dev/nvme0n1 /mnt/test\n\n" + "".join(
    f"fio --name=seqw --directory=/mnt/test --rw=write --bs={bs} --size=64M --runtime=30 "
    "--time_based --ioengine=libaio --iodepth=16\n"
    for bs in ("4k", "64k", "1M")
)


def test_a_sweep_of_one_fio_option_is_a_matrix_dimension(tmp_path: Path) -> None:
    """The same fio command at three bs values: one job with `bs={bs}` and `matrix: {bs: …}`
    (three cases), not one case and two ignored workloads."""
    out = tmp_path / "sweep.yaml"
    done = iolab("reproduce", "-", "-o", str(out), input=_SWEEP)
    assert done.exit_code == 0, done.output
    plan = load_plan(str(out))
    assert [c.key for c in plan.cases] == ["bs=4k", "bs=64k", "bs=1M"]
    for case, bs in zip(plan.cases, ("4k", "64k", "1M"), strict=True):
        job = case.workload.fio_text or ""
        assert f"\nbs={bs}\n" in job and "rw=write" in job and "iodepth=16" in job
    assert len(load_plan(str(out), "quick").cases) == 3
    text = out.read_text()
    assert "bs={bs}" in text and "bs: [4k, 64k, 1M]" in text
    listing = done.stdout  # with -o the listing is the command's output
    assert "ignored" not in listing
    assert "line 5" in listing and "→ matrix bs=64k" in listing and "→ matrix bs=1M" in listing


def test_a_numjobs_sweep_sizes_the_target_for_its_largest_cell() -> None:
    mail = "".join(
        f"fio --name=w --directory=/mnt --rw=randwrite --bs=4k --size=256M --numjobs={n}\n"
        for n in (1, 4, 16)
    )
    done = iolab("reproduce", "-", input=mail)
    assert done.exit_code == 0, done.output
    assert "numjobs={numjobs}" in done.stdout and "numjobs: ['1', '4', '16']" in done.stdout
    assert "files take 4G" in done.stdout  # 16 jobs x 256M, not the first command's 256M


@pytest.mark.parametrize(
    "second",
    [
        "fio --name=j --directory=/mnt --rw=write --bs=64k --size=64M --iodepth=32",  # two differ
        "fio --name=j --directory=/mnt --rw=write --bs=4k --size=128M",  # size: not an axis
        "fio --name=j --directory=/mnt --rw=write --bs=4k --size=64M --fsync=1",  # other shape
    ],
)
def test_commands_that_are_not_a_sweep_stay_one_workload(second: str) -> None:
    first = "fio --name=j --directory=/mnt --rw=write --bs=4k --size=64M"
    done = iolab("reproduce", "-", input=f"{first}\n{second}\n")
    assert done.exit_code == 0, done.output
    assert "matrix" not in done.stdout
    assert "a second fio workload; a plan runs one" in done.stderr


def test_revert_captions_without_a_kernel() -> None:
    on = (THREADS / "out" / "iversion-on.txt").read_text()
    off = (THREADS / "out" / "iversion-off.txt").read_text()
    mail = (
        "fio --name=t --directory=/mnt --rw=randwrite --bs=4k --size=64M\n\n"
        f"w/o revert:\n\n{on}\nwith revert of 0123456789abcdef:\n\n{off}"
    )
    done = iolab("reproduce", "-", input=mail)
    assert done.exit_code == 0, done.output
    assert "  base:\n    kernel: base\n" in done.stdout
    assert "  base+revert-0123456789ab:\n    kernel: base+revert-0123456789ab\n" in done.stdout
    assert "baseline: base\n" in done.stdout


def test_prose_naming_a_program_is_not_a_command() -> None:
    mail = (
        "xfs_io -f -c 'pwrite 0 64M' /mnt/f\n\n"
        "dd is slower here, and mount takes longer\n"
        "fio shows it too\n"
    )
    done = iolab("reproduce", "-", input=mail)
    assert done.exit_code == 0, done.output
    assert "used (1 mail lines):" in done.stderr and "ignored" not in done.stderr


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t.replace(" \\\n", "\n"),  # a mail client lost the continuations
        lambda t: "".join(f"> {x}\n" for x in t.splitlines()),  # quoted in a reply
        lambda t: t.replace("\n", "\r\n"),  # CRLF line ends
    ],
    ids=["rewrapped", "quoted", "crlf"],
)
def test_mangled_ext4_thread_gives_the_same_plan(mangle: Callable[[str], str]) -> None:
    text = (THREADS / "ext4-iops.txt").read_text()
    plain = iolab("reproduce", "-", input=text)
    mangled = iolab("reproduce", "-", input=mangle(text))
    assert plain.exit_code == mangled.exit_code == 0, mangled.output
    assert mangled.stdout == plain.stdout


def test_versions_of_other_tools_are_not_kernels() -> None:
    mail = (
        "With fio 3.33 and gcc-12.2 on Debian 12, kernel 6.1 writes slower than 5.15:\n\n"
        "fio --name=t --directory=/mnt --rw=write --bs=1M --size=64M\n"
    )
    done = iolab("reproduce", "-", input=mail)
    assert done.exit_code == 0, done.output
    assert done.stderr.strip().endswith(
        "kernels: 5.15, 6.1 (variants that run on a host that boots kernels)"
    )


@pytest.mark.parametrize(
    ("prose", "needs"),
    [
        ("64 threads Intel Xeon Gold 6346 CPU with 256G memory", []),
        ("On Samsung 980 PRO drives", ["device-model"]),
        ("an Intel P4510 drive", ["device-model"]),
        ("Intel Core i7 with a WD SSD", ["device-model"]),
        ("md RAID5 of 4 disks", ["md"]),
        ("built with mdadm --create /dev/md0", ["md"]),
        ("multipath with 2 paths", ["dm-multipath"]),
        ("Creating 100GB volume with IO1 500 iops", ["cloud-volume"]),
        ("a plain loop device", []),
    ],
)
def test_requirements_in_prose(prose: str, needs: list[str]) -> None:
    from iolab.reproduce import context

    found = context.requirements([context.Paragraph(1, ((1, prose),))], [])
    assert [f.value for f in found] == needs


REPORTS_LKP = Path(__file__).parent / "data" / "reports" / "lkp"


def test_robot_mail_cut_before_its_test_size_is_refused_naming_the_mail() -> None:
    """A robot mail whose fio-basic parameters lost `test_size` (a cut paste; found by the
    mangled-mail property test in CI) is one error line that names the mail, exit 2."""
    mail = REPORTS_LKP / "2019-btrfs-fio-quoted-rewrapped.txt"
    text = "\n".join(x for x in mail.read_text().split("\n") if "test_size" not in x)
    done = iolab("reproduce", "-", input=text)
    assert done.exit_code == 2
    assert done.stderr.strip() == (
        "iolab: <stdin>: robot parameters name no test_size (fio-basic requires it)"
    )


def test_one_multipath_device_is_one_map(tmp_path: Path) -> None:
    """A job on one device-mapper device of a multipath setup: one map, `{dev}`."""
    mail = tmp_path / "mail.txt"
    mail.write_text(
        "Slow on our multipath setup.\n\n"
        "fio --name=j --rw=write --bs=128k --direct=1 --filename=/dev/dm-0 --runtime=60\n"
    )
    out = tmp_path / "plan.yaml"
    assert iolab("reproduce", str(mail), "-o", str(out)).exit_code == 0
    case = load_plan(str(out)).cases[0]
    assert (case.target.kind, case.target.count, case.target.members) == ("multipath", 1, 2)
    assert "filename={dev}" in (case.workload.fio_text or "")
    quick = load_plan(str(out), "quick").cases[0]
    assert quick.target.size_bytes == 512 << 20


def test_robot_fsmark_mail_reproduces_as_fio_with_kernel_variants(tmp_path: Path) -> None:
    """An fsmark report: fs_mark's fsync-before-close small files written as fio, the base
    and the commit as kernel variants by commit, the journal as the evidence; the plan loads
    with its quick profile (no kernel there)."""
    from iolab.errors import IolabError
    from iolab.reproduce.service import reproduce
    from lkp_mail import fsmark_mail

    base = "8ef07c1efa74464100e437a1ceff55c4f1ec667d"
    commit = "9fa202607476dcb6f62e2ec9fca8f0e60fb06f71"
    mail = tmp_path / "robot.eml"
    mail.write_text(fsmark_mail(base, "ext4/balloc: a line", commit, "ext4: journal once more"))
    done = reproduce(mail.read_text(), str(mail))
    text = done.plan_text
    assert "fsync_on_close=1" in text and "create_on_open=1" in text and "bs=4096" in text
    # the account says what each fsmark parameter became; only the directory spread is out
    used = {mail_text.split(":")[0]: why for _, mail_text, why in done.used}
    assert "fsync_on_close" in used["sync_method"] and "numjobs" in used["nr_threads"]
    assert "filesize" in used["filesize"] and "fsmark" in used["testcase"]
    ignored = {mail_text.split(":")[0] for _, mail_text, _ in done.ignored}
    assert ignored == {"nr_directories", "nr_files_per_directory"}
    assert all("one directory" in why for _, _, why in done.ignored)
    assert "nrfiles={nrfiles}" in text and "- jbd2" in text
    path = tmp_path / "plan.yaml"
    path.write_text(text)
    plan = load_plan(str(path))
    assert {c.variant: c.kernel_commit for c in plan.cases} == {
        "base": base[:10],
        "commit": commit,  # the `commit:` line gives it whole
    }
    assert [k.metric for k in plan.kpis] == ["write.iops"]
    job = plan.cases[0].workload.fio_text or ""
    assert "nrfiles=1024" in job and "numjobs=1" in job, job
    # a kernel A/B: one unmeasured sample after each boot (on this host's kernel: none)
    assert plan.warmups == 1
    quick = load_plan(str(path), "quick")
    assert all(c.kernel_commit is None for c in quick.cases)
    assert "nrfiles=64" in (quick.cases[0].workload.fio_text or "")
    assert quick.warmups == 0
    # another sync method is refused in one line
    other = mail.read_text().replace("fsyncBeforeClose", "syncPostReverseFsync")
    with pytest.raises(IolabError, match="only fsyncBeforeClose and NoSync"):
        reproduce(other, str(mail))
