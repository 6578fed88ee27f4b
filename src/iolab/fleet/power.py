"""The controller's own config (fleet.toml): the commands it may run for a host.

The controller runs one kind of command for a host: its out-of-band power cycle (IPMI, a
PDU, `virsh reset`), when the host went silent or did not come back from a boot.  That
command comes from this file on the controller's machine, never from the store and never
from a host: anyone who can write the store, or who runs a worker, could otherwise make the
controller run a command of their choosing.  A host's registration carries facts only.

    # /etc/iolab/fleet.toml (or the file $IOLAB_FLEET_CONFIG names)
    [hosts.ssd-01]
    power_cycle = ["ipmitool", "-H", "bmc-01", "-f", "/etc/iolab/ipmi.pass", "chassis",
                   "power", "cycle"]

A QEMU guest that `iolab guest up` started on the controller's machine needs no entry: its
power cycle is `iolab guest power-cycle NAME`, known from the guest's state on this machine.
"""

from __future__ import annotations

import os
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from iolab.errors import IolabError
from iolab.kernels.hooks import parse as parse_hooks

DEFAULT_PATH = Path("/etc/iolab/fleet.toml")
CONTROLLER_HOOKS = ("power_cycle",)


@dataclass(frozen=True)
class ControllerConfig:
    path: Path | None
    hosts: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)

    def power_cycle(self, host: str) -> list[str] | None:
        """The argv that power-cycles `host`, or None when this controller has none."""
        argv = self.hosts.get(host, {}).get("power_cycle")
        if argv:
            return list(argv)
        return _local_guest(host)


def load(path: str | None = None) -> ControllerConfig:
    """fleet.toml from `path`, else $IOLAB_FLEET_CONFIG, else /etc/iolab/fleet.toml if
    it exists (none: no commands; a named file that is missing is an error)."""
    named = path or os.environ.get("IOLAB_FLEET_CONFIG")
    where = Path(named) if named else DEFAULT_PATH
    if not named and not where.exists():
        return ControllerConfig(None)
    try:
        raw = tomllib.loads(where.read_text())
    except OSError as exc:
        raise IolabError(f"{where}: cannot read the fleet config: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise IolabError(f"{where}: not a TOML fleet config: {exc}") from None
    unknown = sorted(set(raw) - {"hosts"})
    if unknown:
        raise IolabError(f"{where}: unknown key {unknown[0]!r} (known: hosts)")
    table = raw.get("hosts", {})
    if not isinstance(table, dict):
        raise IolabError(f"{where}: [hosts] is a table of [hosts.NAME] tables")
    hosts = {
        str(name): parse_hooks(entry, f"{where} [hosts.{name}]", CONTROLLER_HOOKS)
        for name, entry in table.items()
    }
    return ControllerConfig(where, hosts)


def _local_guest(name: str) -> list[str] | None:
    """`iolab guest power-cycle NAME` for a guest started on this machine, else None."""
    from iolab.guest.hosts import state_root

    if "/" in name or name in (".", "..") or not (state_root() / name / "state.json").exists():
        return None
    return [sys.executable, "-m", "iolab", "guest", "power-cycle", name]
