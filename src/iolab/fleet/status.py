"""`iolab fleet status`: the hosts as their workers last reported, queues, blocks in flight."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from iolab.fleet.app import class_queue, host_queue, make_app
from iolab.store import leases
from iolab.store.store import Store


@dataclass(frozen=True)
class HostStatus:
    name: str
    host_class: str
    state: str
    drained: bool
    heartbeat_age_s: float | None
    kernel: str | None
    boot_id: str | None
    current_job: str | None
    reason: str | None
    version: str | None  # the worker's iolab version
    provides: list[str]
    device_names: list[str]


@dataclass(frozen=True)
class FleetStatus:
    hosts: list[HostStatus]
    queues: dict[str, int] | None  # None: no broker given or reachable
    in_flight: list[dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        return {
            "hosts": [h.__dict__ for h in self.hosts],
            "queues": self.queues,
            "in_flight": self.in_flight,
        }


def gather(store: Store, broker: str | None) -> FleetStatus:
    now = leases.server_now(store)
    hosts = [
        HostStatus(
            h.name,
            h.host_class,
            h.state,
            h.drained,
            round((now - h.heartbeat_at).total_seconds(), 1) if h.heartbeat_at else None,
            h.kernel,
            h.boot_id,
            h.current_job,
            h.reason,
            h.version,
            h.provides,
            h.device_names,
        )
        for h in leases.hosts(store)
    ]
    flight = [
        {
            "run": a.run_id,
            "block": a.block,
            "attempt": a.attempt,
            "state": a.state,
            "class": a.host_class,
            "host": a.host,
        }
        for a in leases.attempts(store, states=leases.LIVE)
    ]
    queues = None
    if broker:
        names = sorted(
            {class_queue(h.host_class) for h in hosts} | {host_queue(h.name) for h in hosts}
        )
        queues = queue_lengths(broker, names)
    return FleetStatus(hosts, queues, flight)


def queue_lengths(broker: str, names: list[str]) -> dict[str, int] | None:
    """Messages waiting in each queue (Redis lists), None when the broker cannot be read."""
    app = make_app(broker, visibility_timeout_s=3600)
    try:
        with app.connection_for_read() as conn:
            conn.ensure_connection(max_retries=1)
            client = conn.default_channel.client
            return {name: int(client.llen(name)) for name in names}
    except Exception:
        return None
