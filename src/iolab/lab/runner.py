"""The runner: a plan's cases in randomized complete blocks, one prepared sample at a time.

Each block runs every case once, in an order drawn from `Random(f"{seed}:{block}")` — so a
resumed run (same seed) sees the same orders and skips exactly the samples already stored.
Every sample is prepared the same way (fresh filesystem when the plan says so, knobs set,
fstrim, fill, caches dropped, warm-up), measured with its monitors, stored at once, and its
changes to the machine undone before the next one starts; each finished sample goes to the
`SampleSink` the session is given (the lab does not know the store).

`LabSession` is driven block by block by `iolab.runs.plan_run` (`iolab run`) and
`iolab.ab` (`iolab ab`), both inside `iolab.runs.lifecycle`.  Interrupts (Ctrl-C, SIGTERM,
SIGHUP) raise KeyboardInterrupt under `interrupts_raise`; the machine is restored on the
way out whatever happens, from the journal.
"""

from __future__ import annotations

import contextlib
import logging
import random
import re
import signal
import socket
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

from iolab.errors import IolabError, LabError, PlanError, RefusedError
from iolab.lab import (
    commands,
    devargs,
    evidence,
    filesystem,
    kmsg,
    knobs,
    provenance,
    stack,
    target,
    workload,
)
from iolab.lab.journal import Journal
from iolab.model.sample import Sample, cell_key
from iolab.model.sample import case_key as model_case_key
from iolab.monitors.base import Monitor, MonitorContext, Reading
from iolab.plan.model import Case, FilesystemSpec, Plan, TargetSpec, WorkloadSpec
from iolab.plan.placeholders import render_workload, uses_commit

logger = logging.getLogger("iolab.lab")

WORK_ROOT = Path("/run/iolab/work")
# kernel log lines worth quoting in a failed sample's reason
_TROUBLE = re.compile(
    r"error|fail|abort|corrupt|invalid|unknown|refus|warn|readonly|read-only", re.I
)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP: handled like Ctrl-C (restore the machine, keep finished samples)."""


@contextlib.contextmanager
def interrupts_raise() -> Iterator[None]:
    """SIGTERM/SIGHUP raise Terminated in the main thread for the duration."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise Terminated(signal.Signals(signum).name)

    old = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, previous in old.items():
            signal.signal(sig, previous)


def shuffled_block_order(seed: int, block: int, n_cases: int) -> list[int]:
    """Case indexes of one block in its own random order, independent of every other block
    (a function of seed and block only).  Kernel variants use `kernels.order.paired_block_order`
    instead, where a block is the reverse of its partner so that boots balance."""
    order = list(range(n_cases))
    random.Random(f"{seed}:{block}").shuffle(order)
    return order


def case_key(case: Case) -> str:
    """The key the store reports in done_keys for samples of `case`."""
    return model_case_key(cell_key(case.cell), case.variant)


class SampleSink(Protocol):
    """Where finished samples go (the store, for a run): the lab never writes the store."""

    def add_sample(self, sample: Sample) -> int: ...


class Reporter(Protocol):
    """What the runner tells whoever shows progress."""

    def started(self, total: int, done: int) -> None: ...

    def sample_started(self, case: Case, block: int, position: int) -> None: ...

    def sample_done(self, sample: Sample, case: Case) -> None: ...

    def warning(self, message: str) -> None: ...


class SilentReporter:
    def started(self, total: int, done: int) -> None:
        pass

    def sample_started(self, case: Case, block: int, position: int) -> None:
        pass

    def sample_done(self, sample: Sample, case: Case) -> None:
        pass

    def warning(self, message: str) -> None:
        pass


@dataclass
class _Prepared:
    """A sample's machine once prepared: what the measurement and its record need."""

    devices: list[target.Device]
    workdir: Path
    mounts: list[filesystem.Mounted]
    warnings: list[str] = field(default_factory=list)
    made: target.Target | None = None  # the target (a stack's members, arrays, maps)
    evidence: dict[str, Any] = field(default_factory=dict)  # a stack's watch, for provenance

    @property
    def names(self) -> list[str]:
        return [d.name for d in self.devices]

    def render(self, spec: WorkloadSpec) -> WorkloadSpec:
        """The workload with its placeholders ({mnt}, {dev}, {workdir}) filled in."""
        mounts = [str(m.mountpoint) for m in self.mounts]
        own = [d.path for d in self.devices]
        try:
            rendered = render_workload(spec, mounts, own, str(self.workdir))
        except KeyError as exc:
            raise PlanError(f"placeholder {{{exc.args[0]}}} has no value here") from None
        check_workload_devices(rendered, own, self.workdir)  # after rendering: real paths
        return rendered


@dataclass
class _TargetState:
    target: target.Target
    filesystem: FilesystemSpec | None = None  # what is on it now (None: unknown / raw)


@dataclass
class LabSession:
    """A plan's machine for one process: targets, journal, and the sample procedure."""

    plan: Plan
    sink: SampleSink
    run_id: int
    seed: int
    destroy_data: bool = False
    reporter: Reporter = field(default_factory=SilentReporter)
    journal: Journal | None = None
    host: str | None = None  # the name its samples carry (a fleet host's); default hostname
    failures: int = 0
    _targets: dict[TargetSpec, _TargetState] = field(default_factory=dict)
    _warned: set[str] = field(default_factory=set)
    # the plan's warm-ups already ran in this boot (a kernel plan's earlier block on this
    # host): they are for a fresh boot, not for every process a boot runs
    warm_boot: bool = False
    _warmed: bool = False  # the session has begun its first sample (after any warm-ups)

    # -- lifetime ---------------------------------------------------------------------------

    def __enter__(self) -> LabSession:
        self.check_targets()
        self.journal = Journal.open(run_id=self.run_id)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Undo every change (also after errors and interrupts); LabError if one stays."""
        if self.journal is None:
            return
        journal, self.journal = self.journal, None
        journal.close()
        if journal.errors:
            raise LabError(
                f"could not restore everything ({journal.errors[0]}); "
                f"`iolab cleanup` retries from {journal.path}"
            )

    def check_targets(self) -> None:
        preflight(self.plan, destroy_data=self.destroy_data)

    def _journal(self) -> Journal:
        if self.journal is None:
            raise RuntimeError("LabSession used outside its `with` block")
        return self.journal

    def _target(self, spec: TargetSpec) -> _TargetState:
        state = self._targets.get(spec)
        if state is None:
            first = sum(
                len(s.target.devices) + len(s.target.members) for s in self._targets.values()
            )
            if spec.kind == "loop":
                made = target.create_loop_images(
                    self._journal(),
                    self.run_id,
                    spec.count,
                    spec.size_bytes,
                    spec.backing,
                    Path(spec.directory) if spec.directory else None,
                    first=first,
                )
            elif spec.kind in ("md", "multipath", "null_blk"):
                made = stack.build(
                    self._journal(), spec, self.run_id, first, destroy_data=self.destroy_data
                )
            else:
                made = target.designated(list(spec.devices), destroy_data=self.destroy_data)
            state = self._targets[spec] = _TargetState(made)
        return state

    def _warn_once(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            self.reporter.warning(message)

    # -- blocks -----------------------------------------------------------------------------

    def run_block(
        self, block: int, done: set[tuple[str, int]] | None = None, cases: Sequence[Case] = ()
    ) -> list[Sample]:
        """Run block `block`: every case (or `cases`) once in the block's random order,
        skipping (case_key, block) pairs in `done`; each sample is stored when it ends."""
        chosen = list(cases) or list(self.plan.cases)
        out = []
        for position, index in enumerate(
            shuffled_block_order(self.seed, block, len(chosen)), start=1
        ):
            case = chosen[index]
            if done and (case_key(case), block) in done:
                continue
            sample = self.run_sample(case, block, position)
            out.append(sample)
            if sample.status != "ok" and self.plan.on_failure == "stop":
                raise SampleFailed(sample)
        return out

    # -- one sample -------------------------------------------------------------------------

    def run_sample(self, case: Case, block: int, position: int) -> Sample:
        """Prepare, measure, restore and store one sample of `case`."""
        self.reporter.sample_started(case, block, position)
        sample = Sample(
            run_id=self.run_id,
            variant=case.variant,
            cell=dict(case.cell),
            block=block,
            position=position,
            started_at=datetime.now(UTC),
            host=self.host or socket.gethostname(),
        )
        self._target(case.target)  # made once per run, outside the sample's undo scope
        warmed = not self._warmed and not self.warm_boot and self.plan.warmups > 0
        self._warmed = True
        if warmed:
            self._warm_up(case, sample)
            sample.started_at = datetime.now(UTC)
        self._undone(case, sample)
        if warmed:  # what came before it in this session, for whoever reads its provenance
            sample.provenance["warmups"] = self.plan.warmups
        sample.finished_at = datetime.now(UTC)
        if sample.status != "ok":
            self.failures += 1
        else:
            self._check_kpis(sample)
        sample.id = self.sink.add_sample(sample)
        self.reporter.sample_done(sample, case)
        return sample

    def _undone(self, case: Case, sample: Sample) -> None:
        """Measure `case` into `sample` inside an undo scope of the journal: a failure is the
        sample's status; a change the journal could not undo is the session's end."""
        journal = self._journal()
        try:
            with journal.scope(), kmsg.KernelLog() as log:
                try:
                    self._measure(case, sample, log)
                except RefusedError:
                    raise
                except IolabError as exc:
                    sample.status, sample.reason = "failed", exc.message
                    sample.metrics, sample.histograms = {}, {}
        finally:
            if journal.errors:
                errors = list(journal.errors)
                journal.errors.clear()
                raise LabError(f"could not restore the machine after a sample: {errors[0]}")

    def _warm_up(self, case: Case, first: Sample) -> None:
        """The plan's `warmups`: unmeasured samples of the session's first case before its
        first measured one, each prepared, run and undone as a sample is, none stored.  The
        first sample on a fresh boot and a fresh target runs slow and scattered (in a TCG
        guest, 12-38% below the rest of its boot); a block whose sample pays for that
        measures the warm-up, not the kernel."""
        for n in range(1, self.plan.warmups + 1):
            scratch = Sample(
                run_id=first.run_id,
                variant=first.variant,
                cell=dict(first.cell),
                block=first.block,
                position=first.position,
                started_at=datetime.now(UTC),
                host=first.host,
            )
            self._undone(case, scratch)
            what = scratch.reason if scratch.status != "ok" else "done"
            logger.info("warm-up %d/%d of %s: %s", n, self.plan.warmups, case.key, what)

    def _check_kpis(self, sample: Sample) -> None:
        """Say once when a KPI is not among a sample's metrics, naming the near misses — e.g.
        a job file whose stonewalled groups all write has group0.write.iops, not write.iops."""
        for kpi in self.plan.kpis:
            if kpi.metric in sample.metrics:
                continue
            near = sorted(n for n in sample.metrics if n.endswith("." + kpi.metric))
            hint = f"; it has {', '.join(near)}" if near else ""
            self._warn_once(f"KPI {kpi.metric} is not among the workload's metrics{hint}")

    def _measure(self, case: Case, sample: Sample, log: kmsg.KernelLog) -> None:
        """One sample's three steps, each undone by the journal scope around it."""
        prepared = self._prepare(case)
        sample.provenance = self._provenance(case, prepared)
        measured, readings = self._run_workload(case, prepared)
        self._collect(case, sample, prepared, measured, readings, log)

    def _prepare(self, case: Case) -> _Prepared:
        """Work directory, filesystem (fresh when the plan says so) mounted with the plan's
        options, knobs, fstrim, fill, dropped caches, warm-up and settling time."""
        journal = self._journal()
        state = self._target(case.target)
        devices = state.target.devices
        workdir = Path(tempfile.mkdtemp(prefix="iolab-", dir=_work_root()))
        journal.record("rmtree", path=str(workdir))
        mounts: list[filesystem.Mounted] = []
        fs = case.filesystem
        own = [d.path for d in devices]
        check_case_options(case, own)  # again: a device may have appeared since preflight
        if fs is not None:
            if case.prepare.mkfs == "per-sample" or state.filesystem != fs:
                state.filesystem = None
                for device in devices:  # one filesystem per device, mounted at {mntN}
                    filesystem.mkfs(fs.type, [device.path], list(fs.mkfs_options))
                state.filesystem = fs
            for n, dev in enumerate(devices):
                point = filesystem.mountpoint_for(self.run_id, n)
                mounts.append(filesystem.mount(journal, dev.path, point, fs.type, fs.mount_options))
        else:
            state.filesystem = None  # a raw workload overwrites whatever was there
        prepared = _Prepared(devices, workdir, mounts, made=state.target)
        knobs.apply(journal, dict(case.sysctls), dict(case.queue), prepared.names)
        members = state.target.member_names or prepared.names  # jbod: the devices themselves
        knobs.apply_queue(journal, dict(case.member_queue), members)
        knobs.apply_md(journal, dict(case.md), state.target.arrays)
        prep = case.prepare
        if prep.fstrim:
            for m in mounts:
                why = filesystem.fstrim(m.mountpoint)
                if why:
                    prepared.warnings.append(f"fstrim {m.mountpoint}: {why}")
        for step, spec in (("fill", prep.fill), ("warm-up", prep.warmup)):
            if spec is None:
                continue
            if step == "warm-up" and prep.drop_caches:
                filesystem.drop_caches()
            run = workload.execute(
                journal,
                prepared.render(spec),
                workdir,
                name=step,
                timeout_s=case.timeout_s,
                cpus=case.cpus,
                measured=False,
            )
            if not run.ok:
                raise LabError(f"{step} step failed: {run.failure}")
        if prep.drop_caches and prep.warmup is None:
            filesystem.drop_caches()
        if prep.settle_s > 0:
            time.sleep(prep.settle_s)
        return prepared

    def _provenance(self, case: Case, prepared: _Prepared) -> dict[str, Any]:
        fs = case.filesystem
        return provenance.sample(
            devices=[(d.name, d.image) for d in prepared.devices],
            fstype=fs.type if fs else None,
            mkfs_options=(
                tuple(filesystem.effective_mkfs_options(fs.type, list(fs.mkfs_options)))
                if fs
                else ()
            ),
            mount_options_requested=fs.mount_options if fs else (),
            mount_options_shown=[m.options for m in prepared.mounts],
            sysctls=dict(case.sysctls),
            queue=dict(case.queue),
            plan_sha256=self.plan.sha256,
            plan_path=self.plan.path,
            profile=self.plan.profile,
            seed=self.seed,
            cpus=case.cpus,
            extra={
                "case": case.key,
                "vars": dict(case.vars),
                **(
                    {"stack": stacked}
                    if (stacked := self._stack_provenance(case, prepared))
                    else {}
                ),
            },
        )

    def _stack_provenance(self, case: Case, prepared: _Prepared) -> dict[str, Any] | None:
        """How a stack was built and its settings in force (md attributes, member queues)."""
        made = prepared.made
        if made is None or not made.stack:
            return None
        members = made.member_names
        out: dict[str, Any] = dict(made.stack)
        if members:  # the members' queues in force, set by the plan or not (no sysctls)
            shown = knobs.in_force({}, dict(case.member_queue), members)
            out["member_queue"] = {k: v for k, v in shown.items() if k.startswith(tuple(members))}
        if made.arrays:
            out["md_in_force"] = knobs.md_in_force(made.arrays)
        return out

    def _run_workload(
        self, case: Case, prepared: _Prepared
    ) -> tuple[workload.Execution, list[tuple[str, Reading]]]:
        """The measured workload with the case's monitors (and a stack's watch) around it."""
        made = prepared.made
        ctx = MonitorContext(
            devices=prepared.names,
            mountpoint=prepared.mounts[0].mountpoint if prepared.mounts else None,
            fstype=case.filesystem.type if case.filesystem else None,
            journal=self._journal(),
            workdir=prepared.workdir,
            members=made.member_names if made else [],
            labels=evidence.role_labels(made) if made else {},
        )
        watch = None
        if made is not None and (made.arrays or made.maps):
            watch = evidence.StackWatch(made, case.target, self._journal())
            watch.start()
        monitors = self._start_monitors(case, ctx, prepared.warnings)
        try:
            measured = workload.execute(
                self._journal(),
                prepared.render(case.workload),
                prepared.workdir,
                timeout_s=case.timeout_s,
                cpus=case.cpus,
            )
        finally:
            readings = self._stop_monitors(monitors, ctx, prepared.warnings)
            if watch is not None:
                watch.stop()
                for layer in ("md", "dm"):  # metric names md.* and dm.* as they are
                    ours = {k: v for k, v in watch.metrics.items() if k.startswith(layer + ".")}
                    if ours:
                        readings.append((layer, Reading(metrics=ours)))
                prepared.warnings.extend(watch.warnings)
                prepared.evidence = watch.provenance
        return measured, readings

    def _collect(
        self,
        case: Case,
        sample: Sample,
        prepared: _Prepared,
        measured: workload.Execution,
        readings: list[tuple[str, Reading]],
        log: kmsg.KernelLog,
    ) -> None:
        """The workload's result and the monitors' readings into the sample, or LabError with
        the reason (and the kernel's last complaint about our devices)."""
        if prepared.warnings:
            sample.provenance["warnings"] = prepared.warnings
        if prepared.evidence:
            sample.provenance["stack_evidence"] = prepared.evidence
        if not measured.ok or measured.result is None:
            reason = measured.failure or "no result"
            kernel = [
                line
                for line in log.new_lines()
                if any(n in line for n in prepared.names) and _TROUBLE.search(line)
            ]
            if kernel:
                reason += f" (kernel: {kernel[-1]})"
            raise LabError(reason)
        result = measured.result
        sample.tool, sample.tool_version, sample.format = (
            result.tool,
            result.tool_version,
            result.format,
        )
        sample.source = f"run {self.run_id} block {sample.block} {case.key}"
        sample.metrics = dict(result.metrics)
        sample.metrics["elapsed_s"] = measured.elapsed_s
        sample.metrics["proc.user_s"] = measured.user_s
        sample.metrics["proc.sys_s"] = measured.sys_s
        sample.histograms = dict(result.histograms)
        sample.job_metrics = {job.name: dict(job.metrics) for job in result.jobs}
        sample.job_histograms = {
            job.name: dict(job.histograms) for job in result.jobs if job.histograms
        }
        for name, reading in readings:
            for key, value in reading.metrics.items():
                sample.metrics[_prefixed(name, key)] = value
            for key, hist in reading.histograms.items():
                sample.histograms[_prefixed(name, key)] = hist

    def _start_monitors(
        self, case: Case, ctx: MonitorContext, warnings: list[str]
    ) -> list[Monitor]:
        if not case.monitors:
            return []
        try:
            from iolab.monitors import registry
        except ImportError:
            self._warn_once("monitors are not available in this build; running without them")
            return []
        started: list[Monitor] = []
        for monitor in registry.create(list(case.monitors)):
            why = monitor.unavailable(ctx)
            if why:
                self._warn_once(f"monitor {monitor.name}: {why}")
                warnings.append(f"monitor {monitor.name}: {why}")
                continue
            try:
                monitor.start(ctx)
            except IolabError as exc:
                warnings.append(f"monitor {monitor.name}: {exc.message}")
                self._warn_once(f"monitor {monitor.name}: {exc.message}")
                continue
            started.append(monitor)
        return started

    def _stop_monitors(
        self, monitors: list[Monitor], ctx: MonitorContext, warnings: list[str]
    ) -> list[tuple[str, Reading]]:
        readings = []
        for monitor in reversed(monitors):
            try:
                reading = monitor.stop(ctx)
            except IolabError as exc:
                warnings.append(f"monitor {monitor.name}: {exc.message}")
                continue
            warnings.extend(f"monitor {monitor.name}: {w}" for w in reading.warnings)
            readings.append((monitor.name, reading))
        return readings


def _prefixed(monitor: str, key: str) -> str:
    return key if key.startswith(f"{monitor}.") else f"{monitor}.{key}"


def _work_root() -> Path:
    WORK_ROOT.mkdir(parents=True, exist_ok=True)
    return WORK_ROOT


class SampleFailed(LabError):
    """A sample failed and the plan says `on_failure: stop`."""

    def __init__(self, sample: Sample) -> None:
        super().__init__(
            f"sample failed (block {sample.block}): {sample.reason}; the plan says stop"
        )
        self.sample = sample


# ------------------------------------------------------------------------------- checks


def check_case_options(case: Case, own: Sequence[str]) -> None:
    """RefusedError when mkfs or mount options name a block device other than `own`."""
    fs = case.filesystem
    if fs is not None:
        devargs.check_words(fs.mkfs_options, own, what="mkfs")
        devargs.check_words(fs.mount_options, own, what="mount")


def check_workload_devices(spec: WorkloadSpec, own: Sequence[str], cwd: Path) -> None:
    """RefusedError when a workload names a block device other than `own` (its {devN})."""
    words = devargs.fio_words(spec.fio_text) if spec.fio_text else list(spec.argv[1:])
    devargs.check_words(words, own, what=f"{spec.kind} workload", cwd=cwd)


def preflight(plan: Plan, *, destroy_data: bool = False) -> None:
    """Refuse before any change (and before a run is created): designated devices that fail
    the safety rules, options that name other block devices, tools that are missing, loop
    images that would not fit."""
    specs = {case.target for case in plan.cases}
    for spec in sorted(specs, key=lambda sp: sp.kind):
        stack.check_support(spec)  # md / dm-multipath / null_blk: the kernel has them?
    for spec in specs:
        if spec.kind == "device" or (spec.kind == "md" and spec.devices):
            target.designated(list(spec.devices), destroy_data=destroy_data)
    for case in plan.cases:
        own = list(case.target.devices)  # loop targets: none of theirs exists yet
        check_case_options(case, own)
        for step in (case.workload, case.prepare.fill, case.prepare.warmup):
            if step is not None:
                check_workload_devices(step, own, WORK_ROOT)
    target.check_space(plan_loop_needs(plan))
    tools = {"losetup"} if any(c.target.kind == "loop" for c in plan.cases) else set()
    for spec in specs:
        tools |= stack.tools(spec)
    for case in plan.cases:
        if case.filesystem is not None:
            tools.add(filesystem.MKFS[case.filesystem.type][0])
        for step in (case.workload, case.prepare.fill, case.prepare.warmup):
            if step is not None:
                tools.add("fio" if step.kind == "fio" else (step.argv or ("",))[0])
        if case.cpus:
            tools.add("taskset")
    # a program inside the commit's tree ({src}/...) exists only once `iolab bisect` has
    # built that commit; the bisect preflights its plan again, bound to the commit
    for tool in sorted(t for t in tools if t and not uses_commit(t)):
        commands.require(tool)
    names = sorted({name for case in plan.cases for name in case.monitors})
    if names:
        from iolab.monitors import registry

        registry.create(names)  # an unknown monitor name is refused before the run starts


def plan_loop_needs(plan: Plan) -> list[tuple[TargetSpec, int]]:
    """(loop target, bytes its images take at most) for each distinct loop target."""
    out = []
    for spec in {case.target for case in plan.cases}:
        if spec.kind == "loop":
            out.append((spec, spec.count * spec.size_bytes))
        elif spec.kind == "md" and not spec.devices:
            out.append((spec, spec.members * spec.size_bytes))  # one image per member
        elif spec.kind == "multipath":
            out.append((spec, spec.count * spec.size_bytes))  # an image a map, N paths each
    return out
