"""The scatter of one kernel's samples in a TCG guest, with the TSC and with the HPET as clock.

Usage:  .venv/bin/python bench/guest_clock_noise.py [--repeat 8] [--runtime 2] [--cpus 2]

Boots the default guest image's kernel twice (QEMU TCG; docs/guests.md): once as every
guest boots (`tsc=reliable`, the TSC as clocksource) and once with `clocksource=hpet` added,
the clock such a guest used before.  Each boot runs the ext4 IOPS thread's plan (`reproduce`
of the archived thread, its quick profile as the kernel bisect bench runs it: 16 fio threads
writing one file with an fsync per write, a 128M loop image in RAM) `--repeat` times after
one unmeasured warm-up, and prints each clock's write IOPS, mean and CV (standard deviation
/ mean).  Under the HPET every clock read is an emulated device access under QEMU's global
lock.  TCG figures: compare the CVs, not the IOPS.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from kernel_regression_e2e import THREAD, thread_quick_plan  # noqa: E402

from guest_fixtures import KERNEL_A, guest_image  # noqa: E402
from iolab.guest import run  # noqa: E402

SCRIPT = """\
echo "CLOCK $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
iolab --db /root/cv.db run /run/iolab-cmd/plan.yaml >/root/run.out 2>&1 || {
  cat /root/run.out; exit 1; }
iolab --db /root/cv.db results --run 1 --json >/root/r.json
echo "RESULTS $(python3 -c 'import json; print(json.dumps([[s["status"],
  s["metrics"].get("write.iops")] for s in json.load(open("/root/r.json"))]))')"
"""


def plan_text(repeat: int, runtime: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "thread.yaml"
        subprocess.run(
            [sys.executable, "-m", "iolab", "reproduce", str(THREAD), "-o", str(out)],
            check=True,
            capture_output=True,
        )
        plan = yaml.safe_load(thread_quick_plan(out.read_text()))
    plan.pop("reboot", None)  # one boot: the run's first sample is the warm-up
    plan["repeat"] = repeat
    plan["vars"] = {**plan.get("vars", {}), "runtime": runtime}
    return yaml.safe_dump(plan, sort_keys=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=8)
    parser.add_argument("--runtime", default="2", help="fio's runtime in seconds")
    parser.add_argument("--cpus", type=int, default=2)
    args = parser.parse_args()
    plan = plan_text(args.repeat, args.runtime)
    print(f"kernel {KERNEL_A}, {args.repeat} samples after a warm-up, fio runtime "
          f"{args.runtime} s, {args.cpus} vCPUs (QEMU TCG)", flush=True)  # fmt: skip
    cvs = {}
    for name, append in (("tsc", ""), ("hpet", "clocksource=hpet")):
        result = run.run_script(
            guest_image(),
            KERNEL_A,
            textwrap.dedent(SCRIPT),
            files={"plan.yaml": plan.encode()},
            timeout_s=3600,
            memory_mib=2048,
            append=append,
            cpus=args.cpus,
        )
        out = result.boots[-1].output
        if result.exit_status != 0:
            sys.exit(f"guest run failed ({result.exit_status}):\n{out}")
        clock = next(x for x in out.splitlines() if x.startswith("CLOCK ")).split()[1]
        line = next(x for x in out.splitlines() if x.startswith("RESULTS "))
        values = [float(v) for status, v in json.loads(line[len("RESULTS ") :]) if status == "ok"]
        mean = statistics.mean(values)
        cvs[name] = statistics.stdev(values) / mean
        print(f"  {name:5s} (clocksource {clock}): write IOPS "
              f"{', '.join(f'{v:.0f}' for v in values)}", flush=True)  # fmt: skip
        print(f"        mean {mean:.0f}, CV {cvs[name]:.1%}, guest run {result.seconds:.0f} s",
              flush=True)  # fmt: skip
    print(f"CV with the HPET / CV with the TSC: {cvs['hpet'] / cvs['tsc']:.1f}")


if __name__ == "__main__":
    main()
