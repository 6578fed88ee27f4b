"""Evidence of a stack's layers over one sample, and its path faults.

A report that says RAID5 lost 30% should also say where the I/O went: the diskstats of the
top device and of every member or path are taken by the diskstats monitor, under role names
(`diskstats.top.*`, `diskstats.member3.*`, `diskstats.path1.*`: the same across runs and
cells, where kernel names such as md127 or loop9 are not).  This module adds what only the
stack has:

* md: `stripe_cache_active` sampled every 0.2 s (`md.stripe_cache_active_max`, `_mean`),
  `md.stripe_cache_size` in force, whether a resync/recovery ran during the sample
  (`md.sync_running`: 1 when `sync_action` was not idle at either end) and its mismatch
  count; /proc/mdstat before and after goes to the sample's provenance;
* dm-multipath: the path states `dmsetup status` reports at the end (`dm.paths_active`,
  `dm.path<i>.active`, `dm.path<i>.fail_count`; with several maps their paths are numbered
  on, map 0's first, as their diskstats roles), the status lines themselves as provenance.

Path faults (`faults:` of a multipath target) are sent from a timer thread while the
workload runs; their undo (`reinstate_path`) is journaled before the workload starts.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from iolab.lab import md, multipath
from iolab.lab.journal import Journal
from iolab.lab.target import Target
from iolab.plan.model import TargetSpec

POLL_S = 0.2


def role_labels(made: Target) -> dict[str, str]:
    """Kernel name -> the name its metrics carry: a stack's top, member<i> / path<i>; null_blk
    devices nullb<i> (their kernel names carry the run and pid on 6.1)."""
    if made.stack.get("kind") == "null_blk":
        return {d.name: f"nullb{i}" for i, d in enumerate(made.devices)}
    if not made.members:
        return {}
    role = "path" if made.maps else "member"
    if len(made.devices) == 1:
        labels = {made.devices[0].name: "top"}
    else:  # several maps: top0, top1, ..; their paths numbered on (map 0's first)
        labels = {d.name: f"top{i}" for i, d in enumerate(made.devices)}
    labels.update({m.name: f"{role}{i}" for i, m in enumerate(made.members)})
    return labels


def _md_array(name: str) -> md.Array:
    return md.Array(name, "", "")


@dataclass
class StackWatch:
    """Started before the measured workload and stopped after it (also on failure)."""

    made: Target
    spec: TargetSpec
    journal: Journal
    metrics: dict[str, float] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _active: dict[str, list[int]] = field(default_factory=dict)
    _sync_start: dict[str, str] = field(default_factory=dict)

    def start(self) -> None:
        if self.made.arrays:
            self.provenance["mdstat_before"] = md.mdstat()
            for name in self.made.arrays:
                self._sync_start[name] = md.read_attr(_md_array(name), "sync_action") or ""
                self._active[name] = []
            self._spawn(self._poll_md)
        mp = self.spec.multipath
        if mp is not None and mp.faults and self.made.maps:
            paths = self.made.stack.get("path_devnos", [])
            name = self.made.maps[0]
            uuid = str(self.made.stack.get("uuid", ""))
            for number in sorted({f.path for f in mp.faults}):
                self.journal.record(
                    "dmmessage", name=name, uuid=uuid, message=f"reinstate_path {paths[number]}"
                )
            self._spawn(self._faults)

    def _spawn(self, fn: Any) -> None:
        thread = threading.Thread(target=fn, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _poll_md(self) -> None:
        while not self._stop.is_set():
            for name, seen in self._active.items():
                value = md.read_attr(_md_array(name), "stripe_cache_active")
                if value is not None and value.isdigit():
                    seen.append(int(value))
            self._stop.wait(POLL_S)

    def _faults(self) -> None:
        assert self.spec.multipath is not None
        paths = self.made.stack.get("path_devnos", [])
        name = self.made.maps[0]
        start = time.monotonic()
        done: list[str] = []
        for fault in self.spec.multipath.faults:
            if self._stop.wait(max(0.0, fault.at_s - (time.monotonic() - start))):
                break
            verb = "fail_path" if fault.action == "fail" else "reinstate_path"
            try:
                multipath.message(name, f"{verb} {paths[fault.path]}")
                done.append(f"{fault.at_s:g}s {fault.action} path{fault.path}")
            except Exception as exc:  # a thread: report, never raise
                self.warnings.append(f"path fault at {fault.at_s:g}s: {exc}")
        self.provenance["path_faults_sent"] = done

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)
        for name, seen in self._active.items():
            array = _md_array(name)
            prefix = "md." if len(self._active) == 1 else f"md.{name}."
            if seen:
                self.metrics[prefix + "stripe_cache_active_max"] = float(max(seen))
                self.metrics[prefix + "stripe_cache_active_mean"] = sum(seen) / len(seen)
            size = md.read_attr(array, "stripe_cache_size")
            if size is not None and size.isdigit():
                self.metrics[prefix + "stripe_cache_size"] = float(size)
            end = md.read_attr(array, "sync_action") or ""
            running = any(s not in ("", "idle") for s in (self._sync_start.get(name, ""), end))
            if end:
                self.metrics[prefix + "sync_running"] = 1.0 if running else 0.0
            mismatches = md.read_attr(array, "mismatch_cnt")
            if mismatches is not None and mismatches.isdigit():
                self.metrics[prefix + "mismatch_cnt"] = float(mismatches)
            self.provenance[f"{name}.sync_action"] = [self._sync_start.get(name, ""), end]
        if self.made.arrays:
            self.provenance["mdstat_after"] = md.mdstat()
        states: list[multipath.PathState] = []
        for name in self.made.maps:
            with contextlib.suppress(Exception):
                text = multipath.status_text(name)
                key = "dmsetup_status" if len(self.made.maps) == 1 else f"dmsetup_status.{name}"
                self.provenance[key] = text
                states.extend(multipath.parse_status(text))
        if states:  # paths numbered as their diskstats roles: map 0's first
            self.metrics["dm.paths_active"] = float(sum(s.active for s in states))
            for i, state in enumerate(states):
                self.metrics[f"dm.path{i}.active"] = 1.0 if state.active else 0.0
                self.metrics[f"dm.path{i}.fail_count"] = float(state.fail_count)
