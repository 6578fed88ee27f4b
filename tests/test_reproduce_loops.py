"""Shell `for` loops in `iolab reproduce` (reproduce.loops): a sweep loop becomes a matrix,
a repeat loop is read once, anything else is read as written; on a real mail and on the
loop shapes people paste."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from iolab.cli.main import cli
from iolab.plan import load_plan
from iolab.reproduce import loops
from iolab.reproduce.service import reproduce
from iolab.reproduce.shell import Line, logical_lines

MMC = Path(__file__).parent / "data" / "threads" / "loops" / "2024-mmc-bh-workqueue-dw_mmc.txt"


def unrolled(text: str) -> tuple[list[str], list[loops.Loop]]:
    lines = text.split("\n")
    out, found = loops.unroll(logical_lines(lines, [0] * len(lines)))
    return [x.text for x in out], found


def test_a_one_line_sweep_is_one_fio_command_per_value() -> None:
    texts, (loop,) = unrolled("for bs in 4k '64k' \"1M\"; do fio --name=w --bs=$bs; sync; done")
    assert texts == [
        "fio --name=w --bs=4k",
        "sync",
        "fio --name=w --bs=64k",
        "fio --name=w --bs=1M",
    ]
    assert (loop.name, loop.values, loop.unrolled, loop.workload) == (
        "bs", ("4k", "64k", "1M"), True, True,
    )  # fmt: skip
    assert loop.line.where == "line 1"


def test_a_loop_over_several_lines_with_do_alone_and_braced_forms() -> None:
    text = (
        "for n in {1..4..2} 8\ndo\n  fio --name=r --numjobs=${n} \\\n    --bs=${bs:-4k}"
        " --iodepth=${n:-1} --name2=$nn\n  sleep 1\ndone\necho after"
    )
    texts, (loop,) = unrolled(text)
    assert loop.values == ("1", "3", "8") and loop.line.where == "lines 1-6"
    assert texts[0] == "fio --name=r --numjobs=1 --bs=${bs:-4k} --iodepth=1 --name2=$nn"
    assert [t.split()[2] for t in texts if t.startswith("fio")] == [
        "--numjobs=1", "--numjobs=3", "--numjobs=8",
    ]  # fmt: skip
    assert texts[1:2] == ["sleep 1"] and texts[-1] == "echo after"


def test_nested_loops_a_repeat_around_a_sweep() -> None:
    text = "for run in 1 2 3; do\nfor rw in read write; do\nfio --rw=$rw\ndone\ndone"
    texts, (outer, inner) = unrolled(text)
    assert texts == ["fio --rw=read", "fio --rw=write"]
    assert (outer.name, outer.unrolled, outer.line.where) == ("run", False, "lines 1-5")
    assert (inner.name, inner.unrolled, inner.line.where) == ("rw", True, "lines 2-4")


def test_values_it_lists_and_values_it_cannot() -> None:
    values = {
        "$(seq 0 4)": ("0", "1", "2", "3", "4"),
        "$(seq 3)": ("1", "2", "3"),
        "`seq 1 2 7`": ("1", "3", "5", "7"),
        "{3..1}": ("3", "2", "1"),
        "$(seq 1 1000)": None,  # not a pasted sweep
        "$(ls /dev/nvme*)": None,
        "$JOBFILES": None,
        "*.fio": None,
        "'unclosed": None,
    }
    for words, expected in values.items():
        _, (loop,) = unrolled(f"for x in {words}; do fio --bs=$x; done")
        assert loop.values == expected, words
        assert loop.unrolled == (expected is not None), words


def test_a_cut_paste_or_a_loop_without_workload_is_read_as_written() -> None:
    cut = "for bs in 4k 64k; do\nfio --bs=$bs"
    assert unrolled(cut) == (["for bs in 4k 64k; do", "fio --bs=$bs"], [])
    texts, (loop,) = unrolled(
        "for d in sda sdb; do echo none > /sys/block/$d/queue/scheduler; done"
    )
    assert texts == ["echo none > /sys/block/$d/queue/scheduler"]
    assert not loop.workload and not loop.unrolled


SWEEP_MAIL = """\
Subject: xfs: randwrite IOPS by queue depth

mkfs.xfs -f /dev/nvme0n1
mount -o noatime /dev/nvme0n1 /mnt/test
for qd in 1 4 16 64
do
    fio --name=randw --directory=/mnt/test --rw=randwrite --bs=4k --ioengine=libaio \\
        --direct=1 --iodepth=$qd --size=256M --runtime=20 --time_based \\
        --output=qd-$qd.json --output-format=json
    sync
done
"""


def test_a_sweep_loop_becomes_the_plans_matrix(tmp_path: Path) -> None:
    out = tmp_path / "qd.yaml"
    done = CliRunner().invoke(
        cli, ["reproduce", "-", "-o", str(out)], input=SWEEP_MAIL, env={"COLUMNS": "250"}
    )
    assert done.exit_code == 0, done.output
    plan = load_plan(str(out))
    assert [c.cell["iodepth"] for c in plan.cases] == ["1", "4", "16", "64"]
    job = plan.cases[2].workload.fio_text or ""
    assert "iodepth=16" in job and "output" not in job
    assert "lines 5-11    for qd in 1 4 16 64  → a loop over $qd (1, 4, 16, 64)" in done.stdout
    assert "lines 7-9     fio --name=randw" in done.stdout and "→ matrix iodepth=64" in done.stdout
    assert "line 10       sync  — iolab unmounts" in done.stdout


def test_the_real_repeat_loop_of_a_mmc_review_mail(tmp_path: Path) -> None:
    """Christian Loehle's dw_mmc numbers (LKML, 2024): a loop of 5 fio runs and a loop
    setting the cpufreq governor.  The fio loop is read once; the governor loop, which runs
    no workload, and its echo are listed as ignored, the echo with `$i` as written."""
    done = reproduce(MMC.read_text(), str(MMC))
    used = {(w, what) for w, _, what in done.used}
    assert ("line 33", "runs its body 5 times: read once (the plan's blocks repeat it)") in used
    assert ("line 33", "workload (fio job)") in used
    ignored = [(w, shown, why) for w, shown, why in done.ignored]
    assert ignored[0][0] == "line 32" and "a shell loop around no workload" in ignored[0][2]
    assert ignored[1][1].startswith("echo performance > /sys/devices/system/cpu/cpu$i/")
    assert ignored[2][:2] == ("line 33", "sleep 30")
    plan_file = tmp_path / "mmc.yaml"
    plan_file.write_text(done.plan_text)
    plan = load_plan(str(plan_file))
    (case,) = plan.cases
    job = case.workload.fio_text or ""
    for option in ("rw=randread", "bs=4k", "filename={dev0}", "numjobs=6", "iodepth=32"):
        assert option in job, option


def test_lines_keep_their_numbers() -> None:
    """Each copy names the mail lines of the command it copies (what `used` lists)."""
    lines = ["", "for bs in 4k 8k; do", "  fio --bs=$bs \\", "    --rw=read", "done"]
    out, _ = loops.unroll(logical_lines(lines, [0] * 5))
    assert [(x.first, x.last) for x in out] == [(1, 1), (3, 4), (3, 4)]
    assert all(isinstance(x, Line) for x in out)
