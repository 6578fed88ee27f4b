"""`iolab reproduce` on the five threads iolab is built from, whole as archived
(tests/data/threads/archived, SOURCES.md): each drafts the plan its author would write,
checked here setting by setting."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from iolab.cli.main import cli
from iolab.plan import load_plan
from iolab.plan.model import Plan
from iolab.reproduce.service import Reproduction, reproduce

ARCHIVED = Path(__file__).parent / "data" / "threads" / "archived"


def iolab(tmp_path: Path, *args: str) -> Result:
    db = str(tmp_path / "store.db")
    return CliRunner().invoke(cli, ["--db", db, *args], env={"COLUMNS": "250"})


def drafted(tmp_path: Path, name: str) -> tuple[Plan, Plan, str, Reproduction]:
    done = reproduce((ARCHIVED / f"{name}.txt").read_text(), name)
    path = tmp_path / f"{name}.yaml"
    path.write_text(done.plan_text)
    return load_plan(str(path)), load_plan(str(path), "quick"), str(path), done


def options(fio_text: str | None) -> list[str]:
    return [x for x in (fio_text or "").splitlines() if x and not x.startswith("[")]


def test_ext4_iops_thread(tmp_path: Path) -> None:
    """The regression tracker's copy of the thread: the fio command's first line is wrapped
    without `\\`, the options come through `${vars}`, a `--create_only` pre-pass beside it."""
    plan, quick, _, done = drafted(tmp_path, "ext4-iops-regression")
    case = plan.cases[0]
    assert case.filesystem is not None and case.filesystem.type == "ext4"
    assert case.filesystem.mkfs_options == ("-m", "1", "-b", "4096")
    assert case.filesystem.mount_options == ("noatime", "nodiratime", "data=ordered")
    assert options(case.workload.fio_text) == [
        "directory={mnt}", "rw=randwrite", "ioengine=psync", "buffered=1", "bs=16k",
        "numjobs=16", "runtime=60", "thread", "filename=file0", "filesize=1000000",
        "fsync=1", "group_reporting", "time_based",
    ]  # fmt: skip
    fill = case.prepare.fill
    assert fill is not None
    assert options(fill.fio_text) == [
        "create_only=1", "directory={mnt}", "rw=randwrite", "ioengine=psync", "buffered=1",
        "bs=16k", "numjobs=16", "runtime=30", "thread", "filename=file0", "filesize=1000000",
        "fsync=1", "group_reporting",
    ]  # fmt: skip
    assert case.prepare.drop_caches
    # the results are captioned 5.10.162 and 5.10.162 with the revert: those are compared
    assert [(c.variant, c.kernel) for c in plan.cases] == [
        ("5.10.162", "5.10.162"),
        ("5.10.162+revert-6b8ed62008a4", "5.10.162+revert-6b8ed62008a4"),
    ]
    assert plan.baseline == "5.10.162"
    assert "also named, not measured in the mail: 5.4 (line 27)" in done.plan_text
    assert [k.metric for k in plan.kpis] == ["write.iops"]
    assert case.monitors == ("jbd2", "hist")  # the thread's evidence
    assert "# line 260: cat /proc/fs/jbd2/nvme1n1-8/info" in done.plan_text
    # --max-jobs twice (pre-pass and job) and the mkfs label: said, nothing else left out
    assert [(w, what) for w, what, _ in done.left_out] == [
        ("line 39", "mkfs -L /mnt"),
        ("lines 64-68", "fio --max-jobs=16"),
        ("lines 53-57", "fio --max-jobs=16"),
    ]
    assert [(c.variant, c.kernel) for c in quick.cases] == [(None, None)]
    # the echo whose string the mail client wrapped onto line 63 is one command, listed
    assert ("lines 62-63", "prints a message") in [(w, why) for w, _, why in done.ignored]
    assert not any(text.startswith("blocksize=") for _, text, _ in done.ignored)


def test_docs_show_the_drafted_ext4_iops_plan() -> None:
    """docs/reproduce.md's drafted plan beside the mail's command is the draft's own text."""
    done = reproduce((ARCHIVED / "ext4-iops-regression.txt").read_text(), "ext4-iops-regression")
    docs = (Path(__file__).parent.parent / "docs" / "reproduce.md").read_text()
    shown = docs.split("checks this is the draft's own text):\n\n```yaml\n", 1)[1]
    shown = shown.split("```", 1)[0]
    assert shown.startswith("target:\n") and "filename=file0" in shown
    assert shown in done.plan_text


def test_ext4_iops_thread_is_refused_here_for_its_cloud_volume(tmp_path: Path) -> None:
    _, _, path, _ = drafted(tmp_path, "ext4-iops-regression")
    done = iolab(tmp_path, "run", "--quick", path)
    assert done.exit_code == 3, done.output
    assert "cloud-volume" in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.lab
def test_ext4_iops_thread_runs_quick_here_once_its_requirements_are_removed(
    tmp_path: Path,
) -> None:
    """The drafted measurement itself runs on this host's fio and ext4 when its `requires:`
    (the reporter's arm64 cloud volume) is removed knowingly, as the plan says one may: the
    pre-pass, then the 16 jobs on one file with an fsync per write, with the thread's
    evidence (jbd2, the writepages histogram) beside the KPI."""
    import json

    _, _, path, done = drafted(tmp_path, "ext4-iops-regression")
    text = done.plan_text
    start = text.index("requires:\n")
    end = text.index("\nfilesystem:", start)
    Path(path).write_text(text[:start] + text[end + 1 :])
    ran = iolab(tmp_path, "run", "--quick", "-q", path)
    assert ran.exit_code == 0, ran.output
    assert "0 failed" in ran.output
    shown = iolab(tmp_path, "results", "--run", "1", "--format", "json")
    samples = json.loads(shown.output)
    assert len(samples) == 3 and all(s["status"] == "ok" for s in samples)
    for s in samples:
        m = s["metrics"]
        assert m["write.iops"] > 0
        # fsync=1: one per write (a job stopped by its runtime may end between the two)
        assert m["sync.total_ios"] >= 0.95 * m["write.total_ios"] > 0
        assert m["jbd2.transactions"] > 0  # the journal's commits, as the thread read them
        assert "hist.ext4_writepages_pages.mean" in m, sorted(m)  # pages per writepages call


def test_nodelalloc_thread(tmp_path: Path) -> None:
    plan, quick, _, done = drafted(tmp_path, "nodelalloc-writeback")
    case = plan.cases[0]
    assert case.filesystem is not None and case.filesystem.type == "ext4"
    assert case.filesystem.mount_options == ("dioread_nolock", "nodelalloc")
    # `$M/foobar`: $M is never set; it is where the mail mounted
    assert case.workload.argv == ("xfs_io", "-f", "-c", "pwrite -W 0 1G", "{mnt}/foobar")
    assert any("$M is never set in the mail; read as the mount point /mnt" in n for n in done.notes)
    assert [(c.variant, c.kernel) for c in plan.cases] == [
        ("without-patch", None),
        ("with-patch", "patched"),
    ]
    assert "# line 62: w/o" in done.plan_text and "# line 66: w/" in done.plan_text
    # --quick: the side this host's kernel is, 256M instead of 1G
    assert [(c.variant, c.kernel) for c in quick.cases] == [(None, None)]
    assert quick.cases[0].workload.argv[3] == "pwrite -W 0 256M"
    assert quick.elsewhere() is None
    assert done.left_out == ()


def test_multipath_thread(tmp_path: Path) -> None:
    """Two multipath devices ("2 block devices with multi-path"): two maps, each over its
    own 2 paths, in place of the job's /dev/dm-0 and /dev/dm-1, each with the mail's job."""
    plan, quick, path, done = drafted(tmp_path, "multipath-mq-deadline")
    case = plan.cases[0]
    assert case.filesystem is None
    target = case.target
    assert (target.kind, target.count, target.members) == ("multipath", 2, 2)
    assert target.multipath is not None and target.multipath.paths == 2
    assert options(case.workload.fio_text) == [
        "ioengine=libaio", "rw=write", "bs=128k", "iodepth=64", "numjobs=24", "direct=1",
        "fsync=1", "runtime=600", "group_reporting", "filename={dev0}", "filename={dev1}",
    ]  # fmt: skip
    assert (case.workload.fio_text or "").count("[job]") == 2
    assert done.left_out == ()  # nothing of the job is left out
    assert case.monitors == ("diskstats",)  # each map's and each path's I/O
    # the kernels the results are captioned with, and the scheduler the bisect points at
    assert plan.variants == ("6.8-rc7", "6.8-rc7+revert-d47f9717e5cf")
    assert plan.matrix == {"scheduler": ("mq-deadline", "none")}
    assert {(c.variant, c.kernel, c.member_queue["scheduler"]) for c in plan.cases} == {
        (v, v, s) for v in plan.variants for s in ("mq-deadline", "none")
    }
    assert "6.6 (line 13), 5.15.y (line 13)" in done.plan_text  # named, not measured
    # --quick: the guest's own kernel, both maps at 256M (a guest's /dev/shm holds them)
    assert {c.kernel for c in quick.cases} == {None}
    assert {(c.target.count, c.target.size_bytes) for c in quick.cases} == {(2, 256 << 20)}
    assert [c.member_queue["scheduler"] for c in quick.cases] == ["mq-deadline", "none"]
    # here: no device-mapper, so refused in one line before anything is made
    ran = iolab(tmp_path, "run", "--quick", path)
    if shutil.which("dmsetup") is None or not Path("/dev/mapper/control").exists():
        assert ran.exit_code == 3, ran.output
        assert "refusing target 2 dm-multipath maps over 2 paths each" in ran.stderr
        assert len(ran.stderr.strip().splitlines()) == 1
    full = iolab(tmp_path, "run", path)  # its kernels boot on a fleet, not in this process
    assert full.exit_code == 2 and "--fleet" in full.stderr


def test_iversion_thread(tmp_path: Path) -> None:
    plan, quick, _, done = drafted(tmp_path, "iversion-default")
    assert plan.elsewhere() is None
    assert [
        (c.variant, c.filesystem.mount_options if c.filesystem else None) for c in plan.cases
    ] == [("noiversion", ("noiversion",)), ("iversion", ("iversion",))]
    assert "# line 307: iversion support disabled" in done.plan_text
    assert "# line 341: mounted with -o iversion" in done.plan_text
    fio = plan.cases[0].workload.fio_text
    assert options(fio) == [
        "name=fio-seq-write", "filename=fio-seq-write", "rw=write", "bs=4k", "direct=0",
        "numjobs=1", "time_based", "runtime=300", "size=1G", "ioengine=libaio", "iodepth=16",
    ]  # fmt: skip
    # the English sentence "for libmount to indicate -o noiversion." is not a shell loop
    assert not any("libmount" in text for _, text, _ in done.ignored)
    assert [c.variant for c in quick.cases] == ["noiversion", "iversion"]
    assert done.left_out == ()


def test_iversion_thread_pasted_results_are_two() -> None:
    from iolab.ingest.detect import parse_text

    results = parse_text((ARCHIVED / "iversion-default.txt").read_text(), "thread")
    assert [r.caption for r in results] == ["iversion support disabled", "mounted with -o iversion"]
    assert [r.quote_levels for r in results] == [[0, 1, 2], [0, 1, 2]]


@pytest.mark.parametrize(
    ("name", "captions"),
    [
        ("ext4-iops-regression", ["Fio output (5.10.162)", "Fio output (5.10.162 with revert)"]),
        ("nodelalloc-writeback", ["w/o", "w/"]),
        ("multipath-mq-deadline", ["6.8-rc7: 2 block devices with multi-path",
                                   "6.8-rc7+ Revert : 2 block devices with multi-path"]),
    ],
)  # fmt: skip
def test_thread_results_are_the_compared_sides(name: str, captions: list[str]) -> None:
    from iolab.ingest.detect import parse_text

    results = parse_text((ARCHIVED / f"{name}.txt").read_text(), "thread")
    assert [r.caption for r in results] == captions


@pytest.mark.lab
@pytest.mark.parametrize(
    ("name", "caption", "side", "kpi", "variants"),
    [
        ("iversion-default", "iversion support disabled", "1:noiversion", "write.iops",
         {"iversion", "noiversion"}),
        ("nodelalloc-writeback", "w/o", "run:1", "write.bw_bytes", {None}),
    ],
)  # fmt: skip
def test_round_trip_beside_the_threads_own_numbers(
    tmp_path: Path, name: str, caption: str, side: str, kpi: str, variants: set[str | None]
) -> None:
    """reproduce → run --quick here (real fio / xfs_io on an ext4 loop image; the iversion
    thread's two mounts, -o iversion and -o noiversion) → the thread's own pasted result
    imported → compare: the thread's figure beside the lab's."""
    import json

    from iolab.store import open_store

    thread = str(ARCHIVED / f"{name}.txt")
    plan = str(tmp_path / "plan.yaml")
    assert iolab(tmp_path, "reproduce", thread, "-o", plan).exit_code == 0
    ran = iolab(tmp_path, "run", "--quick", "-q", plan)
    assert ran.exit_code == 0, ran.output
    assert "0 failed" in ran.output
    with open_store(str(tmp_path / "store.db")) as store:
        samples = store.samples(run_id=1, with_jobs=False, with_histograms=False)
    assert len(samples) == 3 * len(variants)  # the quick profile's 3 blocks
    assert {s.variant for s in samples} == variants
    assert all(s.metrics[kpi] > 0 for s in samples)
    imported = iolab(tmp_path, "import", thread, "--label", "thread")
    assert imported.exit_code == 0, imported.output
    assert "imported 2 results" in imported.output  # the quoted copies are one result each
    shown = iolab(tmp_path, "compare", f"label:thread/caption={caption}", side)
    assert shown.exit_code == 0, shown.output
    assert re.search(rf"^{re.escape(kpi)} +A +1 ", shown.output, re.M), shown.output
    assert re.search(r"^ +B +3 ", shown.output, re.M), shown.output
    report = json.loads(
        iolab(
            tmp_path, "compare", f"label:thread/caption={caption}", side, "--format", "json"
        ).output
    )
    assert report is not None


def test_raid_writeback_thread_matrix_from_the_cell_names(tmp_path: Path) -> None:
    """The 0-day table's cell names (`lkp-nex04/RAID0-12HDD-thresh=100M/ext4-100dd-1-3.5.0`)
    are the matrix: md level x dd writers x dirty threshold, on the two kernels compared."""
    plan, quick, path, done = drafted(tmp_path, "ext4-raid-writeback")
    assert plan.matrix == {
        "raid": ("jbod", "raid0", "raid5"),
        "writers": ("1", "10", "100"),
        "dirty_thresh": ("100M", "1000M", "8G"),
    }
    assert plan.variants == ("3.5.0", "3.6.0-rc1+") and plan.baseline == "3.5.0"
    assert len(plan.cases) == 2 * 27
    kinds = {c.cell["raid"]: (c.target.kind, c.target.count, c.target.members) for c in plan.cases}
    assert kinds == {"jbod": ("loop", 12, 0), "raid0": ("md", 1, 12), "raid5": ("md", 1, 12)}
    assert {c.target.md.level for c in plan.cases if c.target.md} == {0, 5}
    case = next(c for c in plan.cases if c.cell == {"raid": "raid5", "writers": "100",
                                                   "dirty_thresh": "8G"})  # fmt: skip
    assert case.sysctls["vm.dirty_bytes"] == str(8 << 30) and case.kernel == "3.5.0"
    assert case.filesystem is not None and case.filesystem.type == "ext4"
    assert "numjobs=100" in (case.workload.fio_text or "")
    assert [k.metric for k in plan.kpis] == ["write.bw_bytes"]
    assert {c.kernel for c in quick.cases} == {None}
    # --quick in a guest: every storage kind, 1 writer, the lowest threshold
    assert [(c.cell["raid"], c.cell["writers"], c.cell["dirty_thresh"]) for c in
            quick.cases] == [(r, "1", "100M") for r in ("jbod", "raid0", "raid5")]  # fmt: skip
    assert all("size=24576k" in (c.workload.fio_text or "") for c in quick.cases)
    assert done.used[1][:2] == (
        "lines 42-76",
        "lkp-nex04/JBOD-12HDD-thresh=1000M/ext4-100dd-1-3.5.0",
    )
    assert done.used[1][2].startswith("33 cells like it: the cell names")
    # md RAID0/RAID5 need md, which this host's kernel may lack: refused in one line
    ran = iolab(tmp_path, "run", "--quick", path)
    if not Path("/proc/mdstat").exists():
        assert ran.exit_code == 3, ran.output
        assert len(ran.stderr.strip().splitlines()) == 1
