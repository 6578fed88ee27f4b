"""A test host's side of the fleet: the block task, its lease and its heartbeat.

A task is data: a plan's text and hash, a run, a block and an attempt.  The worker

1. claims the attempt's lease in PostgreSQL (a conditional UPDATE: a redelivered or
   duplicated message finds it running or ended and measures nothing);
2. checks the plan's SHA-256, fills `{dev:NAME}` from its own `[devices]`, and preflights
   the plan under *its own* host config: device targets must be among the host's
   designated devices, `command:` workloads need `allow_commands`, `requires:` names need
   `provides`, then the lab's own preflight, as for a local run — a refusal ends the
   attempt `refused` with the reason (the controller tries another host), before anything
   on the host is touched;
3. runs the block with the same `iolab.plan` load and `LabSession.run_block` as a local
   run, its samples kept in memory;
4. stores them and ends the lease `finished` in one transaction — only if the lease is
   still running (a late result of an expired attempt is dropped).

A thread heartbeats the host row and the running lease every `heartbeat_s`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import platform
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from iolab.errors import IolabError, PlanError, RefusedError
from iolab.fleet import kernel_blocks
from iolab.fleet.config import HostConfig
from iolab.fleet.eligible import DEVICE_NAME, unmet
from iolab.fleet.job import Job, JobVersionError, parse_job
from iolab.fleet.retry import retry_store
from iolab.fleet.sinks import BufferSink, LeaseGone
from iolab.kernels import timing
from iolab.lab.runner import LabSession, SampleFailed, preflight
from iolab.plan.model import Case, Plan
from iolab.store import leases
from iolab.store.store import Store

if TYPE_CHECKING:
    from celery import Celery

log = logging.getLogger("iolab.fleet.worker")


def kernel() -> str:
    return platform.release()


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


@dataclass
class Beat:
    """The heartbeat thread: the host row always, the running lease while there is one."""

    store: Store
    config: HostConfig
    current: tuple[int, str] | None = None  # (attempt id, title)
    lost: threading.Event = field(default_factory=threading.Event)
    host: leases.HostRow | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="iolab-heartbeat", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def beat(self) -> None:
        current = self.current
        try:
            self.host = leases.host_heartbeat(
                self.store, self.config.name, current[1] if current else None
            )
            if current is not None and not leases.heartbeat(self.store, current[0]):
                self.lost.set()
        except Exception as exc:  # the server or the link is down: the next beat tries again
            # (whatever the driver raised: a heartbeat thread that died would look, to the
            # controller, like a host that never comes back)
            log.warning("heartbeat failed: %s", exc)

    def _loop(self) -> None:
        while not self._stop.wait(self.config.heartbeat_s):
            self.beat()

    @property
    def unavailable(self) -> str | None:
        """Why this host takes no block now (drained or quarantined), if so."""
        host = self.host
        if host is None:
            return None
        if host.drained:
            return "drained"
        if host.state == "quarantined":
            return f"quarantined ({host.reason or 'by the controller'})"
        return None


def check_on_host(config: HostConfig, job: Job) -> Plan:
    """The plan of `job` as this host accepts it, or RefusedError/PlanError saying why."""
    from iolab.plan.expand import plan_from_text
    from iolab.plan.placeholders import uses_commit

    digest = hashlib.sha256(job.plan_text.encode("utf-8")).hexdigest()
    if digest != job.plan_sha256:
        raise RefusedError("the plan's text does not match its SHA-256")
    plan = plan_from_text(host_devices(job.plan_text, config), job.plan_name, job.profile)
    missing = unmet(plan, config.provides)
    if missing:
        raise RefusedError(
            f"host {config.name} does not provide {', '.join(missing)} "
            f"(its host config provides {', '.join(config.provides) or 'nothing'})"
        )
    designated = set(config.devices)
    for case in plan.cases:
        spec = case.target
        if spec.kind == "device":
            for device in spec.devices:
                if os.path.realpath(device) not in designated:
                    raise RefusedError(
                        f"device {device} is not designated on host {config.name} "
                        f"(its host config lists {', '.join(config.devices) or 'none'})"
                    )
        for step in (case.workload, case.prepare.fill, case.prepare.warmup):
            if step is None:
                continue
            if step.kind == "command" and not config.allow_commands:
                raise RefusedError(
                    f"host {config.name} runs no `command:` workloads (allow_commands is off)"
                )
            texts = [step.fio_text or "", step.fio_file or "", *step.argv]
            if any(uses_commit(t) for t in texts):
                raise RefusedError("a plan naming {src}/{rev} is a bisect's; not run on a fleet")
    preflight(plan, destroy_data=config.destroy_data)
    return plan


def host_devices(text: str, config: HostConfig) -> str:
    """The plan's text with each `{dev:NAME}` replaced by this host's device of that name
    (host.toml [devices]); RefusedError for a name the host does not have."""

    def path(m: re.Match[str]) -> str:
        found = config.device_names.get(m.group(1))
        if found is None:
            raise RefusedError(
                f"host {config.name} has no device named {m.group(1)} "
                f"(its [devices]: {', '.join(sorted(config.device_names)) or 'none'})"
            )
        return found

    return DEVICE_NAME.sub(path, text)


@dataclass
class Worker:
    """What the task needs: the host's config, its store connection and heartbeat."""

    config: HostConfig
    store: Store
    beat: Beat

    def handle(self, data: object) -> str:
        """One block message; what became of it (logged by Celery)."""
        timing.mark("task")  # the first task of this boot: when a switch's sample was sent
        try:
            job = parse_job(data)
        except JobVersionError as exc:
            log.error("refused a job: %s", exc)
            self._refuse_unread(data, str(exc))
            return f"refused: {exc}"
        except ValueError as exc:
            log.error("a message that is not a job: %s", exc)
            return f"bad job: {exc}"
        lease = retry_store(
            lambda: leases.claim(self.store, job.run_id, job.block, job.attempt, self.config.name)
        )
        if lease is None:
            state = retry_store(
                lambda: leases.state_of(self.store, job.run_id, job.block, job.attempt)
            )
            return f"{job.title}: not measured, the attempt is {state or 'unknown'}"
        self.beat.lost.clear()
        self.beat.current = (lease.id, job.title)
        try:
            return self._run(job, lease.id)
        finally:
            self.beat.current = None
            self.beat.beat()

    def _refuse_unread(self, data: object, reason: str) -> None:
        """A job this worker cannot read: its attempt, if named, ends `refused` with why,
        so the controller tries another host or ends the run saying so."""
        if not isinstance(data, dict):
            return
        ids = [data.get(k) for k in ("run_id", "block", "attempt")]
        numbers = [i for i in ids if isinstance(i, int) and not isinstance(i, bool)]
        if len(numbers) != 3:
            return
        run_id, block, attempt = numbers
        lease = retry_store(
            lambda: leases.claim(self.store, run_id, block, attempt, self.config.name)
        )
        if lease is not None:
            retry_store(lambda: leases.end(self.store, lease.id, "refused", reason))

    def _run(self, job: Job, attempt_id: int) -> str:
        try:
            plan = check_on_host(self.config, job)
            timing.mark("task_checked")  # the first task of this boot: a switch's part
        except (RefusedError, PlanError) as exc:
            return self._end(attempt_id, "refused", exc.message, job)
        except IolabError as exc:  # a tool missing here, no room for the images: not this host
            return self._end(attempt_id, "infra_error", exc.message, job)
        chosen = tuple(c for c in plan.cases if not job.variants or c.variant in job.variants)
        if not chosen:
            return self._end(attempt_id, "refused", "no case of the plan is asked for", job)
        if plan.switches_kernels:
            return self._run_kernels(job, attempt_id, plan, chosen)
        sink = BufferSink(self.beat.lost)
        session = LabSession(
            plan, sink, job.run_id, job.seed, self.config.destroy_data, host=self.config.name
        )
        try:
            with session:
                session.run_block(job.block, cases=chosen if job.variants else ())
        except Exception as exc:
            return self._failed(job, attempt_id, exc)
        stored = retry_store(lambda: leases.store_block(self.store, attempt_id, sink.samples))
        if not stored:
            return f"{job.title}: the lease ended before the block did; not stored"
        return f"{job.title}: {len(sink.samples)} samples stored"

    def _run_kernels(self, job: Job, attempt_id: int, plan: Plan, chosen: tuple[Case, ...]) -> str:
        """A block across boots (iolab.fleet.kernel_blocks); its samples are stored one by
        one, so a failure here ends the attempt and a new one goes on from the store."""
        try:
            return kernel_blocks.run(
                self.config,
                self.store,
                self.beat.lost,
                job,
                attempt_id,
                plan,
                chosen,
                worker_pid=os.getpid(),  # the solo pool: the task runs in the worker itself
            )
        except Exception as exc:
            return self._failed(job, attempt_id, exc)

    def _failed(self, job: Job, attempt_id: int, exc: Exception) -> str:
        """How a block that raised `exc` ends, for plain and kernel blocks alike: a lease
        already gone stores nothing; a failed sample fails the run (`on_failure: stop`);
        a refusal sends the block to another host; anything else (a tool missing, a bug,
        the machine) is an infra_error the controller tries again."""
        if isinstance(exc, LeaseGone):
            return f"{job.title}: {exc.message}"
        if isinstance(exc, SampleFailed):
            return self._end(attempt_id, "failed", exc.message, job)
        if isinstance(exc, RefusedError):
            return self._end(attempt_id, "refused", exc.message, job)
        if isinstance(exc, IolabError):
            return self._end(attempt_id, "infra_error", exc.message, job)
        return self._end(attempt_id, "infra_error", f"{type(exc).__name__}: {exc}", job)

    def _end(self, attempt_id: int, state: str, reason: str, job: Job) -> str:
        retry_store(lambda: leases.end(self.store, attempt_id, state, reason))
        return f"{job.title}: {state}: {reason}"


def register(app: Celery, worker: Worker) -> None:
    """The block task on `app`, bound to this host's `worker`."""
    from celery.exceptions import Reject

    from iolab.fleet.app import TASK

    def run_block(self: Any, job: object) -> str:
        why = worker.beat.unavailable
        if why is not None:  # back to the queue for another host, after a pause
            time.sleep(worker.config.heartbeat_s)
            raise Reject(f"host {worker.config.name} is {why}", requeue=True)
        return worker.handle(job)

    app.task(name=TASK, bind=True, acks_late=True, reject_on_worker_lost=True)(run_block)
