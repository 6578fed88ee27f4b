"""A kernel regression found end to end, on kernels built here: from the robot's mail to the
culprit commit in the registry, on a QEMU guest that installs and kexecs each build.

Usage:  .venv/bin/python bench/kernel_regression_e2e.py [--tree planted|reverted|unbuildable]
            [--skip-ab] [--skip-bisect] [--bisect-time 75m] [--json FILE]

Steps, each timed and printed as it goes:

1. the tree (bench/kernel_tree.py, cached) and the builds of the planted commit and its
   parent (bench/kernel_build_guest.py's cache, built first when missing; one-commit builds
   are made on the way);
2. the lab: PostgreSQL and Redis of its own (tests/fleet_env.py), one guest host
   (`iolab guest up`, 3 GiB of memory, install hook `dpkg -i {artifact}`);
3. a 0-day mail in LKP's format (tests/lkp_mail.py: fsmark, fsync before close) naming the
   planted commit and its parent; `iolab regressions import`; `iolab reproduce`;
4. `iolab ab PLAN --kernel-repo TREE --kernel-build HOOK --fleet G` (the plan as reproduce
   wrote it, plus `reboot: per-switch`): the entry's answer must be "reproduced" with the
   jbd2 evidence among what moved;
5. `iolab reproduce` of the ext4 IOPS thread, its quick profile made a plan of its own (the
   arm64 cloud-volume requirement and the release variants dropped: the guest stands in for
   the reporter's machine, the bisect names the kernels; fio measures 6 s after a 1-s
   `ramp_time`, not the profile's 2 s), then `iolab bisect --kernel-repo`
   from the tree's source to the branch's tip with `--regression` of the entry: "found", the
   planted commit (`--tree reverted`: no culprit; `--tree unbuildable`: a range next to the
   unbuildable commit);
6. the registry: the entry's culprit (or range), `--format regzbot`.

Every sample's `boot.release` must carry its commit's sha (checked), and each booted sample's
`boot.switch` stamps give the split of its kernel switch, printed at the end.  The lab is
torn down whatever happens (guest, PostgreSQL, Redis).  Exit 0 when every check held.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent / "tests"
sys.path.insert(0, str(TESTS))

from kernel_build_guest import tree_info  # noqa: E402  (bench/, this script's folder)

from fleet_env import Fleet  # noqa: E402
from lkp_mail import fsmark_mail  # noqa: E402

THREAD = TESTS / "data" / "threads" / "archived" / "ext4-iops-regression.txt"
GUEST_KERNEL = "6.1.0-50-cloud-amd64"
TIMES: list[tuple[str, float]] = []
FAILED: list[str] = []


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


@contextlib.contextmanager
def step(name: str) -> Iterator[None]:
    say(f"== {name}")
    began = time.monotonic()
    try:
        yield
    finally:
        spent = time.monotonic() - began
        TIMES.append((name, spent))
        say(f"   {name}: {spent:.0f} s")


def check(ok: bool, what: str) -> None:
    say(f"   {'ok' if ok else 'FAILED'}: {what}")
    if not ok:
        FAILED.append(what)


def iolab(
    env: dict[str, str], *args: str, timeout: float = 600, show: bool = False
) -> subprocess.CompletedProcess[str]:
    """An iolab command; with `show` its progress (stderr) goes to the terminal as it runs."""
    argv = [sys.executable, "-m", "iolab", *args]
    if args[0] in ("ab", "bisect"):  # they run the kernel builds: at nice 10, as builds here
        argv = ["nice", "-n", "10", *argv]
    if not show:
        return subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    proc = subprocess.run(
        argv, env=env, stdout=subprocess.PIPE, stderr=None, text=True, timeout=timeout, check=False
    )
    return subprocess.CompletedProcess(argv, proc.returncode, proc.stdout, "")


def subject(tree: str, sha: str) -> str:
    return subprocess.run(
        ["git", "-C", tree, "log", "-1", "--format=%s", sha],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def results(env: dict[str, str], run_id: int) -> list[dict[str, Any]]:
    proc = iolab(env, "results", "--run", str(run_id), "--format", "json", timeout=300)
    if proc.returncode != 0:
        raise SystemExit(f"results --run {run_id}: {proc.stderr.strip()}")
    out: list[dict[str, Any]] = json.loads(proc.stdout)
    return out


def newest_run(env: dict[str, str]) -> int | None:
    """The store's newest run, None when the command made none (refused before it ran)."""
    from iolab.store import open_store

    with open_store(env["IOLAB_DB"]) as store:
        runs = store.runs()
    return runs[-1].id if runs else None


def entry(env: dict[str, str], rid: int) -> dict[str, Any]:
    proc = iolab(env, "regressions", "--format", "json", timeout=120)
    found = [e for e in json.loads(proc.stdout)["regressions"] if e["id"] == rid]
    return dict(found[0]) if found else {}


def check_releases(samples: list[dict[str, Any]], sha_of: dict[str, str], what: str) -> None:
    """Every sample ok and booted on a release carrying its variant's commit sha."""
    bad = []
    for s in samples:
        release = ((s.get("provenance") or {}).get("boot") or {}).get("release", "")
        sha = sha_of.get(str(s["variant"]), str(s["variant"]))
        if s["status"] != "ok" or sha[:12] not in release:
            bad.append((s["variant"], s["block"], s["status"], release))
    check(
        bool(samples) and not bad,
        f"{what}: {len(samples)} samples, each on the release of its commit {bad[:3] or ''}",
    )


SWITCHES: list[dict[str, float]] = []
STAMPS: list[dict[str, float]] = []  # each switch's own stamps (boot.switch), for the record


def collect_switches(samples: list[dict[str, Any]]) -> None:
    from datetime import datetime

    from iolab.kernels.timing import parts

    for s in samples:
        boot = (s.get("provenance") or {}).get("boot") or {}
        stamps = boot.get("switch")
        if not stamps or not s.get("started_at"):
            continue
        started = datetime.fromisoformat(str(s["started_at"])).timestamp()
        warmed = bool((s.get("provenance") or {}).get("warmups"))
        split = parts(stamps, started, warmed=warmed)
        if "from the boot command" in split and "multi_user" in split:
            # what the switch costs beyond the boot itself: the figure aimed at (<= 10 s)
            over = split["from the boot command"] - split["multi_user"]
            split["over multi-user"] = round(over, 1)
        SWITCHES.append(split)
        STAMPS.append(dict(stamps))


def print_switches() -> None:
    if not SWITCHES:
        say("no kernel switch was recorded")
        return
    say(f"kernel switch, from the request to the lab's start ({len(SWITCHES)} switches):")
    names = list(dict.fromkeys(k for s in SWITCHES for k in s))
    for name in names:
        values = [s[name] for s in SWITCHES if name in s]
        print(
            f"    {name:28s} median {statistics.median(values):6.1f} s"
            f"  (min {min(values):.1f}, max {max(values):.1f})",
            flush=True,
        )


def guest_hooks(work: Path) -> Path:
    hooks = work / "hooks.toml"
    hooks.write_text('[hooks]\ninstall = ["dpkg", "-i", "{artifact}"]\n')
    return hooks


def per_switch(text: str) -> str:
    """The bench's one addition to a reproduced plan: a boot only when the kernel changes
    (reproduce already writes one unmeasured sample after each boot: `warmups: 1`)."""
    return (
        text.rstrip("\n")
        + "\n# the bench's choice: a boot only when the kernel changes\n"
        + ("reboot: per-switch\n")
    )


def thread_quick_plan(text: str, runtime: str = "6", ramp: str = "1") -> str:
    """The thread plan's quick profile as a plan of its own, for a guest: the profile's keys
    over the plan's, the reporter's machine requirements and the release variants left out
    (the bisect names the kernels), a 128M target, a boot per switch and a warm-up per boot.

    fio runs `runtime` seconds after `ramp` unmeasured ones (`ramp_time`), not the profile's
    2 s: under TCG a 2-s sample is mostly its 16 threads' start (their first 250-500 ms ran at
    a tenth to a half of the rate after) and any stall of a quarter to one second, so one
    kernel's samples scattered by a CV of 22-30% and read as low as 0.39 of their median;
    6 s after a 1-s ramp scattered by 14-16%, none below 0.75 (docs/kernels.md)."""
    import yaml

    plan = yaml.safe_load(text)
    quick = plan.pop("profiles", {}).get("quick", {})
    for key, value in quick.items():
        if value is None:
            plan.pop(key, None)
        elif isinstance(value, dict) and isinstance(plan.get(key), dict):
            plan[key] = {**plan[key], **value}
        else:
            plan[key] = value
    plan.pop("requires", None)
    plan.pop("variants", None)
    plan.pop("baseline", None)
    plan["target"] = {**plan.get("target", {}), "size": "128M"}
    plan["reboot"] = "per-switch"
    plan["warmups"] = 1
    plan["vars"] = {**plan.get("vars", {}), "runtime": runtime}
    if ramp and float(ramp) > 0:
        plan["workload"]["fio"] += f"ramp_time={ramp}\n"
    return yaml.safe_dump(plan, sort_keys=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", choices=("planted", "reverted", "unbuildable"), default="planted")
    parser.add_argument("--skip-ab", action="store_true")
    parser.add_argument("--skip-bisect", action="store_true")
    parser.add_argument("--ab-blocks", type=int, default=10)
    # the mail's fsmark test_size: 16M is 4,096 files a sample, about 20 s under TCG (4M's
    # 1,024 files took 9 s, and samples of one kernel ranged 156-404 files/s)
    parser.add_argument("--test-size", default="16M")
    parser.add_argument("--bisect-time", default="75m")  # the bisect that found it: 63 min
    # blocks per test (the ends, each step, the verification): bench/sim_step_ends.py, at the
    # noise the guest showed, found the culprit in 83.5% of bisects with 12, 93.3% with 16
    # (3.6 min more on average) and 95.3% with 20
    parser.add_argument("--bisect-blocks", type=int, default=16)
    parser.add_argument(
        "--thread-runtime", default="6", help="the thread plan's fio runtime (s) in the bisect"
    )
    parser.add_argument(
        "--thread-ramp", default="1", help="its fio ramp_time (s): the threads' start unmeasured"
    )
    parser.add_argument("--json", type=Path)
    parser.add_argument("--logs", type=Path, help="keep the guest's console log here")
    parser.add_argument(
        "--guest-cpus",
        type=int,
        default=None,
        help="the guest host's virtual CPUs (guest up --cpus; default 2, 1 with --icount)",
    )
    parser.add_argument(
        "--icount",
        type=int,
        default=None,
        metavar="SHIFT",
        help="the guest on an instruction clock (guest up --icount SHIFT; docs/guests.md)",
    )
    args = parser.parse_args()
    if args.guest_cpus is None:
        args.guest_cpus = 1 if args.icount is not None else 2

    # SIGTERM ends the bench as Ctrl-C does: through the teardown (guest, PostgreSQL, Redis)
    def stopped(*_: object) -> None:
        FAILED.append("stopped by SIGTERM")
        sys.exit(143)

    signal.signal(signal.SIGTERM, stopped)
    began = time.monotonic()

    with step("1. the tree and its builds (cached)"):
        info = tree_info()
        tree, planted, parent = info["tree"], info["planted"], info["planted_parent"]
        from iolab.builds.kernel import KernelBuilder

        builder = KernelBuilder(
            Path(tree), Path(info["build_cache"]), (info["hook"], info["config"])
        )
        missing = [n for n in ("planted_parent", "planted") if builder.cached(info[n]) is None]
        if missing:  # a new machine: built here first (the first build is the whole kernel)
            say(f"   building {', '.join(missing)} (bench/kernel_build_guest.py, nice 10)")
            script = Path(__file__).resolve().parent / "kernel_build_guest.py"
            subprocess.run(["nice", "-n", "10", sys.executable, str(script), *missing], check=False)
        for name in ("planted_parent", "planted"):
            check(builder.cached(info[name]) is not None, f"{name} {info[name][:12]} is built")
    bad_end = {"planted": info["planted_tip"], "reverted": info["reverted_tip"],
               "unbuildable": info["unbuildable_tip"]}[args.tree]  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="iolab-e2e-"))
    name = "e2e-" + secrets.token_hex(2)
    fleet = None
    env: dict[str, str] = {}
    guest = False
    try:
        with step("2. the lab: PostgreSQL, Redis, one guest host"):
            fleet = Fleet.make(n_hosts=0)
            env = fleet.env()
            env.update(
                # the guest beats every 10 s: under TCG a `dpkg -i` starves its heartbeat thread
                IOLAB_FLEET_HEARTBEAT_S="10",
                IOLAB_FLEET_BOOT_TIMEOUT_S="600",
                IOLAB_GUEST_STATE=str(work / "guests"),
                XDG_CACHE_HOME=info["xdg_cache_home"],
            )
            for key in ("IOLAB_GUEST_STATE", "IOLAB_FLEET_HEARTBEAT_S"):  # `guest up` reads them
                os.environ[key] = env[key]
            up = iolab(
                env, "guest", "up", name, "--kernels", GUEST_KERNEL, "--broker", fleet.broker,
                "--db", fleet.db, "--class", name, "--hooks", str(guest_hooks(work)),
                "--memory", "3072",  # /dev/shm holds half: the plans' 1 GiB loop image in RAM
                "--cpus", str(args.guest_cpus),
                *(() if args.icount is None else ("--icount", str(args.icount))), timeout=900,
            )  # fmt: skip
            guest = up.returncode == 0
            check(guest, f"guest {name} up {up.stderr.strip()[-300:]}")
            if not guest:
                return 1
            deadline = time.monotonic() + 600
            from iolab.store import leases, open_store

            while time.monotonic() < deadline:
                with open_store(fleet.db) as store:
                    if any(h.name == name and h.state == "idle" for h in leases.hosts(store)):
                        break
                time.sleep(1)
            else:
                check(False, "the guest's worker registered")
                return 1

        rid = 0
        with step("3. the robot's mail: regressions import, reproduce"):
            mail = work / "robot.eml"
            mail.write_text(
                fsmark_mail(
                    parent,
                    subject(tree, parent),
                    planted,
                    subject(tree, planted),
                    test_size=args.test_size,
                )
            )
            imported = iolab(env, "regressions", "import", str(mail))
            check(imported.returncode == 0, f"import: {imported.stdout.strip().splitlines()[:1]}")
            rid = int(imported.stdout.split()[1])
            plan = work / "robot.yaml"
            done = iolab(env, "reproduce", str(mail), "-o", str(plan))
            check(done.returncode == 0, f"reproduce wrote {plan.name}")
            plan.write_text(per_switch(plan.read_text()))
            text = plan.read_text()
            check(f"commit: {planted}" in text, "the plan's variants name both commits")
            check("\nwarmups: 1\n" in text, "the plan warms up after each boot")

        if not args.skip_ab:
            with step("4. ab --kernel-repo on the guest"):
                out = work / "ab.json"
                ab = iolab(
                    env, "ab", str(plan), "--kernel-repo", tree, "--kernel-build",
                    info["kernel_build"], "--fleet", name, "--hosts", "1",
                    "--max-blocks", str(args.ab_blocks), "--one-sided", "--format", "json",
                    "-o", str(out),
                    timeout=5400, show=True,
                )  # fmt: skip
                say(f"   ab exit {ab.returncode}")
                ab_run = newest_run(env)
                check(ab_run is not None, "ab made a run")
                samples = results(env, ab_run) if ab_run is not None else []
                check_releases(samples, {"base": parent, "commit": planted}, f"ab run {ab_run}")
                collect_switches(samples)
                found = entry(env, rid)
                answers = (found.get("lab") or {}).get("answers") or []
                last = answers[-1] if answers else {}
                moved = [m["metric"] for m in last.get("moved", [])]
                check(
                    last.get("answer") == "reproduced",
                    f"regression {rid}: {last.get('answer')}; KPIs "
                    f"{[(k['metric'], k['change_pct']) for k in last.get('kpis', [])]}",
                )
                jbd2 = [m for m in moved if m.startswith("jbd2.")]
                check(bool(jbd2), f"moved: {jbd2} and {len(moved) - len(jbd2)} more")

        if not args.skip_bisect:
            with step("5. reproduce the thread; bisect --kernel-repo over the range"):
                thread_plan = work / "thread.yaml"
                done = iolab(env, "reproduce", str(THREAD), "-o", str(thread_plan))
                check(done.returncode == 0, "reproduce of the ext4 IOPS thread")
                quick = work / "thread-quick.yaml"
                drafted = thread_plan.read_text()
                quick.write_text(thread_quick_plan(drafted, args.thread_runtime, args.thread_ramp))
                report = work / "bisect.json"
                bis = iolab(
                    env, "bisect", str(quick), "--kernel-repo", tree, "--good", info["base"],
                    "--bad", bad_end, "--kernel-build", info["kernel_build"], "--cache",
                    info["bisect_cache"], "--fleet", name, "--hosts", "1", "--regression",
                    str(rid), "--max-blocks", str(args.bisect_blocks), "--max-time",
                    args.bisect_time, "--format", "json", "-o", str(report),
                    timeout=7200, show=True,
                )  # fmt: skip
                result = json.loads(report.read_text()) if report.exists() else {}
                if args.logs is not None and report.exists():  # its steps, blocks and grades
                    args.logs.mkdir(parents=True, exist_ok=True)
                    shutil.copy(report, args.logs / "bisect.json")
                what = f"{result.get('result')}: {result.get('reason')}"
                say(f"   bisect exit {bis.returncode}: {what}")
                culprit = (result.get("culprit") or {}).get("sha")
                if args.tree == "planted":
                    check(result.get("result") == "found" and culprit == planted,
                          f"found {culprit} (the planted commit is {planted})")  # fmt: skip
                elif args.tree == "reverted":
                    check(result.get("result") in ("no regression", "not known") and not culprit,
                          "the reverted tree names no culprit")  # fmt: skip
                else:
                    # the planted commit and the unbuildable one before it, nothing wider: a
                    # range from the last good commit to the tip would hold them too
                    shas = [c["sha"] for c in result.get("range") or []]
                    beside = [info["unbuildable"], info["unbuildable_planted"]]
                    check(result.get("result") == "range" and shas == beside,
                          f"the range is the unbuildable commit and the planted one: "
                          f"{[s[:12] for s in shas]}")  # fmt: skip
                run_id = result.get("run") or newest_run(env)
                if run_id is not None:
                    samples = results(env, int(run_id))
                    check_releases(samples, {}, f"bisect run {run_id}")
                    collect_switches(samples)

            with step("6. the registry"):
                found = entry(env, rid)
                say(f"   regression {rid}: culprit {found.get('culprit')}, "
                    f"range {found.get('commit_range')}")  # fmt: skip
                regz = iolab(env, "regressions", "--format", "regzbot").stdout
                say("   " + " | ".join(x for x in regz.splitlines() if "introduced" in x))
                bisects = (found.get("lab") or {}).get("bisects") or []
                last = bisects[-1] if bisects else {}
                say(f"   the lab's bisects: {[(b['outcome'], b['culprit']) for b in bisects]}")
                if args.tree == "planted":  # the culprit column held the robot's claim before
                    check(last.get("outcome") == "found" and last.get("culprit") == planted,
                          "the entry records the bisect's culprit, the planted commit")  # fmt: skip
                    check(f"#regzbot introduced: {planted}" in regz, "regzbot names it")
                else:
                    check(last.get("outcome") in ("no regression", "not known", "range")
                          and not last.get("culprit"), "the entry records no culprit")  # fmt: skip
    finally:
        with step("teardown"):
            if args.logs is not None:  # the guest's console and worker, before cycles too
                args.logs.mkdir(parents=True, exist_ok=True)
                for kept in (work / "guests").glob("*/*.log"):
                    shutil.copy(kept, args.logs / f"{kept.parent.name}.{kept.name}")
            if guest:
                down = iolab(env, "guest", "down", name, timeout=300)
                check(down.returncode == 0, f"guest {name} down")
            if fleet is not None:
                fleet.close()
                check(not fleet.leftovers(), "nothing of the lab left")
            subprocess.run(["rm", "-rf", str(work)], check=False)
        summary(args, began)  # on every way out: a SIGTERM too (the figures so far)
    return 1 if FAILED else 0


def summary(args: argparse.Namespace, began: float) -> None:
    print_switches()
    if args.icount is not None and SWITCHES:
        # the guest's clock counted instructions: its stamps are its own seconds, and the
        # clock a new kernel reads at boot is not the one the old kernel left
        say("   (the guest's instruction-clock seconds; the parts across the kexec do not hold)")
    total = time.monotonic() - began
    say("steps:")
    for what, spent in TIMES:
        print(f"    {what:60s} {spent / 60:6.1f} min", flush=True)
    print(f"    {'total':60s} {total / 60:6.1f} min", flush=True)
    if args.json:
        args.json.write_text(json.dumps(
            {"tree": args.tree, "icount": args.icount, "cpus": args.guest_cpus,
             "steps": TIMES, "total_s": total, "switches": SWITCHES,
             "stamps": STAMPS, "failed": FAILED}, indent=1))  # fmt: skip
    say("FAILED: " + "; ".join(FAILED) if FAILED else "every check held")


if __name__ == "__main__":
    sys.exit(main())
