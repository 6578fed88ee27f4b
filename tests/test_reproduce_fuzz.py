"""Property tests of `iolab reproduce`: any text, the seed threads cut, spliced, quoted and
with junk in their commands, and shell lines built from pieces people paste — the answer is a
plan that loads or one `IolabError` line (exit 2), never another exception."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iolab.errors import IolabError
from iolab.reproduce import loops, shell
from iolab.reproduce.service import reproduce

THREADS = Path(__file__).parent / "data" / "threads"
SEEDS = [p.read_text() for p in [*sorted(THREADS.glob("*.txt")), *sorted(THREADS.glob("loops/*"))]]
REPORTS = Path(__file__).parent / "data" / "reports" / "lkp"
ROBOTS = [REPORTS.joinpath(n).read_text() for n in (
    "2026-btrfs-fio-write-iops.txt", "2023-btrfs-stress-ng-quoted.txt",
    "2019-btrfs-fio-quoted-rewrapped.txt",
)]  # fmt: skip
PROPERTY = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
JUNK = st.sampled_from(
    ["", "\\", "${", "}", "$(", "'", '"', "|", ">", "2>&1", "&&", ";", "=", "--", "-o", "{",
     "{mnt}", "{{", "/dev/sda", "/mnt", "99999999999T", "0", "-1", "nan", "\x00", "\t", "é",
     "[global]", "[job]", "rw=", "size=1e309", "--size=", "--name=", "-c", "pwrite", "w/o"]
)  # fmt: skip
PROGRAMS = st.sampled_from(
    ["fio", "/usr/bin/fio", "sudo fio", "mkfs.ext4", "mkfs.xfs -f", "mke2fs -t ext4",
     "mkfs.btrfs", "mount", "mount -t xfs", "xfs_io", "dd", "sysctl -w", "echo 1 >",
     "echo mq-deadline | sudo tee", "$ fio", "# mount -o", "t/io_uring", "export X=", "if",
     "for bs in 4k 1M; do fio", "for i in $(seq 3); do", "for n in {1..4}\ndo\nfio", "done",
     "do", "for x in $Y; do dd"]
)  # fmt: skip
WORDS = st.one_of(
    JUNK,
    st.sampled_from(
        ["--name=j", "--rw=randwrite", "--bs=${bs}", "--size=${1:-64M}", "--numjobs=$n",
         "--directory=/mnt/x", "--filename=/dev/nvme0n1", "--runtime=10", "--time_based",
         "--create_only=1", "-o", "noatime,iversion", "/dev/vdb", "/mnt", "-c",
         '"pwrite -W 0 1G"', "if=/dev/zero", "of=/mnt/f", "bs=1M", "count=999999999",
         "vm.dirty_bytes=1G", "/proc/sys/vm/drop_caches", "/sys/block/sda/queue/scheduler",
         "-m", "1", "-b", "4096", "-L", "x", "\\"]
    ),
    st.text(max_size=12),
)  # fmt: skip


def check(text: str) -> None:
    try:
        done = reproduce(text, "prop")
    except IolabError as exc:
        (line,) = exc.message.splitlines() or [""]
        assert line.startswith("prop: ") or line.startswith("prop:"), line
        return
    assert done.plan_text.startswith("# iolab reproduce: a plan drafted from prop")


@st.composite
def mangled(draw: st.DrawFn, seeds: list[str] = SEEDS) -> str:
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 3))):
        lines = text.splitlines()
        op = draw(st.sampled_from(["cut", "junk", "quote", "crlf", "splice", "drop"]))
        at = draw(st.integers(0, max(0, len(lines) - 1)))
        if op == "cut":
            lines = lines[:at]
        elif op == "junk" and lines:
            words = lines[at].split(" ")
            k = draw(st.integers(0, len(words)))
            lines[at] = " ".join([*words[:k], draw(JUNK), *words[k:]])
        elif op == "quote":
            lines = [draw(st.sampled_from(["> ", ">>", "> > "])) + x for x in lines]
        elif op == "crlf":
            return "\r\n".join(lines)
        elif op == "splice":
            other = draw(st.sampled_from(seeds)).splitlines()
            lines = lines[:at] + other[at:]
        else:
            del lines[at : at + draw(st.integers(1, 5))]
        text = "\n".join(lines)
    return text


@st.composite
def command_lines(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 6))):
        words = [draw(PROGRAMS), *draw(st.lists(WORDS, max_size=8))]
        sep = draw(st.sampled_from([" ", " \\\n    ", "  "]))
        lines.append(sep.join(words))
    return "\n".join(lines)


@PROPERTY
@given(text=st.text(max_size=2000))
def test_any_text(text: str) -> None:
    check(text)


@PROPERTY
@given(text=mangled())
def test_mangled_seeds(text: str) -> None:
    check(text)


@PROPERTY
@given(text=command_lines())
def test_shell_lines_from_pieces(text: str) -> None:
    check(text)


@PROPERTY
@given(text=st.one_of(st.text(max_size=300), command_lines()))
def test_shell_reader_never_raises(text: str) -> None:
    lines = text.splitlines()
    variables = shell.Variables()
    for line in shell.logical_lines(lines, [0] * len(lines)):
        shell.words(line.text)
        shell.redirect_target(line.text)
        shell.tee_target(line.text)
        found = shell.assignment(line.text)
        if found is not None:
            variables.assign(found[0], found[1], line.first)
        shell.expand(line.text, variables)
    out, found_loops = loops.unroll(shell.logical_lines(lines, [0] * len(lines)))
    assert all(1 <= x.first <= x.last <= max(len(lines), 1) for x in out)
    assert all(loop.values is None or 0 < len(loop.values) <= 64 for loop in found_loops)


@PROPERTY
@given(text=mangled(ROBOTS))
def test_mangled_robot_mails(text: str) -> None:
    """Robot mails cut, spliced, quoted, with junk: a plan with the mail lines it used (each
    one really a line of the mail), or one error line."""
    try:
        done = reproduce(text, "prop")
    except IolabError as exc:
        (line,) = exc.message.splitlines() or [""]
        assert line.startswith("prop"), line
        return
    if not done.plan_text.startswith("# iolab reproduce: a plan drafted from a 0-day"):
        assert done.plan_text.startswith("# iolab reproduce: a plan drafted from prop")
        return
    lines = [x.strip() for x in text.replace("\r\n", "\n").split("\n")]
    for where, shown, _ in done.used:
        first = int(where.split()[1].split("-")[0])
        assert lines[first - 1].lstrip("> ").strip() in shown or shown in text, (where, shown)
