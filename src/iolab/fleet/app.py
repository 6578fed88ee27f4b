"""The Celery application both sides share: JSON only, one block at a time, late acks.

Why each setting (docs/fleet.md "Why Celery + Redis + PostgreSQL"):

- JSON in, JSON out, nothing else accepted: a pickled message is code; a block's task carries
  data only (plan text and its hash, run, block, attempt).
- `worker_concurrency=1`, `worker_prefetch_multiplier=1`: a test host measures one block at
  a time and holds no second message it is not running (another host may take it).
- `task_acks_late` + `task_reject_on_worker_lost`: a message is acknowledged when its block
  ended, so a host that dies mid-block leaves it for another.
- the visibility timeout above the longest block, wherever kombu and Celery read it (broker
  and result-backend transport options, and `visibility_timeout` itself): Redis hands an
  unacknowledged message out again once it has been out that long — even while its block is
  still running (celery/celery#5935).  The lease in PostgreSQL makes such a second delivery
  harmless (it finds the attempt running or ended and measures nothing); the long timeout
  keeps it rare.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from celery import Celery

TASK = "iolab.fleet.run_block"
PUBLISH_RETRY = {"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5, "interval_max": 1}


def class_queue(host_class: str) -> str:
    return f"iolab.class.{host_class}"


def host_queue(name: str) -> str:
    return f"iolab.host.{name}"


def make_app(broker_url: str, *, visibility_timeout_s: float) -> Celery:
    from celery import Celery

    app = Celery("iolab", broker=broker_url, set_as_current=False)
    transport = {"visibility_timeout": int(visibility_timeout_s)}
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        event_serializer="json",
        accept_content=["json"],
        result_accept_content=["json"],
        task_ignore_result=True,  # the store, not a result backend, has the outcome
        result_backend=None,
        worker_concurrency=1,
        worker_prefetch_multiplier=1,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        broker_transport_options=dict(transport),
        result_backend_transport_options=dict(transport),
        visibility_timeout=int(visibility_timeout_s),
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,  # a worker outlives a restarted redis-server
        task_publish_retry=True,
        task_publish_retry_policy=dict(PUBLISH_RETRY),
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
        task_send_sent_event=False,
        worker_enable_remote_control=True,
    )
    return app


def redacted(url: str) -> str:
    """A broker or database URL with its password hidden (never printed in clear)."""
    from kombu.utils.url import maybe_sanitize_url

    return str(maybe_sanitize_url(url))
