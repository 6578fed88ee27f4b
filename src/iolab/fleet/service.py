"""Starting a worker, and a host's drain switch: what `iolab worker` and `iolab fleet` call."""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import shlex
import sys
import warnings
from types import FrameType

from iolab import __version__
from iolab.errors import IolabError
from iolab.fleet.app import class_queue, host_queue, make_app, redacted
from iolab.fleet.config import HostConfig
from iolab.fleet.retry import retry_store
from iolab.fleet.worker import Beat, Worker, boot_id, kernel, register
from iolab.kernels import timing
from iolab.store import leases
from iolab.store.store import Store

log = logging.getLogger("iolab.fleet")


def broker_url(given: str | None) -> str:
    """The broker: --broker, else $IOLAB_BROKER, else the file $IOLAB_BROKER_FILE names
    (so a password need not be on a command line, where `ps` shows it)."""
    if given:
        return given
    if os.environ.get("IOLAB_BROKER"):
        return os.environ["IOLAB_BROKER"]
    path = os.environ.get("IOLAB_BROKER_FILE")
    if path:
        try:
            with open(path) as fh:
                return fh.read().strip()
        except OSError as exc:
            raise IolabError(f"IOLAB_BROKER_FILE {path}: {exc.strerror}") from None
    raise IolabError("no broker: give --broker URL or set IOLAB_BROKER (redis://HOST:6379/0)")


def require_server_store(store: Store) -> None:
    if store.engine.dialect.name != "postgresql":
        raise IolabError(
            f"a fleet keeps its state in PostgreSQL; store {store.location} is SQLite "
            "(give --db postgresql+psycopg://...)"
        )


def run_worker(config: HostConfig, store: Store, broker: str) -> int:
    """Serve blocks until stopped (SIGTERM: after the running block); the exit code."""
    timing.mark("worker_main")
    require_server_store(store)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s: %(message)s"
    )
    undo_leftovers()
    # facts only (docs/fleet.md "Trust"): nothing a host registers is ever run by anyone
    retry_store(
        lambda: leases.register_host(
            store,
            config.name,
            config.host_class,
            kernel=kernel(),
            boot_id=boot_id(),
            devices=config.devices,
            cmdline=_cmdline(),
            device_names=sorted(config.device_names),
            provides=config.provides,
            version=__version__,
        )
    )
    _load_the_lab()
    beat = Beat(store, config)
    beat.beat()
    beat.start()
    app = make_app(broker, visibility_timeout_s=config.visibility_timeout_s)
    # the lab needs root (loop devices, mkfs, mount); Celery's warning about it is known
    warnings.filterwarnings("ignore", message=".*superuser privileges.*")
    register(app, Worker(config, store, beat))
    from celery.signals import worker_ready

    def ready(**_: object) -> None:
        timing.mark("worker_ready")
        default_priority()  # before the first block, and before the thread below
        timing.prefetch_systemd_marks()
        stop_at_once_when_idle(config, store, beat)

    worker_ready.connect(ready, weak=False)
    log.info(
        "host %s (class %s) serving %s and %s from %s",
        config.name,
        config.host_class,
        class_queue(config.host_class),
        host_queue(config.name),
        redacted(broker),
    )
    worker = app.Worker(
        hostname=f"iolab@{config.name}",
        queues=[class_queue(config.host_class), host_queue(config.name)],
        pool="solo",
        concurrency=1,
        loglevel="INFO",
        without_gossip=True,
        without_mingle=True,
        without_heartbeat=True,
        quiet=True,
    )
    try:
        worker.start()
    finally:
        beat.stop()
        with contextlib.suppress(IolabError):
            leases.set_host_state(store, config.name, "offline", "worker stopped")
    return int(worker.exitcode or 0)


def default_priority() -> None:
    """A worker started at a raised priority measures at the default one: every thread of
    it with a negative niceness is set back to 0 once it is ready, before its first block
    (fio inherits the niceness of the thread that starts it, and a sample must not depend
    on how its worker was started).  A guest's unit starts the worker at `Nice=-10`, so that
    its start wins the CPUs from the rest of the boot: under emulation that start is seconds
    of every kernel switch.  A worker started below the default (a positive niceness) is
    left as it is."""
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        tids = [0]  # no /proc: the calling thread only
    raised = 0
    for tid in tids:
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            niceness = os.getpriority(os.PRIO_PROCESS, tid)
            if niceness < 0:
                os.setpriority(os.PRIO_PROCESS, tid, 0)
                raised = niceness
    if raised:
        log.info("started at niceness %d; measuring at 0", raised)


def stop_at_once_when_idle(config: HostConfig, store: Store, beat: Beat) -> None:
    """SIGTERM with no block running ends the worker at once: the host is marked offline,
    as after Celery's warm shutdown, without that shutdown's seconds (under emulation most
    of what stopping services costs before a kexec).  With a block running, Celery's own
    handler lets the block finish first.  Installed once Celery has put its handler in."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    celery_handler = signal.getsignal(signal.SIGTERM)

    def handler(signum: int, frame: FrameType | None) -> None:
        if beat.current is None:
            beat.stop()
            with contextlib.suppress(Exception):  # the store may be gone: exit all the same
                leases.set_host_state(store, config.name, "offline", "worker stopped")
            logging.shutdown()
            os._exit(0)
        if callable(celery_handler):
            celery_handler(signum, frame)

    signal.signal(signal.SIGTERM, handler)


def _load_the_lab() -> None:
    """Import now what a block loads lazily (the plan loader, fio's output readers): an
    idle worker pays for it once, not the first block between its claim and its first
    sample (seconds on a busy host, docs/fleet.md "Measured")."""
    for name in ("iolab.plan.expand", "iolab.ingest.fio_json", "iolab.ingest.detect"):
        importlib.import_module(name)


def undo_leftovers() -> None:
    """What iolab processes killed on this host left (their journals), undone before it
    takes a block — `iolab cleanup`, in the worker's own process: after each kernel switch a
    host starts one Python, not two (under emulation each start costs seconds)."""
    from iolab.lab.journal import cleanup_leftover, leftovers

    for left in leftovers():
        if left.owner_alive:
            continue
        pending = len(left.pending)
        failures = cleanup_leftover(left)
        log.info("undid %d of %d change(s) left by pid %d", pending - len(failures), pending,
                 left.pid)  # fmt: skip
        for failure in failures:
            log.warning("could not undo: %s", failure)


def _cmdline() -> str | None:
    try:
        with open("/proc/cmdline") as fh:
            return fh.read().strip()
    except OSError:
        return None


def systemd_unit(executable: str) -> str:
    """A unit that runs `iolab worker` on boot and again after a crash; the broker and
    store URLs come from an environment file readable by root only (docs/fleet.md "The
    worker's unit" says why each line is there)."""
    return f"""[Unit]
Description=iolab fleet worker (runs blocks of iolab plans)
Documentation=man:iolab(1) docs/fleet.md
After=network-online.target
Wants=network-online.target
# restarted however often it fails (a lab's hosts outlive its controller's outages)
StartLimitIntervalSec=0

[Service]
Type=simple
# root: a block makes loop devices, filesystems and mounts, and formats designated devices
User=root
# IOLAB_BROKER=redis://:PASSWORD@controller:6379/0 (rediss:// for TLS)
# IOLAB_DB=postgresql+psycopg://iolab:PASSWORD@controller/iolab?sslmode=verify-full
# IOLAB_DB_WAIT_S=600  (how long to wait for PostgreSQL at start; default 120)
EnvironmentFile=/etc/iolab/worker.env
ExecStart={shlex.quote(executable)} worker --config /etc/iolab/host.toml
# SIGTERM: a warm shutdown, after the running block; the journal undoes a killed one
# (the worker undoes what a crash left, as `iolab cleanup` does, before it takes a block)
KillSignal=SIGTERM
TimeoutStopSec=infinity
# logs: the journal (journalctl -u iolab-worker); a crash or a store that stayed away
# past IOLAB_DB_WAIT_S is retried after 10 s, for ever
StandardOutput=journal
StandardError=journal
Restart=on-failure
RestartSec=10

[Install]
WantedBy=multi-user.target
"""
