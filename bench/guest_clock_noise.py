"""The scatter of one kernel's samples in a TCG guest, with the TSC and with the HPET as clock.

Usage:  .venv/bin/python bench/guest_clock_noise.py [--repeat 8] [--runtime 2] [--cpus 2]
                                                    [--icount SHIFT]
        .venv/bin/python bench/guest_clock_noise.py --after-kexec [--idle 120] [--repeat 10]
                                                    [--iops-log 250] [--ramp 1]

Boots the default guest image's kernel twice (QEMU TCG; docs/guests.md): once as every
guest boots (`tsc=reliable`, the TSC as clocksource) and once with `clocksource=hpet` added,
the clock such a guest used before.  Each boot runs the ext4 IOPS thread's plan (`reproduce`
of the archived thread, its quick profile as the kernel bisect bench runs it: 16 fio threads
writing one file with an fsync per write, a 128M loop image in RAM) `--repeat` times after
one unmeasured warm-up, and prints each clock's write IOPS, mean and CV (standard deviation
/ mean).  Under the HPET every clock read is an emulated device access under QEMU's global
lock.  TCG figures: compare the CVs, not the IOPS.  `--icount SHIFT` compares the TSC boot
with a boot on QEMU's instruction clock instead (`guest run --icount SHIFT`, one virtual CPU),
where the guest's time counts the instructions it executed.

`--after-kexec` asks where a boot's slow first samples come from.  One guest boots KERNEL_B,
runs the plan `--repeat` times with no warm-up, kexecs into KERNEL_A (as a fleet host switches
kernels), optionally idles `--idle` seconds, and runs it again; it prints each boot's samples
in order, and QEMU's translation-cache figures (`info jit`: code size, flushes, invalidated
blocks) sampled every few seconds, so a slow sample can be set beside a full flush of the
translation cache.  `--iops-log MS` adds fio's IOPS log to the plan and prints each sample's
write IOPS per interval: whether a slow sample is slow throughout or only at its start;
`--ramp S` adds fio's `ramp_time`, the first S seconds of each job unmeasured.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from datetime import datetime
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from kernel_regression_e2e import THREAD, thread_quick_plan  # noqa: E402

from guest_fixtures import KERNEL_A, KERNEL_B, guest_image  # noqa: E402
from iolab.guest import run  # noqa: E402

SCRIPT = """\
echo "CLOCK $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
iolab --db /root/cv.db run /run/iolab-cmd/plan.yaml >/root/run.out 2>&1 || {
  cat /root/run.out; exit 1; }
iolab --db /root/cv.db results --run 1 --json >/root/r.json
echo "RESULTS $(python3 -c 'import json; print(json.dumps([[s["status"],
  s["metrics"].get("write.iops")] for s in json.load(open("/root/r.json"))]))')"
"""


KEXEC_SCRIPT = """\
set -u
boot=1; [ -e /root/boot1.done ] && boot=2
if [ $boot = 2 ]; then sleep @IDLE@; fi
iolab --db /root/s$boot.db run --quiet /run/iolab-cmd/plan.yaml >/root/run.out 2>&1 || {
  cat /root/run.out; exit 1; }
iolab --db /root/s$boot.db results --run 1 --json >/root/r.json
echo "BOOT$boot $(uname -r) $(python3 -c 'import json; print(json.dumps([[s["started_at"],
  s["metrics"].get("write.iops")] for s in json.load(open("/root/r.json"))]))')"
if [ -d /root/iolog ]; then
  echo "IOLOG$boot $(python3 /run/iolab-cmd/iolog.py /root/iolog/s_iops.log)"
  mv /root/iolog /root/iolog$boot; mkdir /root/iolog
fi
if [ $boot = 1 ]; then
  touch /root/boot1.done "$IOLAB_STAY"
  kexec -l /boot/vmlinuz-@K@ --initrd=/boot/initrd.img-@K@ --reuse-cmdline
  systemctl kexec
fi
"""


IOLOG = """\
import json, sys
# fio's merged IOPS log (per_job_logs=0): each job's rows in turn, each job's time from its
# own start; a sample's jobs follow one another, so time going back starts the next job.
jobs, last = [], None
for line in open(sys.argv[1]):
    t, v = (int(x) for x in line.split(",")[:2])
    if last is None or t < last:
        jobs.append([])
    jobs[-1].append(v)
    last = t
n = int(sys.argv[2]) if len(sys.argv) > 2 else 16
samples = [jobs[i : i + n] for i in range(0, len(jobs), n)]
print(json.dumps([[sum(j[k] for j in s if k < len(j)) for k in range(max(map(len, s)))]
                  for s in samples]))
"""


def plan_text(repeat: int, runtime: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "thread.yaml"
        subprocess.run(
            [sys.executable, "-m", "iolab", "reproduce", str(THREAD), "-o", str(out)],
            check=True,
            capture_output=True,
        )
        # no ramp_time unless --ramp asks (the question is what a short sample measures)
        plan = yaml.safe_load(thread_quick_plan(out.read_text(), runtime, ramp=""))
    plan.pop("reboot", None)  # one boot: the run's first sample is the warm-up
    plan["repeat"] = repeat
    return yaml.safe_dump(plan, sort_keys=False)


class JitWatch:
    """QEMU's `info jit` every few seconds, through a monitor socket the guest's QEMU gets."""

    FIELDS = ("gen code size", "TB count", "TB flush count", "TB invalidate count")

    def __init__(self, sock: Path) -> None:
        self.sock = sock
        self.rows: list[tuple[float, dict[str, str]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> JitWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _poll(self) -> None:
        while not self._stop.wait(3.0):
            if not self.sock.exists():
                continue
            try:
                out = subprocess.run(
                    ["socat", "-", f"UNIX-CONNECT:{self.sock}"],
                    input="info jit\n", capture_output=True, text=True, timeout=5,
                ).stdout  # fmt: skip
            except subprocess.TimeoutExpired:
                continue
            row = {}
            for line in out.splitlines():
                for field in self.FIELDS:
                    if line.startswith(field):
                        row[field] = line[len(field) :].split()[0]
            if row:
                self.rows.append((time.time(), row))

    def code_size_at(self, when: float) -> int | None:
        """The translated code's size at the last poll before `when` (bytes)."""
        before = [row for t, row in self.rows if t <= when and "gen code size" in row]
        return int(before[-1]["gen code size"].split("/")[0]) if before else None

    def flushes(self) -> list[float]:
        """When the translation cache was flushed whole (between two polls: the later one)."""
        out, last = [], None
        for when, row in self.rows:
            count = row.get("TB flush count")
            if last is not None and count != last:
                out.append(when)
            last = count
        return out


def after_kexec(args: argparse.Namespace) -> None:
    """One guest: samples on a fresh boot, a kexec, (an idle wait,) samples again."""
    plan = yaml.safe_load(plan_text(args.repeat, args.runtime))
    plan["warmups"] = 0  # every sample measured: the first ones are the question
    script = (
        textwrap.dedent(KEXEC_SCRIPT).replace("@K@", KERNEL_A).replace("@IDLE@", str(args.idle))
    )
    files = {}
    if args.ramp:
        plan["workload"]["fio"] += f"ramp_time={args.ramp}\n"
    if args.iops_log:
        # each sample's write IOPS per interval: a slow start or a slow whole sample
        plan["workload"]["fio"] += (
            f"write_iops_log=/root/iolog/s\nlog_avg_msec={args.iops_log}\nper_job_logs=0\n"
        )
        plan["allow_paths"] = ["/root/iolog"]
        files["iolog.py"] = IOLOG.encode()
        script = "mkdir -p /root/iolog\n" + script
    print(f"{KERNEL_B}, then kexec into {KERNEL_A} and {args.idle} s idle; "
          f"{args.repeat} samples in each boot, no warm-up, {args.cpus} vCPUs (QEMU TCG)",
          flush=True)  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        sock = Path(tmp) / "monitor.sock"
        with JitWatch(sock) as jit:
            result = run.run_script(
                guest_image(),
                KERNEL_B,
                script,
                files={"plan.yaml": yaml.safe_dump(plan).encode(), **files},
                timeout_s=3600,
                memory_mib=2048,
                cpus=args.cpus,
                qemu_args=("-monitor", f"unix:{sock},server,nowait"),
            )
    if result.exit_status != 0:
        sys.exit(f"guest run failed ({result.exit_status}):\n{result.output}")
    flushes = jit.flushes()
    intervals = {
        line.split(" ", 1)[0][len("IOLOG") :]: json.loads(line.split(" ", 1)[1])
        for line in result.output.splitlines()
        if line.startswith("IOLOG")
    }
    for line in result.output.splitlines():
        if not line.startswith("BOOT"):
            continue
        name, release, data = line.split(" ", 2)
        samples = json.loads(data)
        shown = ["failed" if v is None else f"{v:.0f}" for _, v in samples]
        print(f"  {name} {release}: write IOPS in order {', '.join(shown)}", flush=True)
        for n, (started, _) in enumerate(samples, start=1):
            start = datetime.fromisoformat(started).timestamp()
            end = (
                datetime.fromisoformat(samples[n][0]).timestamp()
                if n < len(samples)
                else start + 30
            )
            size = jit.code_size_at(start)
            flushed = any(start <= f < end for f in flushes)
            print(f"    sample {n}: {shown[n - 1]} IOPS, translation cache "
                  f"{'?' if size is None else f'{size / 2**20:.0f} MiB'} at its start"
                  f"{', flushed whole during it' if flushed else ''}")  # fmt: skip
            per = intervals.get(name[len("BOOT") :])
            if per and n <= len(per):
                print(f"      per {args.iops_log} ms: {', '.join(str(v) for v in per[n - 1])}")
    if jit.rows:
        last = jit.rows[-1][1]
        print("  QEMU at the end: " + ", ".join(f"{k} {v}" for k, v in last.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=8)
    parser.add_argument("--runtime", default="2", help="fio's runtime in seconds")
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument(
        "--icount", type=int, default=None, metavar="SHIFT",
        help="compare with a guest on the instruction clock (one vCPU) instead of the HPET",
    )  # fmt: skip
    parser.add_argument("--after-kexec", action="store_true")
    parser.add_argument("--idle", type=int, default=0, help="seconds after the kexec")
    parser.add_argument(
        "--ramp", default="", help="with --after-kexec: fio's ramp_time (seconds not measured)"
    )
    parser.add_argument(
        "--iops-log", type=int, default=0, metavar="MS",
        help="with --after-kexec: each sample's write IOPS per MS-millisecond interval",
    )  # fmt: skip
    args = parser.parse_args()
    if args.after_kexec:
        after_kexec(args)
        return
    plan = plan_text(args.repeat, args.runtime)
    print(f"kernel {KERNEL_A}, {args.repeat} samples after a warm-up, fio runtime "
          f"{args.runtime} s, {args.cpus} vCPUs (QEMU TCG)", flush=True)  # fmt: skip
    cvs = {}
    other = (
        ("hpet", "clocksource=hpet", args.cpus, None)
        if args.icount is None
        else ("icount", "", 1, args.icount)
    )
    for name, append, cpus, shift in (("tsc", "", args.cpus, None), other):
        result = run.run_script(
            guest_image(),
            KERNEL_A,
            textwrap.dedent(SCRIPT),
            files={"plan.yaml": plan.encode()},
            timeout_s=3600,
            memory_mib=2048,
            append=append,
            cpus=cpus,
            icount_shift=shift,
        )
        out = result.boots[-1].output
        if result.exit_status != 0:
            sys.exit(f"guest run failed ({result.exit_status}):\n{out}")
        clock = next(x for x in out.splitlines() if x.startswith("CLOCK ")).split()[1]
        line = next(x for x in out.splitlines() if x.startswith("RESULTS "))
        values = [float(v) for status, v in json.loads(line[len("RESULTS ") :]) if status == "ok"]
        mean = statistics.mean(values)
        cvs[name] = statistics.stdev(values) / mean
        print(f"  {name:6s} (clocksource {clock}, {cpus} vCPU): write IOPS "
              f"{', '.join(f'{v:.0f}' for v in values)}", flush=True)  # fmt: skip
        print(f"        mean {mean:.0f}, CV {cvs[name]:.1%}, guest run {result.seconds:.0f} s",
              flush=True)  # fmt: skip
    print(f"CV with the {other[0]} / CV with the TSC: {cvs[other[0]] / cvs['tsc']:.2f}")


if __name__ == "__main__":
    main()
