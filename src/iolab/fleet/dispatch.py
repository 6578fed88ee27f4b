"""The controller's side: a `BlockSource` that runs blocks on a fleet's hosts.

Every decision stays with the caller (`plan_run`, `ab.loop`); this only gets blocks measured.
It keeps up to `hosts` blocks in flight (a plain run one more, waiting in the queue: `ahead`),
each as an attempt row in the store sent as one Celery message to the class's queue, and
learns what became of them by polling the store (never Celery's results):

- `finished` → the block's samples (stored by the worker with the lease) are handed back;
- `lost` (3 missed heartbeats, expired here), `timed_out`, `infra_error`, or `queued` too
  long while a host of the class sits idle (for a heartbeat) → a new attempt (attempt + 1),
  which any host of the class may take; the host that went silent is marked offline, and
  quarantined when it stays away;
- `refused` → the block goes to another live host of the class that has not refused it (to
  that host's own queue); the run ends, in one line naming each host's reason, only when no
  host is left.  `failed` ends the run with the reason (as it would end a local run);
- `booting` (a kernel plan's host boots the next sample's kernel, docs/kernels.md) → sent
  again, to that host only, once it is back with a new boot id and the kernel asked for;
  back on another kernel → `wrong_kernel` (the host is quarantined; the block goes to
  another host, or the run ends when none is left); not back within the boot timeout →
  `lost` and a new attempt, after its power cycle if the controller's fleet.toml gives one
  (iolab.fleet.power: never a command from the store or a host), else quarantined.
  A host whose lease was lost (3 missed heartbeats) is power-cycled too when it has one.

Before the run is created, the hosts of the class that can run the plan are named (from
the facts they registered: `able_hosts`, iolab.fleet.eligible); none → no run is created.
`iolab cancel RUN` (a request in the store, seen at each poll): blocks in flight are told to
stop, and the run ends as cancelled.

A message that could not be published (redis-server down) is published again on the next
poll.  A resumed run adopts its blocks' attempts: finished blocks are not measured again,
and attempts still queued or running are waited for.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from iolab.errors import LabError, RefusedError, StoreError
from iolab.fleet import eligible, power
from iolab.fleet.app import TASK, class_queue, host_queue, make_app
from iolab.fleet.config import DEFAULT_VISIBILITY_S, heartbeat_s
from iolab.fleet.job import Job
from iolab.fleet.retry import retry_store
from iolab.model.sample import Sample
from iolab.plan.model import Case, Plan
from iolab.store import leases
from iolab.store.leases import Attempt

if TYPE_CHECKING:
    from iolab.runs.lifecycle import OpenRun
    from iolab.store.store import Store

log = logging.getLogger("iolab.fleet.dispatch")
RETRIED = ("lost", "timed_out", "infra_error")


@dataclass(frozen=True)
class FleetSettings:
    host_class: str
    hosts: int
    broker_url: str
    heartbeat_s: float
    visibility_timeout_s: float = DEFAULT_VISIBILITY_S
    poll_s: float = 0.2  # the store read 5 times a second: a finished block is seen at once
    max_attempts: int = 5
    claim_timeout_s: float | None = None  # default: 3 heartbeats
    quarantine_after_s: float | None = None  # default: 5 heartbeats
    boot_timeout_s: float = 900.0  # a booting host must be back within this long

    @property
    def grace_s(self) -> float:
        return 3 * self.heartbeat_s


def settings(host_class: str, hosts: int, broker_url: str) -> FleetSettings:
    return FleetSettings(
        host_class, hosts, broker_url, heartbeat_s(), boot_timeout_s=boot_timeout_s()
    )


def boot_timeout_s() -> float:
    """$IOLAB_FLEET_BOOT_TIMEOUT_S, else 900 s (a real server's firmware alone can take 5
    minutes; a QEMU guest under TCG boots in under one)."""
    text = os.environ.get("IOLAB_FLEET_BOOT_TIMEOUT_S")
    if not text:
        return 900.0
    try:
        value = float(text)
    except ValueError:
        raise LabError(f"IOLAB_FLEET_BOOT_TIMEOUT_S={text!r} is not a number of seconds") from None
    if not 1 <= value <= 86400:
        raise LabError("IOLAB_FLEET_BOOT_TIMEOUT_S must be between 1 and 86400 seconds")
    return value


def able_hosts(store: Store, plan: Plan, host_class: str) -> list[str]:
    """The hosts of `host_class` that can run `plan` (from the facts they registered), said
    in one line; RefusedError when none can.  Called before the run is created, so a plan no
    host can run leaves no run behind."""
    found = retry_store(lambda: leases.hosts(store, host_class))
    if not found:
        log.warning("no host of class %s has registered yet; blocks wait in its queue", host_class)
        return []
    able, unable = eligible.split(plan, found)
    if not able:
        raise RefusedError(
            f"no host of class {host_class} can run this plan: "
            + "; ".join(f"{name}: {why}" for name, why in sorted(unable.items()))
        )
    log.warning(
        "hosts of class %s that can run this plan: %s%s",
        host_class,
        ", ".join(able),
        "".join(f"; not {name} ({why})" for name, why in sorted(unable.items())),
    )
    return able


def longest_block_s(cases: Sequence[Case]) -> float:
    """An upper bound of one block's time: each case's three steps at their time limit."""
    return sum(3 * case.timeout_s for case in cases)


class FleetBlocks:
    """Blocks of one open run measured on the hosts of one class."""

    def __init__(self, run: OpenRun, fleet: FleetSettings) -> None:
        self.run, self.fleet = run, fleet
        # past every step's own time limit, and 10 minutes for mkfs, mounts and restores
        self.block_timeout_s = longest_block_s(run.plan.cases) + 600
        self.store = run.store
        self.app = make_app(fleet.broker_url, visibility_timeout_s=fleet.visibility_timeout_s)
        self._flight: dict[int, Attempt] = {}
        self._ready: deque[tuple[int, list[Sample]]] = deque()
        self._latest = {a.block: a for a in leases.attempts(self.store, run.run_id)}
        self.after_decision: list[int] = []
        self._variants: dict[int, tuple[str, ...]] = {}  # block -> the variants it measures
        self._refused: dict[int, dict[str, str]] = {}  # block -> host -> its reason
        self.controller = power.load()
        self._next_expiry = 0.0  # monotonic time of the next look for silent leases
        self._idle_since: dict[str, Any] = {}  # host -> when first seen idle (server time)

    # -- BlockSource ----------------------------------------------------------------------

    @property
    def width(self) -> int:
        return self.fleet.hosts

    @property
    def ahead(self) -> int:
        """One block waiting in the class's queue: the host that ends a block takes it at
        once, without waiting for this controller's poll and publish (docs/fleet.md
        "Measured")."""
        return 1

    def in_flight(self) -> list[int]:
        return [*self._flight, *(b for b, _ in self._ready)]

    def start(self, block: int, cases: Sequence[Case] = ()) -> None:
        """Block `block` of the plan: all its cases, or `cases` (whole variants: a bisect's
        arms)."""
        if cases:
            names = tuple(c.variant for c in cases if c.variant is not None)
            if len(names) != len(cases):
                raise ValueError("a fleet runs a block's cases by variant")
            self._variants[block] = names
        latest = self._latest.get(block)
        if latest is not None and latest.state == "finished":
            self._ready.append((block, retry_store(lambda: self._samples(block))))
        elif latest is not None and latest.state in leases.LIVE:
            self._flight[block] = latest  # a resumed run: wait for it
        else:
            self._dispatch(block)

    def next_finished(self) -> tuple[int, list[Sample]]:
        while not self._ready:
            try:
                self._poll()
            except StoreError as exc:  # PostgreSQL restarting: wait for it
                log.warning("store unreachable, retrying: %s", exc)
            if not self._ready:
                time.sleep(self.fleet.poll_s)
        return self._ready.popleft()

    def stop(self, unused: Sequence[int] = ()) -> list[int]:
        """Queued attempts are revoked (a worker that gets their message measures nothing);
        running ones are waited for, stored and marked as after the decision, as are the
        `unused` blocks (ended, but not fed to the decision)."""
        for block, attempt in list(self._flight.items()):
            if leases.end(
                self.store, attempt.id, "revoked", "not needed: decided", only_from=("queued",)
            ):
                del self._flight[block]
        after = [*self._flight, *(b for b, _ in self._ready), *unused]
        while self._flight:
            with contextlib.suppress(StoreError):
                self._poll(redispatch=False)
            if self._flight:
                time.sleep(self.fleet.poll_s)
        self._ready.clear()
        leases.mark_after_decision(self.store, self.run.run_id, after)
        self.after_decision = sorted(after)
        return self.after_decision

    def abandon(self) -> None:
        """The run ends with an error: revoke what has not started."""
        for attempt in self._flight.values():
            with contextlib.suppress(StoreError):
                leases.end(
                    self.store, attempt.id, "revoked", "the run ended", only_from=("queued",)
                )

    def use_plan(self, plan: Plan) -> None:
        """Send `plan` from now on: a git-range kernel bisect's plan gains a variant per
        commit it has built (the cases already sent are in it unchanged)."""
        self.run = replace(self.run, plan=plan)
        self.block_timeout_s = max(self.block_timeout_s, longest_block_s(plan.cases) + 600)

    # -- inside ---------------------------------------------------------------------------

    def _samples(self, block: int) -> list[Sample]:
        """A finished block's samples as its consumers read them: their metrics (the
        decisions' KPIs), not job metrics or histograms, which stay in the store."""
        return self.store.samples(
            self.run.run_id, status=None, block=block, with_jobs=False, with_histograms=False
        )

    def _dispatch(self, block: int, host: str | None = None) -> None:
        """A new attempt at `block`, for any host of the class, or `host` only."""
        # a PostgreSQL restart between two blocks is waited out, as the polls do
        attempt = retry_store(
            lambda: leases.new_attempt(
                self.store, self.run.run_id, block, host_class=self.fleet.host_class, host=host
            )
        )
        self._flight[block] = attempt
        self._latest[block] = attempt
        self._send(attempt)

    def _send(self, attempt: Attempt) -> None:
        plan = self.run.plan
        job = Job(
            self.run.run_id,
            attempt.block,
            attempt.attempt,
            plan.text,
            plan.sha256,
            plan.path or plan.name,
            self.run.seed,
            plan.profile,
            self._variants.get(attempt.block, ()),
        )
        # an attempt sent again after its host booted goes to that host only
        queue = host_queue(attempt.host) if attempt.host else class_queue(self.fleet.host_class)
        try:
            self.app.send_task(TASK, kwargs={"job": job.to_json()}, queue=queue)
        except Exception as exc:  # kombu/redis: broker down; published again on next poll
            log.warning("could not publish %s: %s", job.title, exc)
            return
        retry_store(lambda: leases.mark_sent(self.store, attempt.id))

    def _poll(self, *, redispatch: bool = True) -> None:
        """One look at the run: a cancel, and what became of the blocks in flight (one
        session); once a heartbeat, leases whose heartbeats stopped and silent hosts."""
        store, run_id = self.store, self.run.run_id
        if time.monotonic() >= self._next_expiry:
            # heartbeats come every heartbeat_s: looking more often finds nothing new
            self._next_expiry = time.monotonic() + self.fleet.heartbeat_s
            self._expire()
        view = leases.run_view(store, run_id)
        if view.cancelled:
            self.abandon()
            raise leases.RunCancelled(f"run {run_id} was cancelled (iolab cancel)")
        now = view.now
        current = {a.id: a for a in view.attempts}
        for block, old in list(self._flight.items()):
            attempt = current.get(old.id, old)
            self._flight[block] = attempt
            state = attempt.state
            if state == "queued":
                if attempt.sent_at is None:
                    self._send(attempt)
                elif (
                    redispatch
                    and self._unclaimed_too_long(attempt, now)
                    and leases.end(
                        store, attempt.id, "lost", "never claimed", only_from=("queued",)
                    )
                ):
                    self._retry(block, attempt)
            elif state == "finished":
                del self._flight[block]
                self._ready.append((block, self._samples(block)))
            elif state in RETRIED:
                del self._flight[block]
                if redispatch:
                    self._retry(block, attempt)
            elif state == "refused":
                del self._flight[block]
                self._refusal(block, attempt)
            elif state == "failed":
                self.abandon()
                raise LabError(f"block {block} failed on host {attempt.host}: {attempt.reason}")
            elif state == "revoked":
                del self._flight[block]
            elif state == "booting":
                self._booting(block, attempt, now)
            elif state == "wrong_kernel":
                del self._flight[block]
                self._wrong_kernel(block, attempt)

    def _expire(self) -> None:
        """Leases 3 heartbeats silent → lost (their host offline, power-cycled when the
        controller's fleet.toml says how); hosts silent since → quarantined."""
        store = self.store
        for gone in leases.expire(
            store, self.run.run_id, grace_s=self.fleet.grace_s, block_timeout_s=self.block_timeout_s
        ):
            if gone.host:
                leases.set_host_state(store, gone.host, "offline", f"lost {_title(gone)}")
                self._power_cycle(gone.host, f"lost {_title(gone)}")
        self._quarantine()

    # -- kernels (docs/kernels.md) ---------------------------------------------------------

    def _booting(self, block: int, attempt: Attempt, now: Any) -> None:
        """A host booting for a sample: back on the kernel asked for → send the attempt
        again; back on another → wrong_kernel; not back in time → power cycle, then lost."""
        host = next((h for h in leases.hosts(self.store) if h.name == attempt.host), None)
        fresh = timedelta(seconds=self.fleet.grace_s)
        back = (
            host is not None
            and host.boot_id
            and host.boot_id != attempt.boot_from
            and host.heartbeat_at is not None
            and now - host.heartbeat_at < fresh
            and host.state in ("idle", "busy")
        )
        if back and host is not None:
            if host.kernel == attempt.boot_kernel:
                leases.requeue_booted(self.store, attempt.id)  # sent on the next poll
                return
            leases.end(
                self.store,
                attempt.id,
                "wrong_kernel",
                f"host {host.name} came back on {host.kernel}, not {attempt.boot_kernel}",
            )
            return  # the next poll sees wrong_kernel
        started = attempt.boot_at or attempt.created_at
        if now - started < timedelta(seconds=self.fleet.boot_timeout_s):
            return
        name = attempt.host or "?"
        why = f"not back from booting {attempt.boot_kernel} within {self.fleet.boot_timeout_s:g} s"
        if not leases.end(self.store, attempt.id, "lost", why, only_from=("booting",)):
            return
        del self._flight[block]
        if self._power_cycle(name, why):  # it comes back on its default kernel: a new attempt
            self._retry(block, replace(attempt, state="lost", reason=why + "; power-cycled"))
            return
        leases.set_host_state(self.store, name, "offline", why)
        leases.set_host_state(self.store, name, "quarantined", why)
        self._retry(block, replace(attempt, state="lost", reason=why))

    def _wrong_kernel(self, block: int, attempt: Attempt) -> None:
        """Nothing of the sample was stored.  The host is quarantined (its boot setup is
        wrong, not its luck); the block goes to another host of the class, if any."""
        name = attempt.host or "?"
        leases.set_host_state(self.store, name, "quarantined", f"wrong_kernel: {attempt.reason}")
        others = [
            h
            for h in leases.hosts(self.store, self.fleet.host_class)
            if h.name != name and h.state in ("idle", "busy") and not h.drained
        ]
        if not others:
            self.abandon()
            raise LabError(
                f"block {block}: wrong_kernel on host {name} ({attempt.reason}); no other "
                f"host of class {self.fleet.host_class} to run it (nothing of it was stored)"
            )
        self._retry(block, attempt)

    def _refusal(self, block: int, attempt: Attempt) -> None:
        """A host refused the block under its own rules: another host of the class that
        has not refused it takes it (sent to that host's queue); none left → the run ends
        with every host's reason."""
        refused = self._refused.setdefault(block, {})
        refused[attempt.host or "?"] = attempt.reason or "refused"
        now = leases.server_now(self.store)
        fresh = timedelta(seconds=self.fleet.grace_s)
        others = [
            h
            for h in leases.hosts(self.store, self.fleet.host_class)
            if h.name not in refused
            and h.state in ("idle", "busy")
            and not h.drained
            and h.heartbeat_at is not None
            and now - h.heartbeat_at < fresh
            and eligible.why_not(self.run.plan, h) is None
        ]
        if not others:
            self.abandon()
            raise RefusedError(
                f"block {block}: no host of class {self.fleet.host_class} can run it: "
                + "; ".join(f"{name} refused: {why}" for name, why in sorted(refused.items()))
            )
        target = min(others, key=lambda h: (h.state != "idle", h.name))
        log.warning(
            "host %s refused block %d (%s); sending it to %s",
            attempt.host,
            block,
            attempt.reason,
            target.name,
        )
        self._dispatch(block, target.name)

    def _power_cycle(self, name: str, why: str) -> bool:
        """Run the host's out-of-band power cycle (IPMI, a PDU, virsh) as this controller's
        fleet.toml gives it, if it does; never a command from the store."""
        argv = self.controller.power_cycle(name)
        if not argv:
            return False
        log.warning("host %s: %s; power-cycling it (%s)", name, why, argv[0])
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.warning("host %s: power_cycle hook failed: %s", name, exc)
            return False
        if proc.returncode != 0:
            log.warning("host %s: power_cycle hook exited %d", name, proc.returncode)
            return False
        # offline until its worker is back; not a silent host to quarantine
        leases.set_host_state(self.store, name, "offline", "power-cycled by the controller")
        return True

    def _retry(self, block: int, attempt: Attempt) -> None:
        if attempt.attempt >= self.fleet.max_attempts:
            self.abandon()
            raise LabError(
                f"block {block}: {attempt.attempt} attempts ended without a result "
                f"(last: {attempt.state} on {attempt.host or 'no host'}: {attempt.reason})"
            )
        log.warning("%s %s (%s): dispatched again", _title(attempt), attempt.state, attempt.reason)
        self._dispatch(block)

    def _unclaimed_too_long(self, attempt: Attempt, now: Any) -> bool:
        """Queued past the claim timeout while a live host that could take it is idle: any
        host of the class, or the one host it was sent to (a refusal's or a boot's) — its
        message was lost (a broker restarted without its data)."""
        limit = self.fleet.claim_timeout_s or 3 * self.fleet.heartbeat_s
        if attempt.boot_kernel is not None:  # sent again after a boot: its host only
            limit = max(limit, self.fleet.boot_timeout_s)
        if attempt.sent_at is None or now - attempt.sent_at < timedelta(seconds=limit):
            return False
        fresh = timedelta(seconds=self.fleet.grace_s)
        # an idle host that started since the message was sent (back from a power cycle)
        # has had no time to take it yet
        waited = timedelta(seconds=limit)
        idle = {
            h.name
            for h in leases.hosts(self.store, self.fleet.host_class)
            if h.state == "idle"
            and not h.drained
            and h.heartbeat_at is not None
            and now - h.heartbeat_at < fresh
            and (h.started_at is None or now - h.started_at > waited)
        }
        # idle for a heartbeat, as this controller saw it: a host that has just ended a
        # block says idle before it takes the block waiting for it (`ahead`)
        for name in set(self._idle_since) - idle:
            del self._idle_since[name]
        for name in idle:
            self._idle_since.setdefault(name, now)
        settled = timedelta(seconds=self.fleet.heartbeat_s)
        takers = idle if attempt.host is None else idle & {attempt.host}
        return any(now - self._idle_since[name] >= settled for name in takers)

    def _quarantine(self) -> None:
        """Hosts silent past the quarantine time are quarantined: no block goes to them
        until `iolab fleet undrain`."""
        limit = self.fleet.quarantine_after_s or 5 * self.fleet.heartbeat_s
        now = leases.server_now(self.store)
        for host in leases.hosts(self.store, self.fleet.host_class):
            silent = host.heartbeat_at is None or now - host.heartbeat_at > timedelta(seconds=limit)
            if host.state == "offline" and silent and host.reason and "lost" in host.reason:
                leases.set_host_state(
                    self.store,
                    host.name,
                    "quarantined",
                    f"silent since {host.heartbeat_at:%H:%M:%S} UTC; " + host.reason,
                )


def _title(attempt: Attempt) -> str:
    return f"block {attempt.block} attempt {attempt.attempt}"
