"""One test box, kernels and all: a kernel plan's blocks run on the box that runs iolab.

The fleet's protocol with the controller on the box itself (`iolab ab PLAN --here`): the same
kernel blocks (`iolab.fleet.kernel_blocks`: balanced orders, one boot per sample or per
switch, each sample stored as it ends), the same switch file and boot checks
(`iolab.kernels.switch`), the same attempt states in the store — only no broker and no second
machine.  What the controller does on a fleet is done here at the start of each process:

- a block whose attempt is `booting` is judged against this boot: the boot asked for
  happened (a new boot id) → the attempt goes on (`queued`, claimed by this box, the switch
  file then says whether it is the kernel and command line asked for: `wrong_kernel` ends
  the run, exit 4, as on a fleet with no other host); still the boot that asked (the kexec
  did not happen) → `lost`, and a new attempt asks for the boot again;
- a block whose attempt was `running` when the box went down (a power cut mid-sample) →
  `lost`, and a new attempt goes on from what the store holds (its sample asks for a boot of
  its own: an earlier attempt's boot is never taken for it).

When a sample needs a boot, the attempt is `booting`, the boot is started and this process
ends (`BootStarted`): the run stays `running` with no owner, and `iolab-resume-RUN.service`
(`iolab.runs.resume_unit`) continues it after the boot.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from iolab.errors import IolabError, LabError, RefusedError
from iolab.fleet import kernel_blocks
from iolab.fleet.config import HostConfig
from iolab.fleet.job import Job
from iolab.fleet.sinks import LeaseGone
from iolab.kernels import boot
from iolab.lab.runner import SampleFailed
from iolab.model.sample import Sample
from iolab.plan.model import Case, Plan
from iolab.runs import resume_unit
from iolab.runs.blocks import OneAtATime
from iolab.runs.lifecycle import HandedOver
from iolab.store import leases
from iolab.store.leases import Attempt

if TYPE_CHECKING:
    from iolab.runs.lifecycle import OpenRun

log = logging.getLogger("iolab.fleet.onebox")
DEFAULT_HOST_CONFIG = Path("/etc/iolab/host.toml")


class BootStarted(HandedOver):
    """This box is booting the next sample's kernel: the process ends, the run stays
    `running`, and the resume unit continues it after the boot."""

    def __init__(self, message: str, run_id: int) -> None:
        super().__init__(message)
        self.message, self.run_id = message, run_id


def host_config(destroy_data: bool) -> HostConfig:
    """This box's host config: $IOLAB_HOST_CONFIG, else /etc/iolab/host.toml when there is
    one (its hooks: boot, check, install), else the defaults (kexec, no check)."""
    from iolab.fleet import config

    given = os.environ.get("IOLAB_HOST_CONFIG")
    path = given or (str(DEFAULT_HOST_CONFIG) if DEFAULT_HOST_CONFIG.is_file() else None)
    found = config.load(path)
    return replace(found, destroy_data=destroy_data or found.destroy_data)


@dataclass(frozen=True)
class Resume:
    """How the resume unit continues a run: the command, and the paths it needs mounted."""

    argv: tuple[str, ...]
    mounts: tuple[str, ...] = ()


class OneBoxBlocks(OneAtATime):
    """A `BlockSource` measuring a kernel plan's blocks on this box, one at a time, across
    its boots.  A context manager: the resume unit is installed on entry and removed on the
    way out, unless the way out is a boot."""

    def __init__(self, run: OpenRun, config: HostConfig, resume: Resume) -> None:
        super().__init__()
        self.run, self.config, self.resume = run, config, resume
        self.store = run.store
        self.host = config.name or socket.gethostname()
        self._never = threading.Event()  # no controller expires this box's leases

    def __enter__(self) -> OneBoxBlocks:
        path = resume_unit.install(self.run.run_id, self.resume.argv, self.resume.mounts)
        log.info("run %d: %s continues it after each boot", self.run.run_id, path)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # a boot under way keeps it, whatever else ended this process (the boot's own
        # SIGTERM may reach it before it has left)
        if not isinstance(exc, BootStarted) and not self._booting():
            resume_unit.remove(self.run.run_id)

    # -- BlockSource (the queue: OneAtATime) ----------------------------------------------

    def use_plan(self, plan: Plan) -> None:
        """A bisect's plan (its arms as variants) from now on."""
        self.run = replace(self.run, plan=plan)

    def next_finished(self) -> tuple[int, list[Sample]]:
        block, cases = self._queue[0]
        attempt = self._attempt(block)
        if attempt.state != "finished":
            self._measure(attempt, cases)
        self._queue.popleft()
        return block, self.store.samples(self.run.run_id, status=None, block=block)

    # -- inside ---------------------------------------------------------------------------

    def _booting(self) -> bool:
        try:
            return bool(leases.attempts(self.store, self.run.run_id, states=("booting",)))
        except IolabError:
            return False

    def _attempt(self, block: int) -> Attempt:
        """The block's attempt to go on with: finished, or running here."""
        run_id = self.run.run_id
        if leases.cancel_requested(self.store, run_id):
            raise leases.RunCancelled(f"run {run_id} was cancelled (iolab cancel)")
        mine = [a for a in leases.attempts(self.store, run_id) if a.block == block]
        latest = mine[-1] if mine else None
        if latest is not None and latest.state == "finished":
            return latest
        if latest is not None and latest.state == "booting":
            now = boot.current().boot_id
            if now != latest.boot_from and leases.requeue_booted(self.store, latest.id):
                claimed = leases.claim(self.store, run_id, block, latest.attempt, self.host)
                if claimed is not None:
                    return claimed
            why = f"the box did not boot {latest.boot_kernel} (still boot {now})"
            leases.end(self.store, latest.id, "lost", why, only_from=("booting",))
            log.warning("run %d block %d: %s; asking again", run_id, block, why)
        # a new attempt; one left running ended with its process (a power cut): lost
        return leases.begin_local(self.store, run_id, block, self.host)

    def _measure(self, attempt: Attempt, cases: Sequence[Case]) -> None:
        """As far through the block as this boot goes; BootStarted when it boots."""
        run, store = self.run, self.store
        plan = run.plan
        names = tuple(c.variant for c in cases if c.variant is not None)
        job = Job(
            run.run_id,
            attempt.block,
            attempt.attempt,
            plan.text,
            plan.sha256,
            plan.path or plan.name,
            run.seed,
            plan.profile,
            names,
        )
        try:
            said = kernel_blocks.run(
                self.config, store, self._never, job, attempt.id, plan, cases or plan.cases
            )
            state = leases.state_of(store, run.run_id, attempt.block, attempt.attempt)
        except LeaseGone as exc:
            if leases.cancel_requested(store, run.run_id):
                raise leases.RunCancelled(f"run {run.run_id} was cancelled") from None
            raise LabError(f"{job.title}: {exc.message}") from None
        except (SampleFailed, RefusedError) as exc:
            leases.end(store, attempt.id, "failed", exc.message)
            raise
        except IolabError as exc:
            leases.end(store, attempt.id, "infra_error", exc.message)
            raise
        except KeyboardInterrupt:
            if self._booting():  # the boot's SIGTERM came first
                raise BootStarted(f"{job.title}: booting", run.run_id) from None
            leases.end(store, attempt.id, "failed", "its process was interrupted")
            raise
        log.info("%s", said)
        if state == "finished":
            return
        if state == "booting":
            raise BootStarted(said, run.run_id)
        if state == "wrong_kernel":
            raise LabError(
                f"block {attempt.block}: {said.split(': ', 1)[-1]}; this box is the only host "
                "(nothing of the sample was stored; fix its boot setup, then "
                f"`iolab ab --resume {run.run_id} --here`)"
            )
        if state == "revoked" and leases.cancel_requested(store, run.run_id):
            raise leases.RunCancelled(f"run {run.run_id} was cancelled (iolab cancel)")
        raise LabError(said)


def blocks_for(
    db: str,
    plan_path: str | None,
    resume_args: Callable[[int], Sequence[str]],
    *,
    destroy_data: bool,
) -> Callable[[OpenRun], OneBoxBlocks]:
    """The block source of a `--here` run: this box's host config, and the resume unit's
    command (`iolab --db DB` and `resume_args(run id)`).  Refuses, before a run exists, a
    box where nothing would start the run again after a boot."""
    import iolab

    resume_unit.check_possible()
    config = host_config(destroy_data)
    exe = resume_unit.executable()
    needs = [str(Path(iolab.__file__).resolve().parent), str(Path(exe).resolve().parent)]
    if "://" not in db:
        needs.append(str(Path(db).parent))

    def make(run: OpenRun) -> OneBoxBlocks:
        where = plan_path or run.store.run(run.run_id).plan_path
        mounts = (*needs, *([str(Path(where).resolve().parent)] if where else []))
        argv = (exe, "--db", db, *resume_args(run.run_id))
        return OneBoxBlocks(run, config, Resume(argv, mounts))

    return make
