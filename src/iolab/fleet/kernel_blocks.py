"""A worker's block of a plan that names kernels: samples across boots, no task across one.

A kernel block is measured sample by sample, each stored under the lease as it ends (as a
local run stores them), because a block spans boots and nothing survives a boot in memory:

1. the block's order is the balanced one of `iolab.kernels.order` (ABBA / BAAB per pair of
   blocks); samples of (run, block) already stored are skipped — a redone block (a power
   cut, a lost lease) goes on where the store says it stopped, so nothing is measured twice
   and nothing measured is lost;
2. a sample whose boot is not the right one — under `reboot: per-sample` any boot but a
   fresh one made for this very sample, under `per-switch` a boot of another kernel or
   command line — makes the worker record its request on disk, load the kernel, set the
   attempt `booting REL` in the store and end its task; the boot starts after that;
3. after the boot the controller sends the attempt again (to this host only); the worker
   judges the boot against its recorded request (a new boot id, the release, the added
   command line words, the host's `check` hook) — a wrong one ends the attempt
   `wrong_kernel`, and the sample is not measured;
4. once every sample is stored the attempt ends `finished`.

The plan's `warmups` run once per boot and run: a block that begins on the boot the
previous block ended on (`reboot: per-switch`) does not warm up again.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Sequence
from pathlib import Path

from iolab.fleet.config import HostConfig
from iolab.fleet.job import Job
from iolab.fleet.sinks import BootStampedSink
from iolab.kernels import boot, hooks, switch, timing
from iolab.kernels.order import paired_block_order
from iolab.lab.runner import LabSession, SampleFailed, case_key
from iolab.plan.model import Case, Plan
from iolab.store import leases
from iolab.store.store import Store

log = logging.getLogger("iolab.fleet.kernels")


def token(job: Job, position: int) -> str:
    """Which sample of which attempt asked: a new attempt (after a lost lease, a power cut)
    never takes an earlier attempt's boot for its own."""
    return f"run {job.run_id} block {job.block} attempt {job.attempt} position {position}"


def run(
    config: HostConfig,
    store: Store,
    lost: threading.Event,
    job: Job,
    attempt_id: int,
    plan: Plan,
    chosen: Sequence[Case] = (),
    worker_pid: int | None = None,
) -> str:
    """Go as far through the block (its `chosen` cases, default all) as this boot allows,
    on the host `config` describes, its lease watched through `lost`; what became of it.
    `worker_pid`, a fleet worker's own process, is ended before a direct jump (its
    connections closed: `switch.fire`); a process that ends by itself (`ab --here`) is not
    given."""
    cases = list(chosen) or list(plan.cases)
    order = paired_block_order(job.seed, job.block, len(cases))
    done = store.done_keys(job.run_id)
    judged = switch.verdict(config.hooks, settle=False)
    session: LabSession | None = None
    try:
        for position, index in enumerate(order, start=1):
            case = cases[index]
            if (case_key(case), job.block) in done:
                continue
            mine = judged.request is not None and judged.request.token == token(job, position)
            if mine and judged.verdict == "wrong_kernel":
                switch.clear()
                leases.end(store, attempt_id, "wrong_kernel", judged.reason)
                return f"{job.title}: wrong_kernel: {judged.reason}"
            if _needs_boot(plan, case, judged, mine):
                if session is not None:
                    # the lab undone before the boot is fired: its images deleted before the
                    # jump's `sync` (nothing of them written out), no undo cut by the jump
                    open_session: LabSession = session
                    session = None
                    open_session.close()
                return _boot(config, store, job, attempt_id, case, position, worker_pid)
            if mine and judged.request is not None:
                switch.answered(judged.request, judged.boot.boot_id)
            if session is None:
                session = LabSession(
                    plan,
                    BootStampedSink(store, lost, attempt_id, {}),
                    job.run_id,
                    job.seed,
                    config.destroy_data,
                    host=config.name,
                    warm_boot=_warm(job.run_id, judged.boot.boot_id),
                )
                session.__enter__()
            assert isinstance(session.sink, BootStampedSink)
            # once per sample, just before it: the switch's last stamp (`measure_s`)
            session.sink.boot_record = _record(judged, mine)
            sample = session.run_sample(case, job.block, position)
            if plan.warmups and not session.warm_boot:  # once, after the session's warm-up
                _mark_warm(job.run_id, judged.boot.boot_id)
                session.warm_boot = True
            if mine:
                switch.clear()  # this boot has had its sample
                judged = switch.Judged("none", "used", None, judged.boot)
            if sample.status != "ok" and plan.on_failure == "stop":
                raise SampleFailed(sample)
    finally:
        if session is not None:
            session.close()
    if not leases.store_block(store, attempt_id, []):
        return f"{job.title}: the lease ended before the block did"
    return f"{job.title}: every sample stored"


def _warm_path() -> Path:
    """Which run's warm-ups this boot has run (beside the switch request)."""
    return switch.state_path().with_suffix(".warm")


def _warm(run_id: int, boot_id: str) -> bool:
    """Whether this boot already ran run `run_id`'s warm-ups: the plan's `warmups` are for
    the first sample of a boot, and with `reboot: per-switch` a block often begins on the
    boot the previous block ended on (a task of its own, a lab session of its own)."""
    try:
        found: object = json.loads(_warm_path().read_text())
    except (OSError, ValueError):
        return False
    return found == {"run": run_id, "boot_id": boot_id}


def _mark_warm(run_id: int, boot_id: str) -> None:
    with contextlib.suppress(OSError):  # without the mark the next block warms up again
        _warm_path().parent.mkdir(parents=True, exist_ok=True)
        _warm_path().write_text(json.dumps({"run": run_id, "boot_id": boot_id}))


def _needs_boot(plan: Plan, case: Case, judged: switch.Judged, mine: bool) -> bool:
    if case.kernel is None and not case.kernel_cmdline:
        return False
    if plan.reboot == "per-sample":
        return not (mine and judged.verdict == "ok")
    now = judged.boot
    wanted_release = case.kernel or now.release
    additions = switch.running_additions(now.cmdline)
    return (now.release, additions) != (wanted_release, case.kernel_cmdline)


def _boot(
    config: HostConfig,
    store: Store,
    job: Job,
    attempt_id: int,
    case: Case,
    position: int,
    worker_pid: int | None = None,
) -> str:
    release = case.kernel or boot.current().release
    from iolab.kernels import artifacts

    def fetch(kernel: str) -> list[Path]:
        return artifacts.fetch(store, job.run_id, kernel)

    req, commands = switch.prepare(
        release,
        case.kernel_cmdline,
        host_hooks=config.hooks,
        token=token(job, position),
        fetch=fetch,
        kexec=config.kexec,
    )
    if not leases.begin_boot(store, attempt_id, release, req.from_boot_id):
        switch.clear()
        return f"{job.title}: the lease ended; not booting"
    # `systemctl kexec` (or a boot hook) stops the worker; a direct jump stops nothing
    direct = hooks.jumps_directly(config.hooks, config.kexec)
    switch.fire(commands, stamp=switch.fired_path(), end=worker_pid if direct else None)
    log.info("%s: booting %s for position %d", job.title, release, position)
    return f"{job.title}: booting {release}"


def _record(judged: switch.Judged, mine: bool) -> dict[str, object]:
    """What each sample's provenance says about its boot (`boot` in results --json)."""
    now = judged.boot
    record: dict[str, object] = {
        "release": now.release,
        "build_id": now.build_id,
        "cmdline": now.cmdline,
        "boot_id": now.boot_id,
        "booted_for_sample": mine,
    }
    if mine and judged.request is not None:
        record["requested"] = judged.request.kernel
        record["additions"] = list(judged.request.additions)
        record["from_boot_id"] = judged.request.from_boot_id
        req = judged.request
        record["switch"] = timing.stamps(req.requested_at, req.install_s, req.fired_at or None)
    return record
