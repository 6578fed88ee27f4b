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
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from iolab.errors import LabError
from iolab.kernels import boot, switch
from iolab.kernels.order import paired_block_order
from iolab.lab.runner import LabSession, SampleFailed, case_key
from iolab.model.sample import Sample
from iolab.plan.model import Case, Plan
from iolab.store import leases

if TYPE_CHECKING:
    from iolab.fleet.worker import Job, Worker

log = logging.getLogger("iolab.fleet.kernels")


class LeaseGone(LabError):
    """The lease ended while the block ran: stop; what was stored stays (it was valid)."""


@dataclass
class GuardedSink:
    """Stores each sample at once, only while the attempt is running, with its boot."""

    worker: Worker
    attempt_id: int
    boot_record: dict[str, object]

    def add_sample(self, sample: Sample) -> int:
        if self.worker.beat.lost.is_set():
            raise LeaseGone("the lease expired (missed heartbeats)")
        sample.provenance["boot"] = dict(self.boot_record)
        from iolab.fleet.worker import retry_store

        sample_id = retry_store(
            lambda: leases.add_guarded(self.worker.store, self.attempt_id, sample)
        )
        if sample_id is None:
            raise LeaseGone("the lease ended before the sample was stored")
        return sample_id


def token(job: Job, position: int) -> str:
    """Which sample of which attempt asked: a new attempt (after a lost lease, a power cut)
    never takes an earlier attempt's boot for its own."""
    return f"run {job.run_id} block {job.block} attempt {job.attempt} position {position}"


def run(worker: Worker, job: Job, attempt_id: int, plan: Plan, chosen: Sequence[Case] = ()) -> str:
    """Go as far through the block (its `chosen` cases, default all) as this boot allows;
    what became of it."""
    config, store = worker.config, worker.store
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
                return _boot(worker, job, attempt_id, case, position)
            if mine and judged.request is not None:
                switch.answered(judged.request, judged.boot.boot_id)
            if session is None:
                session = LabSession(
                    plan,
                    GuardedSink(worker, attempt_id, _record(judged, mine)),
                    job.run_id,
                    job.seed,
                    config.destroy_data,
                    host=config.name,
                )
                session.__enter__()
            assert isinstance(session.sink, GuardedSink)
            session.sink.boot_record = _record(judged, mine)
            sample = session.run_sample(case, job.block, position)
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


def _needs_boot(plan: Plan, case: Case, judged: switch.Judged, mine: bool) -> bool:
    if case.kernel is None and not case.kernel_cmdline:
        return False
    if plan.reboot == "per-sample":
        return not (mine and judged.verdict == "ok")
    now = judged.boot
    wanted_release = case.kernel or now.release
    additions = switch.running_additions(now.cmdline)
    return (now.release, additions) != (wanted_release, case.kernel_cmdline)


def _boot(worker: Worker, job: Job, attempt_id: int, case: Case, position: int) -> str:
    release = case.kernel or boot.current().release
    from iolab.kernels import artifacts

    def fetch(kernel: str) -> list[Path]:
        return artifacts.fetch(worker.store, job.run_id, kernel)

    req, commands = switch.prepare(
        release,
        case.kernel_cmdline,
        host_hooks=worker.config.hooks,
        token=token(job, position),
        fetch=fetch,
    )
    if not leases.begin_boot(worker.store, attempt_id, release, req.from_boot_id):
        switch.clear()
        return f"{job.title}: the lease ended; not booting"
    switch.fire(commands)
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
    return record
