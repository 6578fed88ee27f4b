"""The plan a 0-day/LKP fsmark report implies: fs_mark's synchronous small-file writes as fio.

LKP's fsmark (lkp-tests programs/fsmark/run) runs `fs_mark -d DIR… -n nr_files -L iterations
-S sync_method -s filesize` with one directory per thread (`nr_threads`, at most 64), where
`nr_files = test_size / max(filesize, 4096) / nr_threads / iterations` (at most 1,000,000;
`test_size` 20G for files under 1M, else 80G, when the report gives none) and its headline
metric is `fsmark.files_per_sec`.  fs_mark is not packaged here, so the plan is the same I/O
written as a fio job, said so in the plan: per thread, `nr_files` files created one at a
time (`create_on_open`, one open file, in order), each written in writes of up to 16 KiB
(fs_mark's buffer), then — with `sync_method: fsyncBeforeClose` — fsynced before its close
(`fsync_on_close`).  With files of 16 KiB or less each file is one write, so fio's write IOPS
count files per second; the KPI is then `write.iops`.  Other sync methods (syncFsync,
PostReverseFsync, ...) sync at times fio cannot express: refused in one line.  On ext4 the
journal's commits are the evidence (`monitors: [jbd2]`).
"""

from __future__ import annotations

from collections.abc import Mapping

from iolab.errors import IolabError
from iolab.model.comparison import RobotMail
from iolab.reproduce.robot import (
    FILESYSTEMS,
    RobotPlan,
    finish,
    nr_jobs,
    plain_parameters,
    to_bytes,
)

_KEYS = ("fs", "filesize", "test_size", "nr_threads", "sync_method", "iterations")
_BUFFER = 16 << 10  # fs_mark's write buffer
_SYNC = {"fsyncBeforeClose": True, "NoSync": False}
# what each fsmark parameter becomes in the plan, and why the others are left out
BECOMES = {
    "testcase": "the LKP job the plan writes as fio (programs/fsmark/run)",
    "fs": "the plan's filesystem",
    "filesize": "fio filesize (and bs: writes of up to 16 KiB, fs_mark's buffer)",
    "test_size": "the files per thread: test_size / filesize / nr_threads / iterations",
    "nr_threads": "fio numjobs (fs_mark's threads, each on files of its own)",
    "sync_method": "fio fsync_on_close (fsyncBeforeClose) or no sync (NoSync)",
    "iterations": "the files per thread; one pass per sample here",
}
LEFT_OUT = {
    "nr_directories": "fio writes each thread's files in one directory (fs_mark spreads them "
    "over nr_directories)",
    "nr_files_per_directory": "fio writes each thread's files in one directory (fs_mark "
    "starts a new one after nr_files_per_directory)",
}


def fsmark_plan(
    parameters: Mapping[str, str],
    *,
    name: str = "lkp-fsmark",
    machine: str | None = None,
    robot: RobotMail | None = None,
    metric: str | None = None,
    target_size: int = 1 << 30,
) -> RobotPlan:
    """The plan of an LKP fsmark parameter set, drafted and rendered as fio-basic's is."""
    from iolab.reproduce.draft import IMAGE_MAX, Draft, Ref, fit

    p = plain_parameters(parameters, _KEYS)
    fs = p.get("fs")
    if fs not in FILESYSTEMS:
        raise IolabError(
            f"robot parameter fs {fs!r}: fsmark writes files; iolab makes {', '.join(FILESYSTEMS)}"
        )
    method = p.get("sync_method", "fsyncBeforeClose") or "fsyncBeforeClose"
    if method not in _SYNC:
        raise IolabError(
            f"robot parameter sync_method {method!r}: only fsyncBeforeClose and NoSync map to fio"
        )
    threads, threads_why = nr_jobs(p.get("nr_threads", "1"), machine)
    threads = min(threads, 64)
    filesize = to_bytes(p["filesize"]) if "filesize" in p else 4096
    if filesize < 1:
        raise IolabError("robot parameter filesize: a file of no bytes writes nothing")
    default_size = "20G" if filesize < (1 << 20) else "80G"
    test_size = to_bytes(p.get("test_size", default_size))
    iterations_text = p.get("iterations", "1").rstrip("x")
    if not iterations_text.isdigit() or int(iterations_text) < 1:
        raise IolabError(f"robot parameter iterations {p['iterations']!r}: expected 1x, 2x, …")
    iterations = int(iterations_text)
    unit = max(filesize, 4096)
    nr_files = min(max(test_size // unit // threads // iterations, 1), 1_000_000)
    notes: list[str] = []
    fits = max((IMAGE_MAX // 2) // unit // threads, 1)
    if nr_files > fits:
        notes.append(
            f"SCALED: {nr_files} files of {filesize} bytes per thread do not fit a loop image "
            f"here; {fits} per thread"
        )
        nr_files = fits
    bs = min(filesize, _BUFFER)
    sync = _SYNC[method]
    job = [
        "[global]", "directory={mnt}", "ioengine=sync", "rw=write", f"bs={bs}",
        f"filesize={filesize}", "nrfiles={nrfiles}", "openfiles=1",
        "file_service_type=sequential", "create_on_open=1",
        *(["fsync_on_close=1"] if sync else []), "group_reporting",
        "", "[task_0]", f"numjobs={threads}",
    ]  # fmt: skip
    one_write = filesize <= _BUFFER
    per = (
        "one write per file here, so write IOPS count files per second"
        if one_write
        else f"files of {filesize} bytes take several writes each"
    )
    draft = Draft(
        name=name,
        description=f"LKP fsmark fs={fs} filesize={filesize} sync_method={method} "
        f"nr_threads={threads} (as fio)",
        source="a 0-day/LKP fsmark report (LKP's job: lkp-tests programs/fsmark/run), as fio",
        fstype=fs,
        fstype_ref=Ref("robot parameter", f"fs: {fs}"),
        target_size=target_size,
        target_note=f"a loop image; the robot's disk: {p.get('disk', '?')}",
        workload_kind="fio",
        fio_text="\n".join(job) + "\n",
        workload_ref=Ref(
            "robot parameters",
            f"fs_mark -S {method} -s {filesize} -n {nr_files} ({threads_why}), written as "
            f"fio: files created one at a time, {'fsynced before close' if sync else 'no sync'}",
        ),
        kpis=["write.iops"],
        kpi_note=f"the report's headline metric: {metric or 'fsmark.files_per_sec'}; {per}",
        quick_timeout="120s",
    )
    if not one_write:
        notes.append(f"fsmark.files_per_sec is write.iops / {-(-filesize // bs)} here")
    if iterations > 1:
        notes.append(f"iterations: {iterations}x: one pass per sample here")
    for key in ("disk", "cpufreq_governor", "ucode"):
        if key in p:
            notes.append(f"not reproduced here: {key}: {p[key]} (a requirement of the target)")
    draft.vars["nrfiles"] = (str(nr_files), "files per thread: test_size / filesize / nr_threads")
    draft.quick_vars["nrfiles"] = str(min(nr_files, 64))
    if fs == "ext4" and sync:
        draft.monitors.append(("jbd2", Ref("robot parameter", f"sync_method: {method}")))
    fit(draft, nr_files * unit * threads, f"robot parameters test_size and filesize: {nr_files}")
    plan = finish(draft, notes, robot, machine)
    plan.testcase, plan.becomes, plan.left_out = "fsmark", dict(BECOMES), dict(LEFT_OUT)
    return plan
