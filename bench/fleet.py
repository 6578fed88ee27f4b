"""The fleet's costs, measured on this machine in one session (docs/fleet.md "Measured").

Uses the tests' fleet (tests/fleet_env.py): Debian's redis-server, a PostgreSQL server, and
test hosts that are network namespaces on this one machine, each running `iolab worker`.
All hosts share this machine's CPUs and memory, so "blocks per minute with N hosts" measures
the fleet's machinery on an I/O-bound, rate-limited job (fio sleeps most of its time), not
N machines' worth of disks.

    .venv/bin/python bench/fleet.py [--blocks 6] [--jobs 1000] [--runtime 1] [--raw] [--no-ab]

`--raw --runtime 5` makes each block I/O-bound: no mkfs or mount, fio rate-limited on the
loop device for 5 s a sample, so the machine's CPUs hardly matter and what the fleet adds
(publish, claim, heartbeats, storing, polling) shows in the blocks per minute.

1. per-block overhead: the same plan run here (`iolab run`) and on a 1-host fleet;
2. blocks per minute with 1, 2 and 3 hosts;
3. time to an ab verdict with 3 hosts and with 1;
4. dispatch of 1,000 tiny jobs: attempts created and published, then every message taken
   by a worker that finds its attempt not queued and measures nothing (the path a
   redelivered message takes) — broker, lease check and acknowledgement, nothing else.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fleet_env import Fleet
from iolab.model.sample import Sample
from iolab.store import leases, open_store

PLAN = """\
name: fleet-bench
target: {{size: 32M}}
filesystem: {filesystem}
workload:
  fio: |
    [w]
    filename={filename}
    size=2M
    bs=4k
    rw=randwrite
    ioengine=psync
    rate=2m
    runtime={runtime}
    time_based=1
variants:
  fast: {{fio: {{rate: {fast}}}}}
  slow: {{fio: {{rate: {slow}}}}}
repeat: {repeat}
kpis: [write.iops]
prepare: {{drop_caches: false}}
"""


LAST: dict[str, datetime] = {}  # when the last `iolab` call began and ended (wall clock)


def iolab(env: dict[str, str], *args: str) -> float:
    began = time.monotonic()
    LAST["began"] = datetime.now(UTC)
    done = subprocess.run(
        [sys.executable, "-m", "iolab", *args], env=env, capture_output=True, text=True
    )
    LAST["ended"] = datetime.now(UTC)
    if done.returncode not in (0, 10):
        raise SystemExit(f"iolab {' '.join(args)} failed: {done.stderr}")
    return time.monotonic() - began


PHASES = (
    ("start", "controller start-up (Python, the store, Celery) until block 1 is recorded"),
    ("publish", "controller: attempt row recorded until its message is with the broker"),
    ("seen", "controller: a block stored until it records the next one (poll, read)"),
    ("queued", "message with the broker until a host claims it (one waits there: ahead)"),
    ("setup", "host: claim until the first sample starts (plan check, preflight, journal)"),
    ("samples", "host: the block's samples, first start to last end"),
    ("store", "host: last sample's end until the block is stored and its attempt finished"),
    ("next", "host: its block stored until it claims its next one (from the queue)"),
    ("end", "the last block stored until the controller has exited"),
)
BETWEEN = ("store", "next", "setup")  # a host's time between one block's samples and the next


def block_spans(samples: list[Sample]) -> dict[int, list[datetime]]:
    """Each block's samples' start and end times."""
    spans: dict[int, list[datetime]] = {}
    for sample in samples:
        if sample.block is not None and sample.started_at and sample.finished_at:
            spans.setdefault(sample.block, []).extend([sample.started_at, sample.finished_at])
    return spans


def split(db: str, run_id: int) -> dict[str, float]:
    """Where a fleet run's time went, per block (median seconds), from the timestamps the
    store keeps: the attempts' (recorded, sent, claimed, ended) and the samples' (started,
    finished); `start` and `end` are per run."""
    with open_store(db) as store:
        tried = [a for a in leases.attempts(store, run_id) if a.state == "finished"]
        samples = store.samples(run_id, status=None, with_jobs=False, with_histograms=False)
    spans = block_spans(samples)
    out: dict[str, list[float]] = {name: [] for name, _ in PHASES}
    ends = sorted(a.ended_at for a in tried if a.ended_at)
    by_host: dict[str | None, list[leases.Attempt]] = {}
    for a in tried:
        first, last = min(spans[a.block]), max(spans[a.block])
        assert a.sent_at and a.claimed_at and a.ended_at
        out["publish"].append((a.sent_at - a.created_at).total_seconds())
        out["queued"].append((a.claimed_at - a.sent_at).total_seconds())
        out["setup"].append((first - a.claimed_at).total_seconds())
        out["samples"].append((last - first).total_seconds())
        out["store"].append((a.ended_at - last).total_seconds())
        before = [e for e in ends if e <= a.created_at]
        if before:  # recorded after a block ended: the controller's turn-around
            out["seen"].append((a.created_at - before[-1]).total_seconds())
        by_host.setdefault(a.host, []).append(a)
    for done in by_host.values():
        done.sort(key=lambda a: a.claimed_at or a.created_at)
        for a, b in pairwise(done):
            assert a.ended_at and b.claimed_at
            out["next"].append((b.claimed_at - a.ended_at).total_seconds())
    out["start"].append((min(a.created_at for a in tried) - LAST["began"]).total_seconds())
    out["end"].append((LAST["ended"] - ends[-1]).total_seconds())
    return {name: median(v) if v else 0.0 for name, v in out.items()}


def local_blocks(db: str) -> tuple[float, float]:
    """A local run's (the newest run of `db`) median per-block sample span, and its median
    gap between one block's last sample and the next one's first: its own cost a block."""
    with open_store(db) as store:
        run = store.runs()[-1]
        samples = store.samples(run.id, status=None, with_jobs=False, with_histograms=False)
    spans = block_spans(samples)
    ordered = [spans[b] for b in sorted(spans)]
    gaps = [(min(b) - max(a)).total_seconds() for a, b in pairwise(ordered)]
    return (
        median((max(v) - min(v)).total_seconds() for v in ordered),
        median(gaps) if gaps else 0.0,
    )


def show_split(parts: dict[str, float], blocks: int, local: tuple[float, float]) -> None:
    print("  where the time went (median s a block; start and end once a run):")
    for name, what in PHASES:
        value = parts[name]
        note = ""
        if name == "samples":
            note = f" (local run: {local[0]:.2f} s)"
        if name in ("start", "end"):
            note = f" ({value / blocks:.2f} s a block over {blocks} blocks)"
        print(f"    {name:<8}{value:7.2f}  {what}{note}")
    between = sum(parts[n] for n in BETWEEN)
    print(
        f"  a host between one block's samples and its next block's ({' + '.join(BETWEEN)}): "
        f"{between:.2f} s; a local run between blocks: {local[1]:.2f} s; "
        f"dispatch {between - local[1]:+.2f} s a block"
    )


def up(fleet: Fleet, n: int) -> None:
    for i, host in enumerate(fleet.hosts):
        if i < n:
            fleet.start_worker(host)
        else:
            fleet.kill_worker(host, 15)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with open_store(fleet.db) as store:
            now = leases.server_now(store)
            live = [
                h
                for h in leases.hosts(store, "lab")
                if h.state in ("idle", "busy")
                and h.heartbeat_at
                and (now - h.heartbeat_at).total_seconds() < 3
            ]
        if len(live) == n:
            time.sleep(2)  # the Celery consumers connected too
            return
        time.sleep(0.3)
    raise SystemExit(f"{n} workers did not come up")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--blocks", type=int, default=6)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--runtime", type=int, default=1, help="fio seconds per sample")
    parser.add_argument("--raw", action="store_true", help="fio on the device, no mkfs")
    parser.add_argument("--no-ab", action="store_true", help="skip the ab timings")
    args = parser.parse_args()
    shape = {
        "runtime": args.runtime,
        "filesystem": "none"
        if args.raw
        else "{type: ext4, mkfs_options: -m 1, mount_options: noatime}",
        "filename": "{dev}" if args.raw else "{mnt}/f",
    }
    tmp = Path(tempfile.mkdtemp(prefix="iolab-fleet-bench-"))
    plan = tmp / "plan.yaml"
    plan.write_text(PLAN.format(repeat=args.blocks, fast="4m", slow="1m", **shape))
    ab_plan = tmp / "ab.yaml"
    ab_plan.write_text(PLAN.format(repeat=2, fast="2m", slow="1900k", **shape))  # a 5% effect
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    fleet = Fleet.make(3)
    try:
        open_store(fleet.db).close()
        env = fleet.env()
        local_env = dict(env, IOLAB_DB=str(tmp / "local.db"))
        # 1. per-block overhead: local vs a 1-host fleet, interleaved twice
        up(fleet, 1)
        local, one = [], []
        for _ in range(2):
            local.append(iolab(local_env, "run", str(plan), "-q") / args.blocks)
            one.append(
                iolab(env, "run", str(plan), "--fleet", "lab", "--hosts", "1", "-q") / args.blocks
            )
        print(
            f"per block: local {min(local):.2f} s, 1-host fleet {min(one):.2f} s, "
            f"overhead {min(one) - min(local):+.2f} s ({min(one) / min(local):.2f}x)"
        )
        here = local_blocks(local_env["IOLAB_DB"])
        show_split(split(fleet.db, newest(fleet.db)), args.blocks, here)
        # 2. blocks per minute with 1, 2, 3 hosts
        rates = {}
        for n in (1, 2, 3):
            up(fleet, n)
            took = iolab(env, "run", str(plan), "--fleet", "lab", "--hosts", str(n), "-q")
            rates[n] = 60 * args.blocks / took
            print(
                f"{n} host(s): {args.blocks} blocks in {took:.1f} s = {rates[n]:.1f} blocks/min"
                f" ({rates[n] / rates[1]:.2f}x one host, {rates[n] / rates[1] / n:.2f} of N)"
            )
            parts = split(fleet.db, newest(fleet.db))
            show_split(parts, args.blocks, here)
            fixed = parts["start"] + parts["end"]
            steady = 60 * args.blocks / (took - fixed)
            print(f"  without the controller's start and end: {steady:.1f} blocks/min")
        # 3. time to an ab verdict, 3 hosts vs 1
        for n in () if args.no_ab else (3, 1):
            up(fleet, n)
            took = iolab(
                env,
                "ab",
                str(ab_plan),
                "--fleet",
                "lab",
                "--hosts",
                str(n),
                "--max-blocks",
                "60",
                "-q",
            )
            with open_store(fleet.db) as store:
                run = store.runs()[-1]
                blocks = len({s.block for s in store.samples(run.id)})
                result = run.meta.get("ab_result", {})
                used = max((k["blocks"] for k in result.get("states", [])), default=0)
            print(
                f"ab with {n} host(s): {took:.1f} s to the verdict on {used} blocks "
                f"({blocks} stored, the rest in flight at the decision; {result.get('stopped')})"
            )
        # 4. dispatch of tiny jobs
        up(fleet, 3)
        dispatch(fleet, args.jobs)
    finally:
        fleet.close()
        subprocess.run(["rm", "-rf", str(tmp)], check=False)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


def newest(db: str) -> int:
    with open_store(db) as store:
        return store.runs()[-1].id


def dispatch(fleet: Fleet, jobs: int) -> None:
    from iolab.fleet.app import TASK, class_queue, make_app
    from iolab.fleet.job import Job
    from iolab.fleet.status import queue_lengths

    app = make_app(fleet.broker, visibility_timeout_s=3600)
    workers = [h.process for h in fleet.hosts if h.process is not None]
    for process in workers:  # frozen while the jobs are published: publishing alone is timed
        process.send_signal(signal.SIGSTOP)
    with open_store(fleet.db) as store:
        run_id = store.create_run("lab", plan_text="tiny", plan_hash="0" * 64)
        began = time.monotonic()
        for n in range(1, jobs + 1):
            attempt = leases.new_attempt(store, run_id, n, host_class="lab")
            job = Job(run_id, n, 1, "tiny", "0" * 64, "tiny", 1, None)
            leases.end(store, attempt.id, "revoked", "bench: measure nothing")
            app.send_task(TASK, kwargs={"job": job.to_json()}, queue=class_queue("lab"))
            leases.mark_sent(store, attempt.id)
        sent = time.monotonic() - began
        began = time.monotonic()
        for process in workers:
            process.send_signal(signal.SIGCONT)
        while True:
            left = (queue_lengths(fleet.broker, [class_queue("lab")]) or {}).get(
                class_queue("lab"), 0
            )
            if left == 0:
                break
            time.sleep(0.1)
        drained = time.monotonic() - began
        store.delete_run(run_id)
    print(
        f"dispatch of {jobs} tiny jobs: published with their attempts in {sent:.1f} s "
        f"({jobs / sent:.0f}/s); then taken by 3 workers, each finding its attempt not "
        f"queued, in {drained:.1f} s ({jobs / drained:.0f}/s)"
    )


if __name__ == "__main__":
    main()
